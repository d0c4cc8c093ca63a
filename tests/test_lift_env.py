"""The lift-cube task on the real simulator (kit-less Newton, CPU) and Isaac Lab's recorder through our wiring."""

from __future__ import annotations

from pathlib import Path

import h5py
import pytest

pytest.importorskip("isaaclab")

import torch  # noqa: E402

from l2.format.validate import validate_file  # noqa: E402
from l2.lift.lift_env_cfg import SUCCESS_HEIGHT  # noqa: E402
from l2.recording import sim  # noqa: E402
from l2.recording.handler import configure_recording  # noqa: E402

pytestmark = pytest.mark.sim

REPO = Path(__file__).resolve().parents[1]
TOP_DOWN = (1.0, 0.0, 0.0, 0.0)
# Hand-written pick for env 0: (phase, steps, height of the end effector above the cube centre, gripper).
PICK = [("above", 40, 0.10, 1.0), ("descend", 40, 0.0, 1.0), ("close", 20, 0.0, -1.0), ("lift", 60, 0.18, -1.0)]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """Two envs: env 0 lifts the cube with hand-written IK targets, env 1 idles and is reset by hand."""
    from isaaclab.managers import DatasetExportMode

    out = tmp_path_factory.mktemp("rec") / "scripted_lift_cube.hdf5"
    # presets=no_cameras: the state-only task still records and converts as it did before the cameras
    env_cfg = sim.load_env_cfg(sim.DEFAULT_TASK, "cpu", num_envs=2, seed=7, overrides=["presets=no_cameras"])
    env_cfg.events.reset_object_position.params["pose_range"]["yaw"] = (0.0, 0.0)
    configure_recording(env_cfg, out, sim.DEFAULT_TASK)
    env_cfg.recorders.dataset_export_mode = DatasetExportMode.EXPORT_ALL
    result = {"path": out}
    with sim.make_env(env_cfg, sim.DEFAULT_TASK) as env:
        obs, _ = env.reset()
        result["obs"] = {k: tuple(v.shape) for k, v in obs["policy"].items()}
        result["groups"] = sorted(obs)
        cube0 = obs["policy"]["object_position"][0].clone()
        ee = env.scene["ee_frame"].data
        idle = None
        done0 = False
        for _, steps, dz, grip in PICK:
            for _ in range(steps):
                target = torch.cat([cube0 + torch.tensor([0.0, 0.0, dz]), torch.tensor(TOP_DOWN), torch.tensor([grip])])
                if idle is None:  # hold env 1 where it is (its pose is known after the first step)
                    idle = target.clone()
                    idle[-1] = 1.0
                env.step(torch.stack([target, idle]))
                if env.termination_manager.dones[0]:
                    done0 = True
                    break
                idle = torch.cat([ee.target_pos_source.torch[1, 0], ee.target_quat_source.torch[1, 0], torch.ones(1)])
            if done0:
                break
        result["env0_done"] = done0
        result["env1_done"] = bool(env.termination_manager.dones[1])
        env.reset(env_ids=torch.tensor([1]))  # ends env 1's idle episode: exported with success=False
        from isaaclab_newton.physics import NewtonManager

        opt = NewtonManager._solver.mj_model.opt  # copied: the model goes with the env
        result["mj_opt"] = {k: int(getattr(opt, k)) for k in ("jacobian", "cone", "integrator")}
        result["mj_opt"]["impratio"] = float(opt.impratio)
    return result


def test_observation_group_is_a_dict_of_named_terms(recorded):
    assert recorded["groups"] == ["policy"]  # no camera group with presets=no_cameras
    assert recorded["obs"] == {
        "joint_pos": (2, 9),
        "joint_vel": (2, 9),
        "object_position": (2, 3),
        "target_object_position": (2, 7),
        "actions": (2, 8),
        "object_orientation": (2, 4),
        "ee_position": (2, 3),
        "ee_orientation": (2, 4),
    }


def test_success_term_is_recorded_by_isaac_labs_recorder(recorded):
    assert recorded["env0_done"], "the hand-written pick did not lift the cube"
    assert not recorded["env1_done"]
    report = validate_file(recorded["path"])
    assert report.ok, [str(v) for v in report.violations]
    with h5py.File(recorded["path"]) as f:
        demos = {name: f["data"][name] for name in f["data"]}
        assert len(demos) == 2
        by_success = {bool(d.attrs["success"]): d for d in demos.values()}
        assert set(by_success) == {True, False}
        lifted = by_success[True]
        assert lifted["obs/object_position"][-1, 2] >= SUCCESS_HEIGHT - 0.02  # obs are pre-step: last row is just below
        assert by_success[False]["obs/object_position"][:, 2].max() < 0.05
        for d in demos.values():
            assert d.attrs["seed"] == 7
            assert d.attrs["num_samples"] == len(d["actions"]) == len(d["obs/joint_pos"])
            assert "initial_state" in d
        assert report.env_name == sim.DEFAULT_TASK


def test_state_only_file_converts_with_the_mapping_minus_its_cameras(recorded, tmp_path):
    from l3_fixtures import state_only_config

    from l3.convert import convert
    from l3.validate import validate

    with h5py.File(recorded["path"]) as f:
        assert all("table_cam" not in f[f"data/{n}/obs"] for n in f["data"])
    out = tmp_path / "ds"
    config = state_only_config(tmp_path, REPO / "config" / "lift_cube.yaml")
    summary = convert([str(recorded["path"])], out, config=config, log=lambda m: None)
    assert validate(out) == [] and summary.episodes == 1  # the successful demo; the idle one is dropped
    assert not (out / "videos").exists()


def test_the_solver_gets_the_sparse_jacobian_and_the_cfg_s_options(recorded):
    """The fields of l2.lift.physics.MJWarpSolverCfg reach MuJoCo (Isaac Lab forwards what SolverMuJoCo takes): were
    ``jacobian`` dropped, the dense path would cost the plain scene half its rate and the variety scene 3/4."""
    import mujoco

    opt = recorded["mj_opt"]
    assert opt["jacobian"] == mujoco.mjtJacobian.mjJAC_SPARSE
    assert opt["cone"] == mujoco.mjtCone.mjCONE_ELLIPTIC and opt["impratio"] == 10.0
    assert opt["integrator"] == mujoco.mjtIntegrator.mjINT_IMPLICITFAST


def test_physx_preset_is_selectable_without_editing_code():
    from isaaclab.physics import PhysxAutoCfg
    from isaaclab_newton.physics import NewtonCfg

    default = sim.load_env_cfg(sim.DEFAULT_TASK, "cpu", 1, seed=0)
    physx = sim.load_env_cfg(sim.DEFAULT_TASK, "cpu", 1, seed=0, overrides=["physics=physx"])
    assert isinstance(default.sim.physics, NewtonCfg)
    assert isinstance(physx.sim.physics, PhysxAutoCfg)


def test_official_franka_is_selectable_by_preset():
    cfg = sim.load_env_cfg(sim.DEFAULT_TASK, "cpu", 1, seed=0, overrides=["presets=franka_nucleus"])
    assert cfg.scene.robot.spawn.usd_path.endswith("franka_panda.usda")
