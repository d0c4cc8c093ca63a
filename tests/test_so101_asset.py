"""The offline SO-101 (``l2/assets/so101_build.py``, ``so101.py``) built from nothing and driven on the real simulator
(kit-less Newton, CPU): its joints, limits, start pose and joint-target tracking.

The simulator runs in its own process (this file run as a script), with the asset cache in a temporary folder and
every proxy pointing to a closed port, so the build and the spawn prove they need nothing from the network.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DT, DECIMATION = 1 / 120, 4
"""Physics step and steps per control step (30 Hz control, LeRobot's SO-101 rate)."""
HOLD_S, STEP_S = 1.0, 1.5
STEP = 0.3
"""rad each joint's target moves from the start pose (away from the nearer limit)."""
TRACK_TOL = 0.005
"""rad: |target - joint| allowed once settled (measured 1.5 s after the step: the arm below 1e-6, the gripper 1.4e-3,
still creeping on its soft 17.8 N m/rad spring; docs/so101.md)."""
SETTLE_TOL = 0.02 * STEP
SETTLE_BY = 0.5
"""s after the step from which every joint stays within ``SETTLE_TOL`` (measured: 0.23 s, the gripper 0.17 s)."""
EE_AT_START = (0.2191, 0.0081, 0.1997)
"""World position of the grasp point at Isaac Lab's start pose, base at the origin (measured)."""


def _simulate() -> dict:
    """Build the USD into ``$L2L3_CACHE``, spawn one SO-101, hold the start pose, then step every joint's target;
    what the tests check, as a dict."""
    import numpy as np
    import torch
    from isaaclab.app import launch_simulation
    from isaaclab.sim import SimulationCfg
    from isaaclab_newton.physics import MJWarpSolverCfg, NewtonCfg

    from l2.assets.so101_build import ensure_so101_usd

    usd = ensure_so101_usd()
    solver = MJWarpSolverCfg(integrator="implicitfast", njmax=100, nconmax=50, cone="elliptic", impratio=10.0)
    sim_cfg = SimulationCfg(dt=DT, device="cpu", physics=NewtonCfg(solver_cfg=solver, use_cuda_graph=False))
    with launch_simulation(sim_cfg, {"headless": True, "device": "cpu"}):
        import isaaclab.sim as sim_utils
        from isaaclab.scene import InteractiveScene, InteractiveSceneCfg
        from isaaclab.sim import SimulationContext
        from isaaclab.utils import configclass
        from isaaclab.utils.math import quat_apply

        from l2.assets import so101

        @configclass
        class SceneCfg(InteractiveSceneCfg):
            robot = so101.SO101_OFFLINE_CFG

        sim = SimulationContext(sim_cfg)
        scene = InteractiveScene(SceneCfg(num_envs=1, env_spacing=1.0))
        sim.reset()
        robot = scene["robot"]
        start = robot.data.default_joint_pos.torch.clone()
        robot.write_joint_position_to_sim_index(position=start)
        robot.write_joint_velocity_to_sim_index(velocity=torch.zeros_like(start))
        robot.reset()
        scene.update(0.0)
        ee = robot.body_names.index(so101.EE_BODY)
        pos, quat = robot.data.body_pos_w.torch[:, ee], robot.data.body_quat_w.torch[:, ee]
        ee_at_start = (pos + quat_apply(quat, torch.tensor([so101.EE_OFFSET_POS]))).tolist()[0]

        def run(target: torch.Tensor, seconds: float) -> np.ndarray:
            joints = []
            for _ in range(round(seconds / (DT * DECIMATION))):
                robot.actuators.target_command.set_position_index(value=target)
                for _ in range(DECIMATION):
                    scene.write_data_to_sim()
                    sim.step(render=False)
                    scene.update(DT)
                joints.append(robot.data.joint_pos.torch[0].tolist())
            return np.array(joints)

        soft = robot.data.soft_joint_pos_limits.torch[0].numpy()
        q0 = start[0].numpy()
        held = run(start, HOLD_S)
        goal = q0 + np.where(q0 + STEP < soft[:, 1], STEP, -STEP)
        stepped = run(torch.tensor(goal[None], dtype=torch.float32), STEP_S)
        error = np.abs(stepped - goal)
        outside = [np.nonzero(e > SETTLE_TOL)[0] for e in error.T]  # control step k ends at (k + 1) * DT * DECIMATION
        settle = [(int(o[-1]) + 2 if len(o) else 0) * DT * DECIMATION for o in outside]
        regex = {
            name: sim_utils.find_matching_prim_paths(getattr(so101, name).format(ENV_REGEX_NS="/World/envs/env_.*"))
            for name in ("ROOT_PRIM_REGEX", "EE_PRIM_REGEX")
        }
        return {
            "usd": str(usd),
            "joints": list(robot.joint_names),
            "bodies": list(robot.body_names),
            "limits": robot.data.joint_pos_limits.torch[0].tolist(),
            "start": q0.tolist(),
            "held": np.abs(held - q0).max(0).tolist(),
            "settle": settle,
            "error": error[-round(0.25 / (DT * DECIMATION)) :].max(0).tolist(),
            "finite": bool(np.isfinite(stepped).all()),
            "ee_at_start": ee_at_start,
            "regex": regex,
        }


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict:
    pytest.importorskip("isaaclab")
    cache = tmp_path_factory.mktemp("so101") / "cache"
    closed = "http://127.0.0.1:9"
    env = {k: v for k, v in os.environ.items() if k not in ("L2L3_SO101_USD", "NO_PROXY", "no_proxy")}
    env.update(L2L3_CACHE=str(cache), PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])))
    env.update({k: closed for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY")})
    proc = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["cache"] = cache
    return result


@pytest.mark.sim
def test_builds_from_nothing_into_the_cache_without_markers(run):
    from pxr import Usd

    usd = Path(run["usd"])
    assert usd.is_file() and usd.name == "so101.usdc" and usd.parent.parent == run["cache"] / "assets"
    stage = Usd.Stage.Open(str(usd))
    names = {p.GetName() for p in stage.Traverse()}
    assert {"base", "gripper", "moving_jaw_so101_v1"} <= names
    assert not names & {"baseframe", "gripperframe", "fixed_jaw_pad", "moving_jaw_pad"}


@pytest.mark.sim
def test_six_joints_in_order_with_the_mjcf_limits(run):
    from l2.assets.so101 import JOINT_NAMES
    from l2.assets.so101_build import mjcf_source

    assert run["joints"] == list(JOINT_NAMES)
    assert run["bodies"][0] == "base" and run["bodies"][-2:] == ["gripper", "moving_jaw_so101_v1"]
    mjcf = {j.get("name"): j.get("range") for j in ET.parse(mjcf_source()).iter("joint")}
    for name, (lower, upper) in zip(run["joints"], run["limits"], strict=True):
        want = [float(x) for x in mjcf[name].split()]
        assert lower == pytest.approx(want[0], abs=1e-4) and upper == pytest.approx(want[1], abs=1e-4), name


@pytest.mark.sim
def test_starts_and_stays_at_isaac_labs_start_pose(run):
    from l2.assets.so101 import INIT_JOINT_POS

    assert run["start"] == pytest.approx([INIT_JOINT_POS[j] for j in run["joints"]], abs=1e-6)
    assert max(run["held"]) < TRACK_TOL, run["held"]
    assert run["ee_at_start"] == pytest.approx(EE_AT_START, abs=0.002)


@pytest.mark.sim
def test_tracks_a_joint_target(run):
    assert run["finite"]
    assert max(run["error"]) < TRACK_TOL, dict(zip(run["joints"], run["error"], strict=True))
    assert max(run["settle"]) <= SETTLE_BY, dict(zip(run["joints"], run["settle"], strict=True))


@pytest.mark.sim
def test_prim_regexes_name_one_prim_each(run):
    assert [p.rsplit("/", 1)[-1] for p in run["regex"]["ROOT_PRIM_REGEX"]] == ["base"]
    assert [p.rsplit("/", 1)[-1] for p in run["regex"]["EE_PRIM_REGEX"]] == ["gripper"]


def test_missing_package_is_one_line(monkeypatch, tmp_path, capsys):
    from l2.assets import so101_build

    monkeypatch.setattr(so101_build, "MJCF_PACKAGE", "no_such_mjcf_package")
    monkeypatch.setenv("L2L3_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("L2L3_SO101_USD", raising=False)
    assert so101_build.main(["--force"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: no_such_mjcf_package is not installed"), err
    assert so101_build.MJCF_PIN in err and not (tmp_path / "cache" / "assets").exists()


if __name__ == "__main__":
    print(json.dumps(_simulate()), flush=True)
