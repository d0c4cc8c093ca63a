"""RL source: PPO smoke training, rollout recording, obs splitting and the equivalent IK-absolute action."""

from __future__ import annotations

import csv
import math
import re
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

pytest.importorskip("isaaclab")

import torch  # noqa: E402

from l2.format.schema import LIFT_CAMERA_TERMS  # noqa: E402
from l2.format.validate import validate_file  # noqa: E402
from l2.recording import sim  # noqa: E402

pytestmark = pytest.mark.sim

REPO = Path(__file__).resolve().parents[1]
RL_TASK = "L2-Lift-Cube-Franka-JointPos-Rel"
LIFT_OBS = {  # the layout every source writes (see test_lift_env.py)
    "joint_pos": (9,),
    "joint_vel": (9,),
    "object_position": (3,),
    "target_object_position": (7,),
    "actions": (8,),
    "object_orientation": (4,),
    "ee_position": (3,),
    "ee_orientation": (4,),
}
RL_OBS = LIFT_OBS  # the RL policy sees the base task's terms, concatenated (l2/lift/variants.py)
CUBE_PATH_MEAN_TOL = 0.015  # m: the cube's path in the IK-absolute replay vs. the RL run (measured 2-8 mm)


def _python(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / script), *args], capture_output=True, text=True, timeout=900, cwd=REPO
    )


