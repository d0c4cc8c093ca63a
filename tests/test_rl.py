"""RL source: PPO smoke training, rollout recording, obs splitting and the equivalent IK-absolute action."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

pytest.importorskip("isaaclab")

import torch  # noqa: E402

from l2 import sim  # noqa: E402
from l2.schema import LIFT_CAMERA_TERMS  # noqa: E402
from l2.validate import validate_file  # noqa: E402

pytestmark = pytest.mark.sim

REPO = Path(__file__).resolve().parents[1]
RL_TASK = "L2-Lift-Cube-Franka-RL"
LIFT_OBS = {  # the layout every source writes (see test_lift_env.py)
    "joint_pos": (9,),
    "joint_vel": (9,),
    "object_position": (3,),
    "target_object_position": (7,),
    "actions": (8,),
}
EE_POS_TOL = 0.03  # m: IK-absolute replay vs. the RL run, worst step (the first steps lag a fast start)
EE_POS_MEAN_TOL = 0.008  # m: mean over the episode


def _python(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / script), *args], capture_output=True, text=True, timeout=900, cwd=REPO
    )


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    logs = tmp_path_factory.mktemp("rl_logs")
    proc = _python("l2/rl/train.py", "--num_envs", "2", "--max_iterations", "1", "--log_root", str(logs), "--run_name", "smoke")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    checkpoints = list((logs / "smoke").glob("model_*.pt"))
    assert checkpoints and (logs / "smoke" / "params" / "agent.yaml").exists()
    return checkpoints[0]


@pytest.fixture(scope="module")
def rollout_files(checkpoint, tmp_path_factory) -> tuple[Path, Path, str]:
    out = tmp_path_factory.mktemp("rl") / "rl_lift_cube.hdf5"
    proc = _python(
        "l2/rl/rollout.py", "--checkpoint", str(checkpoint), "--num_envs", "2", "--num_demos", "1",
        "--max_attempts", "2", "--keep-failed", "--output", str(out), "env.episode_length_s=1.5",
    )
    # An untrained policy does not lift the cube on the CPU: 0 of 1 demos -> exit 1, failures kept.
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
    return out, out.with_name("rl_lift_cube_failed.hdf5"), proc.stdout


def test_training_smoke_run_writes_a_checkpoint_of_a_state_only_policy(checkpoint):
    state = torch.load(checkpoint, weights_only=False, map_location="cpu")
    weights = state.get("actor_state_dict") or state["model_state_dict"]
    first = next(w for name, w in weights.items() if name.endswith("weight") and w.ndim == 2)
    assert first.shape[1] == sum(math.prod(s) for s in LIFT_OBS.values())  # the state terms, no image


def test_rollout_files_validate_and_match_the_scripted_layout(rollout_files):
    main, failed, stdout = rollout_files
    assert "success rate" in stdout and "validator        valid" in stdout
    for path in (main, failed):
        report = validate_file(path)
        assert report.ok, [str(v) for v in report.violations]
        assert report.env_name == RL_TASK
    assert validate_file(failed).episodes == 2 - validate_file(main).episodes
    with h5py.File(failed) as f:
        demo = f["data/demo_0"]
        T = demo.attrs["num_samples"]
        assert {k: f"data/demo_0/obs/{k}" in f for k in LIFT_OBS} == {k: True for k in LIFT_OBS}
        for cam in LIFT_CAMERA_TERMS:  # the rollout records the cameras like the other sources
            assert demo[f"obs/{cam}"].shape == (T, 224, 224, 3) and demo[f"obs/{cam}"].dtype == np.uint8
        for term, shape in LIFT_OBS.items():
            assert demo[f"obs/{term}"].shape == (T, *shape) and demo[f"obs/{term}"].dtype == np.float32
        assert demo["actions"].shape == (T, 8) and demo["actions"].dtype == np.float32
        assert demo["policy_actions"].shape == (T, 8)
        assert set(np.unique(demo["actions"][:, 7])) <= {-1.0, 1.0}
        # obs/actions is the previous step's policy action (Isaac Lab's last_action term).
        np.testing.assert_array_equal(demo["obs/actions"][1:], demo["policy_actions"][:-1])


def test_split_observation_equals_the_unconcatenated_terms_bit_exact():
    from l2.recording import configure_recording  # noqa: F401  (same import path as the runners)
    from l2.rl.recorders import PolicySplitObsRecorder, PolicySplitObsRecorderCfg

    env_cfg = sim.load_env_cfg(RL_TASK, "cpu", num_envs=2, seed=3, overrides=["presets=no_cameras"])
    with sim.make_env(env_cfg, RL_TASK) as env:
        recorder = PolicySplitObsRecorder(PolicySplitObsRecorderCfg(), env)
        env.reset()
        manager = env.observation_manager
        generator = torch.Generator().manual_seed(0)
        for _ in range(5):
            env.step(torch.rand(2, 8, generator=generator) * 2 - 1)
            key, split = recorder.record_pre_step()
            assert key == "obs" and env.obs_buf["policy"].ndim == 2
            manager._group_obs_concatenate["policy"] = False  # the same terms, uncompressed, for the same state
            try:
                separate = manager.compute_group("policy")
            finally:
                manager._group_obs_concatenate["policy"] = True
            assert list(split) == list(separate) == list(LIFT_OBS)
            for name in LIFT_OBS:
                assert torch.equal(split[name], separate[name]), name

        env.cfg.observations.policy.concatenate_dim = 0
        with pytest.raises(ValueError, match="concatenate_dim"):
            PolicySplitObsRecorder(PolicySplitObsRecorderCfg(), env).record_pre_step()
        env.cfg.observations.policy.concatenate_dim = -1
        env.cfg.observations.policy.history_order = "time"
        env.cfg.observations.policy.history_length = 2
        with pytest.raises(ValueError, match="history_order"):
            PolicySplitObsRecorder(PolicySplitObsRecorderCfg(), env).record_pre_step()


def _to_tensors(group: h5py.Group):
    return {k: _to_tensors(v) if isinstance(v, h5py.Group) else torch.from_numpy(v[()]) for k, v in group.items()}


def test_equivalent_actions_drive_the_ik_absolute_env_along_the_rl_trajectory(rollout_files):
    _, failed, _ = rollout_files
    with h5py.File(failed) as f:
        demo = f["data/demo_0"]
        initial_state = _to_tensors(demo["initial_state"])
        actions = torch.from_numpy(demo["actions"][()])
    env_cfg = sim.load_env_cfg(sim.DEFAULT_TASK, "cpu", num_envs=1, seed=3, overrides=["presets=no_cameras"])
    errors = []
    with sim.make_env(env_cfg, sim.DEFAULT_TASK) as env:
        env.reset()
        env.reset_to(initial_state, env_ids=torch.tensor([0]), is_relative=True)
        ee = env.scene["ee_frame"].data
        for action in actions:
            env.step(action.unsqueeze(0))
            errors.append(torch.linalg.vector_norm(ee.target_pos_source.torch[0, 0] - action[:3]).item())
            if env.termination_manager.dones[0]:
                break
    errors = np.array(errors)
    print(f"IK-abs replay of {len(errors)} RL steps: mean {errors.mean() * 1000:.1f} mm, max {errors.max() * 1000:.1f} mm")
    assert errors.mean() < EE_POS_MEAN_TOL and errors.max() < EE_POS_TOL
