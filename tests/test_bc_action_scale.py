"""BC on joint targets: robomimic's BC can only predict actions in [-1, 1] (tanh), so actions outside are scaled into
it for training and back when served (``l2/bc/action_scale.py``); the SO-101's BC run end to end in small."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from l2.bc import action_scale

REPO = Path(__file__).resolve().parents[1]


def _l2_file(path: Path, actions: list[np.ndarray]) -> None:
    with h5py.File(path, "w") as f:
        for i, a in enumerate(actions):
            f.create_dataset(f"data/demo_{i}/actions", data=a.astype(np.float32))
        f.create_dataset("mask/train_2", data=np.array([b"demo_0", b"demo_1"]))


def test_actions_inside_one_are_left_alone_and_joint_targets_are_scaled_onto_the_margin(tmp_path):
    inside = tmp_path / "inside.hdf5"
    _l2_file(inside, [np.full((3, 2), 0.5), np.full((3, 2), -1.0)])
    assert action_scale.fit(inside, ["demo_0", "demo_1"]) is None  # the Franka's recipe is unchanged

    src, copy = tmp_path / "joints.hdf5", tmp_path / "train.hdf5"
    joints = [np.array([[1.6, 0.1], [1.0, 0.1]]), np.array([[1.2, 1.0], [-0.4, 1.0]]), np.array([[9.0, 9.0]])]
    _l2_file(src, joints)
    stats = action_scale.fit(src, ["demo_0", "demo_1"])  # demo_2 is not in the training split
    action_scale.write_training_copy(src, copy, stats)
    with h5py.File(copy) as f:
        scaled = np.concatenate([f[f"data/demo_{i}/actions"][()] for i in range(2)])
        assert f["mask/train_2"].shape == (2,)  # the masks come along
    np.testing.assert_allclose(scaled.min(0), -action_scale.LIMIT, atol=1e-6)
    np.testing.assert_allclose(scaled.max(0), action_scale.LIMIT, atol=1e-6)
    np.testing.assert_allclose(action_scale.unnormalize(scaled, stats), np.concatenate(joints[:2]), atol=1e-6)
    with h5py.File(src) as f:  # the user's file is untouched
        np.testing.assert_array_equal(f["data/demo_0/actions"][()], joints[0].astype(np.float32))


SERVE_CHECK = """
import json, sys
import h5py, numpy as np
from l2.bc.robomimic_policy import RobomimicPolicy
from l3.config_file import load_mapping
policy = RobomimicPolicy(sys.argv[1], load_mapping(sys.argv[2]))
with h5py.File(sys.argv[3]) as f:
    demo = f["data/demo_0"]
    state = {k: demo[f"obs/{k}"][()][:, None, :] for k in policy.obs_keys}
    recorded = demo["actions"][()]
action, _ = policy.get_action({"state": state})
served = np.concatenate([action["single_arm"][:, 0], action["gripper"][:, 0]], axis=-1)
print(json.dumps({"error": float(np.abs(served - recorded).mean()), "scaled": policy.action_scale is not None}))
"""


@pytest.mark.sim
@pytest.mark.robomimic
def test_so101_bc_trains_on_scaled_joint_targets_and_serves_them_in_radians(tmp_path):
    from conftest import robomimic_python

    data, out = tmp_path / "scripted_so101_lift_cube.hdf5", tmp_path / "logs"
    python = robomimic_python()
    proc = subprocess.run(
        [sys.executable, "-m", "l2.bc.train", "--task", "L2-Lift-Cube-SO101-JointPos", "--data", str(data),
         "--num_demos", "8", "--workers", "1", "--epochs", "2", "--episodes", "2", "--checkpoint-episodes", "0",
         "--output", str(out), "--name", "so101", "--robomimic-python", python],
        capture_output=True, text=True, timeout=1800, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    run = out / "so101"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["actions_scaled"] and summary["task"] == "L2-Lift-Cube-SO101-JointPos"
    report = json.loads((run / "eval_epoch_2.json").read_text())
    assert report["task"] == "L2-Lift-Cube-SO101-JointPos" and report["config"].endswith("so101_lift_cube_lowdim.yaml")
    with h5py.File(run / "train_data.hdf5") as f:
        assert np.abs(f["data/demo_0/actions"][()]).max() <= action_scale.LIMIT + 1e-6
    # Served in radians: after two epochs the clone's joint targets on a training demo are within a few hundredths
    # of a radian of the recorded ones; scaled values (the wrist near 1.5 rad would read about 0.9) would be far off.
    check = subprocess.run(
        [python, "-c", SERVE_CHECK, str(run / "models" / "model_epoch_2.pth"),
         str(REPO / "config" / "robomimic" / "so101_lift_cube_lowdim.yaml"), str(data)],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )  # fmt: skip
    assert check.returncode == 0, check.stderr[-3000:]
    result = json.loads(check.stdout.strip().splitlines()[-1])
    assert result["scaled"] and result["error"] < 0.1, result