@pytest.fixture(scope="module")
def warm_start(tmp_path_factory) -> tuple[Path, str]:
    """Two rounds of l2/rl/pretrain.py on 4 envs: the expert's episodes, then one DAgger round."""
    out = tmp_path_factory.mktemp("rl_bc") / "model_bc.pt"
    proc = _python(
        "l2/rl/pretrain.py", "--num_envs", "4", "--rounds", "2", "--steps", "130", "--epochs", "2", "--output", str(out)
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out, proc.stdout


@pytest.fixture(scope="module")
def checkpoint(warm_start, tmp_path_factory) -> Path:
    """PPO smoke run from the warm start: one critic warm-up iteration (actor frozen), one PPO iteration."""
    logs = tmp_path_factory.mktemp("rl_logs")
    proc = _python(
        "l2/rl/train.py",
        "--num_envs",
        "2",
        "--max_iterations",
        "2",
        "--init",
        str(warm_start[0]),
        "--critic_warmup",
        "1",
        "--log_root",
        str(logs),
        "--run_name",
        "smoke",
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (logs / "smoke" / "params" / "agent.yaml").exists() and (logs / "smoke" / "params" / "train.yaml").exists()
    assert {p.name for p in (logs / "smoke").glob("model_*.pt")} == {"model_0.pt", "model_1.pt"}
    return logs / "smoke"


@pytest.fixture(scope="module")
def rollout_files(tmp_path_factory) -> tuple[Path, Path, str]:
    """The shipped policy, evaluated on one episode per env (4 envs, seeded), failures kept."""
    out = tmp_path_factory.mktemp("rl") / "rl_lift_cube.hdf5"
    proc = _python(
        "l2/rl/rollout.py", "--num_envs", "4", "--episodes", "4", "--seed", "0", "--keep-failed", "--output", str(out)
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out, out.with_name("rl_lift_cube_failed.hdf5"), proc.stdout


def _weights(path: Path) -> dict[str, torch.Tensor]:
    state = torch.load(path, weights_only=False, map_location="cpu")["actor_state_dict"]
    return {k: v for k, v in state.items() if not k.startswith("obs_normalizer")}


def test_scripted_expert_lifts_in_joint_space_and_warm_starts_the_actor(warm_start):
    path, stdout = warm_start
    with path.with_suffix(".csv").open() as f:
        rounds = list(csv.DictReader(f))
    assert len(rounds) == 2 and int(rounds[1]["samples"]) == 2 * 130 * 4
    # The state machine, acting through one IK step per control step in joint space, lifts every cube.
    assert int(rounds[0]["expert_episodes"]) == 4 and int(rounds[0]["expert_successes"]) == 4
    state = torch.load(path, weights_only=False, map_location="cpu")
    assert state["infos"]["layout"] == {
        "observation": [[k, math.prod(v)] for k, v in RL_OBS.items()],
        "action": [["arm_action", 7], ["gripper_action", 1]],
    }
    assert torch.allclose(state["actor_state_dict"]["distribution.std_param"], torch.tensor(0.05))


def test_ppo_from_the_warm_start_first_fits_the_critic_with_the_actor_frozen(warm_start, checkpoint):
    start, after_warmup, after_ppo = (
        _weights(warm_start[0]),
        _weights(checkpoint / "model_0.pt"),
        _weights(checkpoint / "model_1.pt"),
    )
    assert all(torch.equal(start[k], after_warmup[k]) for k in start)
    assert not all(torch.equal(start[k], after_ppo[k]) for k in start)
    first = after_ppo["mlp.0.weight"]
    assert first.shape[1] == sum(math.prod(s) for s in RL_OBS.values())  # the state terms, no image
    plot = subprocess.run(
        [sys.executable, "-m", "l2.rl.plot", str(checkpoint)], capture_output=True, text=True, timeout=300, cwd=REPO
    )
    assert plot.returncode == 0, plot.stderr
    png = checkpoint / "learning_curve.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_shipped_policy_lifts_the_cube(rollout_files):
    main, _, stdout = rollout_files
    rate = re.search(r"success rate\s+(\d+)/(\d+) episodes", stdout)
    assert rate and int(rate.group(2)) == 4, stdout[-2000:]
    assert int(rate.group(1)) >= 3, stdout[-2000:]  # seeded; the policy succeeds in >= 80 % over 64 episodes
    assert validate_file(main).episodes >= int(rate.group(1))


def test_rollout_files_validate_and_match_the_scripted_layout(rollout_files):
    main, failed, stdout = rollout_files
    assert "validator        valid" in stdout
    for path in (main, failed) if failed.exists() else (main,):
        report = validate_file(path)
        assert report.ok, [str(v) for v in report.violations]
        assert report.env_name == RL_TASK
    with h5py.File(main) as f:
        demo = f["data/demo_0"]
        T = demo.attrs["num_samples"]
        assert demo.attrs["success"]
        assert set(demo["obs"]) == {*RL_OBS, *LIFT_CAMERA_TERMS}  # the scripted layout
        for cam in LIFT_CAMERA_TERMS:  # the rollout records the cameras like the other sources
            assert demo[f"obs/{cam}"].shape == (T, 224, 224, 3) and demo[f"obs/{cam}"].dtype == np.uint8
        for term, shape in RL_OBS.items():
            assert demo[f"obs/{term}"].shape == (T, *shape) and demo[f"obs/{term}"].dtype == np.float32
        assert demo["actions"].shape == (T, 8) and demo["actions"].dtype == np.float32
        assert demo["policy_actions"].shape == (T, 8)
        assert set(np.unique(demo["actions"][:, 7])) <= {-1.0, 1.0}
        # obs/actions is the previous step's policy action (Isaac Lab's last_action term).
        np.testing.assert_array_equal(demo["obs/actions"][1:], demo["policy_actions"][:-1])


def test_a_checkpoint_of_another_layout_is_refused_in_one_line(tmp_path):
    from l2.rl.checkpoint import SHIPPED_MODEL

    state = torch.load(SHIPPED_MODEL, weights_only=False, map_location="cpu")
    state["infos"] = None  # a plain rsl_rl checkpoint: widths from the weights
    actor = state["actor_state_dict"]
    actor["mlp.0.weight"] = torch.zeros(actor["mlp.0.weight"].shape[0], 39)
    bad = tmp_path / "model_39.pt"
    torch.save(state, bad)
    out = tmp_path / "rl.hdf5"
    proc = _python(
        "l2/rl/rollout.py", "--checkpoint", str(bad), "--num_envs", "1", "--output", str(out), "presets=no_cameras"
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines[-1] == (
        f"error: {bad}: checkpoint was trained on observation 39; action 8; the env has observation 47 = joint_pos 9 "
        "+ joint_vel 9 + object_position 3 + target_object_position 7 + actions 8 + object_orientation 4 + "
        "ee_position 3 + ee_orientation 4; action 8 = arm_action 7 + gripper_action 1"
    ), proc.stderr[-2000:]
    assert not out.exists()


def test_split_observation_equals_the_unconcatenated_terms_bit_exact():
    from l2.recording.handler import configure_recording  # noqa: F401  (same import path as the runners)
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
            assert list(split) == list(separate) == list(RL_OBS)
            for name in RL_OBS:
                assert torch.equal(split[name], separate[name]), name

        env.cfg.observations.policy.concatenate_dim = 0
        with pytest.raises(ValueError, match="concatenate_dim"):
            PolicySplitObsRecorder(PolicySplitObsRecorderCfg(), env).record_pre_step()
        env.cfg.observations.policy.concatenate_dim = -1
        env.cfg.observations.policy.history_order = "time"
        env.cfg.observations.policy.history_length = 2
        with pytest.raises(ValueError, match="history_order"):
            PolicySplitObsRecorder(PolicySplitObsRecorderCfg(), env).record_pre_step()


def test_equivalent_actions_replayed_in_the_ik_absolute_env_lift_the_cube_along_the_same_path(rollout_files):
    """The RL file's ``actions`` drive the base IK-absolute task (``python -m l2.replay`` picks it for RL
    files): from the demo's ``initial_state`` they lift the cube too, and move it along the path the RL
    run moved it."""
    from l2.replay import read_demos, replay_demos

    main, _, _ = rollout_files
    env_name, task, demos = read_demos(main, [0])
    assert (env_name, task) == (RL_TASK, sim.DEFAULT_TASK)
    (result,), _ = replay_demos(demos, task)
    print(result.line())
    assert result.reproduced
    assert result.cube_error_mean < CUBE_PATH_MEAN_TOL
