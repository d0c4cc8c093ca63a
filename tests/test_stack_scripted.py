"""Scripted experts per task (``scripted_expert_entry_point``, l2/scripted/expert.py) and the SO-101 stack's: the
runner refuses a task without an expert in one line before any simulator starts, and (real simulator) the stacking
expert's demos, recorded through l2/scripted/run.py, end in the task's own success and validate."""

from __future__ import annotations

import h5py
import pytest

pytest.importorskip("isaaclab")

import gymnasium as gym  # noqa: E402
from conftest import refused_in_one_line, run_scripted  # noqa: E402

from l2.format.validate import validate_file  # noqa: E402
from l2.recording import sim  # noqa: E402
from l2.scripted.expert import ENTRY_POINT, NoExpertError, check_expert, make_expert  # noqa: E402

STACK_TASK = "L2-Stack-Cube-SO101-Scripted-v0"
NO_EXPERT_TASK = "L2-Stack-Cube-SO101-v0"
"""Isaac Lab's joint-position stack: relative arm targets and a binary jaw, no expert registered."""


class _Expert:
    def __init__(self, env, task):
        self.env, self.task = env, task


def _register(task: str, entry) -> None:
    gym.register(id=task, entry_point="isaaclab.envs:ManagerBasedRLEnv", kwargs={ENTRY_POINT: entry})


def test_the_expert_comes_from_the_task_s_registration():
    sim.register_tasks()
    _register("Test-Expert-Factory-v0", f"{__name__}:_Expert")
    expert = make_expert("Test-Expert-Factory-v0", env="ENV")
    assert isinstance(expert, _Expert) and (expert.env, expert.task) == ("ENV", "Test-Expert-Factory-v0")
    for task in ("L2-Lift-Cube-Franka-IK-Abs-Scripted", "L2-Lift-Cube-SO101-JointPos-Scripted", STACK_TASK):
        check_expert(task)


def test_a_task_without_an_expert_or_with_one_that_does_not_load_is_named():
    sim.register_tasks()
    with pytest.raises(NoExpertError, match=f"{NO_EXPERT_TASK} has no scripted expert: register {ENTRY_POINT}"):
        check_expert(NO_EXPERT_TASK)
    _register("Test-Expert-Missing-v0", "l2.scripted.no_such_module:factory")
    with pytest.raises(NoExpertError, match="Test-Expert-Missing-v0: its scripted_expert_entry_point .* does not load"):
        check_expert("Test-Expert-Missing-v0")


def test_the_runner_refuses_a_task_without_an_expert_in_one_line_before_the_simulator(tmp_path):
    out = tmp_path / "demos.hdf5"
    proc = run_scripted("--task", NO_EXPERT_TASK, "--num_envs", "1", "--num_demos", "1", "--output", str(out))
    refused_in_one_line(proc, NO_EXPERT_TASK, ENTRY_POINT)
    assert "scripted demos" not in proc.stderr  # no progress bar: no simulator started
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.sim
def test_the_stacking_expert_s_demos_end_in_the_task_s_success_and_validate(tmp_path):
    out = tmp_path / "stack.hdf5"
    proc = run_scripted(
        "--task", STACK_TASK, "--num_envs", "2", "--num_demos", "2", "--max_attempts", "4", "--workers", "1",
        "--output", str(out), "presets=no_cameras",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = validate_file(out)
    assert report.ok, [str(v) for v in report.violations]
    assert report.env_name == STACK_TASK and report.episodes == report.successes == 2
    with h5py.File(out) as f:
        for name in f["data"]:
            demo = f["data"][name]
            assert demo.attrs["success"]
            assert demo["actions"].shape[1] == 6  # the joint variant's six absolute joint targets


def _turned_stack_heights(native_ccd: bool, turns: list[float]) -> list[float]:
    """The top cube's height (m, env frame) in one env per turn, 2 s after three cubes were set on each other, each
    turned by ``turn`` (rad) from the one below, the box-box collider MuJoCo-Warp's convex one or the analytic one."""
    import torch
    from isaaclab.utils.math import quat_from_angle_axis

    from l2.stack.config.so101.stack_env_cfg import CUBE_EDGE, CUBE_Z

    cfg = sim.load_env_cfg(STACK_TASK, "cpu", len(turns), 0, ["presets=no_cameras"])
    cfg.events.randomize_cube_positions = None
    cfg.sim.physics.solver_cfg.native_ccd = native_ccd
    with sim.make_env(cfg, STACK_TASK) as env:
        env.reset()
        ids = torch.arange(len(turns))
        origins = env.scene.env_origins
        for level, name in enumerate(("cube_1", "cube_2", "cube_3")):
            yaw = torch.tensor(turns) * level
            quat = quat_from_angle_axis(yaw, torch.tensor([[0.0, 0.0, 1.0]]).repeat(len(turns), 1))
            pos = origins + torch.tensor([0.2, 0.12, CUBE_Z + level * (CUBE_EDGE + 0.001)])
            env.scene[name].write_root_pose_to_sim_index(root_pose=torch.cat([pos, quat], -1), env_ids=ids)
            env.scene[name].write_root_velocity_to_sim_index(root_velocity=torch.zeros(len(turns), 6), env_ids=ids)
        hold = env.scene["robot"].data.joint_pos.torch.clone()  # the arm still, away from the stack
        for _ in range(40):
            env.step(hold)
        return (env.scene["cube_3"].data.root_pos_w.torch[:, 2] - origins[:, 2]).tolist()


@pytest.mark.sim
def test_stacks_turned_any_way_stand_with_the_analytic_box_box_collider():
    """The stack's physics (l2/stack/physics.py): with MuJoCo-Warp's convex box-box collider a cube on a cube turned
    from it sinks in and tips off; with the analytic one it stands. When the convex one holds, the override can go."""
    from l2.stack.config.so101.stack_env_cfg import CUBE_EDGE, CUBE_Z

    turns = [0.03, 0.3, 0.785]
    stacked = CUBE_Z + 2 * CUBE_EDGE
    analytic = _turned_stack_heights(False, turns)
    assert all(abs(z - stacked) < 0.003 for z in analytic), analytic
    convex = _turned_stack_heights(True, turns)
    assert all(z < stacked - 0.02 for z in convex), convex
