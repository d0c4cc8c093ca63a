"""Teleop on a task this package did not write, Isaac Lab's SO-101 cube stack (real simulator, kit-less, CPU): the
shipped keyboard and leader-arm traces replay into one saved, successful, valid demo each; a task that lacks what a
session needs is refused in one line before the simulator starts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from conftest import refused_in_one_line

from l2.format.validate import validate_file
from l2.teleop.trace import load_trace

REPO = Path(__file__).resolve().parents[1]
RUN = REPO / "l2" / "teleop" / "run.py"
TASK = "L2-Stack-Cube-SO101-Teleop-v0"
KEYBOARD_TRACE = REPO / "config" / "teleop" / "so101_stack_keyboard_trace.json"
LEADER_TRACE = REPO / "config" / "teleop" / "so101_stack_leader_trace.json"
NO_CAMERAS = "presets=no_cameras"


def _run(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(RUN), *args], capture_output=True, text=True, timeout=timeout, cwd=REPO)


# -- the shipped traces ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "control", "dim"), [(KEYBOARD_TRACE, "delta", 7), (LEADER_TRACE, "joint", 6)])
def test_the_shipped_stack_traces_are_traces_of_the_stack_teleop_task(path, control, dim):
    trace = load_trace(path)
    assert (trace.task, trace.control, trace.command_dim, trace.presets) == (TASK, control, dim, [])
    assert trace.events[0] == (0, "start") and trace.events[-1][1] == "quit"


@pytest.mark.sim
@pytest.mark.parametrize("path", [KEYBOARD_TRACE, LEADER_TRACE], ids=["keyboard", "leader"])
def test_a_stack_trace_replays_into_one_successful_valid_demo(path, tmp_path):
    out = tmp_path / "teleop_stack_cube_so101.hdf5"
    proc = _run("--task", TASK, "--teleop_device", "replay", "--trace", str(path), "--output", str(out), NO_CAMERAS)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "saved demo_0:" in proc.stdout
    report = validate_file(out)
    assert report.ok, [str(v) for v in report.violations]
    assert report.episodes == report.successes == 1 and report.env_name == TASK
    trace = load_trace(path)
    with h5py.File(out, "r") as f:
        demo = f["data/demo_0"]
        assert bool(demo.attrs["success"]) and demo.attrs["seed"] == trace.seed
        assert demo.attrs["instruction"].startswith("Stack the red cube on the blue cube")
        actions = demo["actions"][()]
        assert actions.shape[1] == 6  # the joint variant's six joint targets, whatever the device gave
        if trace.control == "joint":  # the follower is sent what the leader sent, bit for bit
            assert np.array_equal(actions, np.float32(trace.commands[: len(actions)]))
        cubes = demo["obs/cube_positions"][-1].reshape(3, 3)
        assert np.all(np.diff(cubes[:, 2]) > 0.04)  # blue, red, green, one on the other


# -- what a session needs, refused before the simulator starts -------------------------------------------


def _refused(tmp_path, *args: str, naming: tuple[str, ...]) -> None:
    out = tmp_path / "refused.hdf5"
    proc = _run("--output", str(out), *args, NO_CAMERAS, timeout=300)  # the overrides last, together
    refused_in_one_line(proc, *naming)
    assert "Completed setting up the environment" not in proc.stdout + proc.stderr  # no simulator was started
    assert not list(tmp_path.iterdir()), list(tmp_path.iterdir())


def test_a_task_without_a_success_term_is_refused(tmp_path):
    _refused(
        tmp_path,
        *("--task", TASK, "--teleop_device", "replay", "--trace", str(KEYBOARD_TRACE), "env.success_term=null"),
        naming=(TASK, "no success term"),
    )


def test_keyboard_steps_on_a_joint_task_without_ik_arm_action_are_refused(tmp_path):
    _refused(
        tmp_path,
        "--task",
        "L2-Stack-Cube-SO101-v0",
        "--teleop_device",
        "keyboard",
        naming=("L2-Stack-Cube-SO101-v0", "ik_arm_action"),
    )


def test_a_joint_trace_on_a_task_that_takes_poses_is_refused(tmp_path):
    task = "L2-Stack-Cube-SO101-IK-Abs-v0"
    _refused(
        tmp_path,
        *("--task", task, "--teleop_device", "replay", "--trace", str(LEADER_TRACE)),
        naming=(task, "takes end-effector poses", "joint positions"),
    )


def test_delta_steps_on_a_task_without_ee_home_are_refused(tmp_path):
    task = "L2-Stack-Cube-SO101-Joint-v0"
    _refused(tmp_path, "--task", task, "--teleop_device", "spacemouse", naming=(task, "ee_home"))


def test_a_joint_trace_of_another_arm_is_refused(tmp_path):
    data = json.loads(LEADER_TRACE.read_text())
    data["commands"] = [[*c, 0.0] for c in data["commands"]]
    trace = tmp_path.parent / f"{tmp_path.name}_seven_joints.json"
    trace.write_text(json.dumps(data))
    _refused(
        tmp_path,
        *("--task", TASK, "--teleop_device", "replay", "--trace", str(trace)),
        naming=(TASK, "takes 6 joint positions", "gives 7"),
    )


def test_make_trace_refuses_a_leader_on_a_task_that_takes_poses(tmp_path):
    task = "L2-Stack-Cube-SO101-IK-Abs-v0"
    out = tmp_path / "trace.json"
    proc = subprocess.run(
        [sys.executable, "-m", "l2.teleop.make_trace", "--task", task, "--operator", "leader", "--output", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    refused_in_one_line(proc, task, "joint positions")
    assert not out.exists()
