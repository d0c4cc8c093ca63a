"""Teleop on the SO-101 (real simulator, kit-less, CPU): the shipped leader-arm trace replays into one valid demo
whose actions are the leader's joint positions, bit for bit, with both cameras."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from l2.format.validate import validate_file
from l2.teleop.trace import load_trace

REPO = Path(__file__).resolve().parents[1]
LEADER_TRACE = REPO / "config" / "teleop" / "so101_lift_cube_leader_trace.json"
TASK = "L2-Lift-Cube-SO101-JointPos-Teleop"


def test_the_shipped_leader_trace_is_a_joint_trace_of_the_so101_task():
    trace = load_trace(LEADER_TRACE)
    assert (trace.task, trace.control, trace.command_dim) == (TASK, "joint", 6)
    assert trace.events[0] == (0, "start") and trace.events[-1][1] == "quit"


@pytest.mark.sim
def test_a_leader_arm_trace_replays_into_one_demo_of_its_joint_positions(tmp_path):
    out = tmp_path / "teleop_lift_cube_so101.hdf5"
    proc = subprocess.run(
        [sys.executable, str(REPO / "l2/teleop/run.py"), "--task", TASK, "--teleop_device", "replay"]
        + ["--trace", str(LEADER_TRACE), "--num_demos", "1", "--output", str(out)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert validate_file(out, expect_obs=("front", "wrist")).ok
    trace = load_trace(LEADER_TRACE)
    with h5py.File(out, "r") as f:
        demo = f["data/demo_0"]
        assert bool(demo.attrs["success"]) and demo.attrs["seed"] == trace.seed
        actions = demo["actions"][()]
        assert actions.shape == (len(trace.commands), 6)
        assert np.array_equal(actions, np.float32(trace.commands))  # the follower is sent what the leader sent
        assert demo["obs/front"].shape[1:] == demo["obs/wrist"].shape[1:] == (224, 224, 3)
