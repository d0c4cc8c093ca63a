"""RL source on a task we did not write (Isaac Lab's SO-101 stack): a checkpoint trained for one PPO iteration
is rolled out and recorded; the recorder splits its flat input back into the task's named terms and writes the
joint targets its action set. This proves the recorder, not the policy: no episode is expected to succeed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

pytest.importorskip("isaaclab")

from l2.format.validate import validate_file  # noqa: E402

pytestmark = pytest.mark.sim

REPO = Path(__file__).resolve().parents[1]
RL_TASK = "L2-Stack-Cube-SO101-RL-v0"
STACK_POLICY_TERMS = {  # Isaac Lab's stack task's policy group, in its order
    "actions": 6,
    "joint_pos": 6,
    "joint_vel": 6,
    "object": 39,
    "cube_positions": 9,
    "cube_orientations": 12,
    "eef_pos": 3,
    "eef_quat": 4,
    "gripper_pos": 1,
}
START_ARM = np.array([0.0, -0.6, 0.8, 0.6, 0.0], dtype=np.float32)  # the task's start joints (rad), its offset
ARM_SCALE = np.float32(0.5)
JAW_OPEN = np.float32(1.745)


def _python(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / script), *args], capture_output=True, text=True, timeout=900, cwd=REPO
    )


def test_a_briefly_trained_policy_s_rollout_is_recorded_with_the_task_s_terms_and_joint_targets(tmp_path):
    train = _python(
        "l2/rl/train.py", "--task", RL_TASK, "--num_envs", "4", "--max_iterations", "1",
        "--log_root", str(tmp_path / "logs"), "--run_name", "stack", "env.episode_length_s=2",
    )  # fmt: skip
    assert train.returncode == 0, train.stdout[-3000:] + train.stderr[-3000:]
    checkpoint = next((tmp_path / "logs" / "stack").glob("model_*.pt"))

    output = tmp_path / "rl_stack.hdf5"
    rollout = _python(
        "l2/rl/rollout.py", "--task", RL_TASK, "--checkpoint", str(checkpoint), "--num_envs", "2",
        "--episodes", "2", "--keep-failed", "--workers", "1", "--output", str(output),
        "presets=no_cameras", "env.episode_length_s=1",
    )  # fmt: skip
    failed = tmp_path / "rl_stack_failed.hdf5"
    assert failed.exists(), rollout.stdout[-3000:] + rollout.stderr[-3000:]
    report = validate_file(failed)
    assert report.ok, report.errors

    with h5py.File(failed) as f:
        env_args = json.loads(f["data"].attrs["env_args"])
        assert env_args["env_name"] == RL_TASK and env_args["action_space"] == "joint_position"
        demos = list(f["data"])
        assert len(demos) == 2
        for name in demos:
            demo = f["data"][name]
            assert {k: v.shape[1] for k, v in demo["obs"].items()} == STACK_POLICY_TERMS
            policy = demo["policy_actions"][()]
            actions = demo["actions"][()]
            # the joint targets the task's own action set: the start pose + 0.5 a for the arm, the binary jaw
            np.testing.assert_allclose(actions[:, :5], START_ARM + ARM_SCALE * policy[:, :5], atol=1e-6)
            np.testing.assert_array_equal(actions[:, 5], np.where(policy[:, 5] < 0, 0.0, JAW_OPEN).astype(np.float32))
