"""The lift-cube task on the SO-101 (``l2/lift/config/so101/``) on the real simulator (kit-less Newton, CPU): its
cameras under SO-101 rigs' names, its six joint-position actions, and a task-space command reaching its target
through the robot's pose IK (``l2/recording/task_space.py``), as the scripted expert and keyboard teleop drive it."""

from __future__ import annotations

import pytest

pytest.importorskip("isaaclab")

import torch  # noqa: E402

from l2.recording import sim  # noqa: E402

pytestmark = pytest.mark.sim

TASK = "L2-Lift-Cube-SO101-JointPos-Scripted"
ABOVE = 0.06
"""m above the cube's centre that the command sends the grasp point to, jaws down."""
REACH_TOL = 0.01
"""m from that point the grasp point must be after :data:`STEPS` (reached in about 20 steps)."""
STEPS = 45


@pytest.fixture(scope="module")
def driven():
    """One env with both cameras, commanded above the cube for :data:`STEPS` control steps."""
    from l2.lift.config.so101.expert import SO101_PICK_AND_LIFT
    from l2.lift.mdp import ee_position_in_robot_root_frame, object_pose_in_robot_root_frame
    from l2.recording.task_space import TaskSpaceDriver

    env_cfg = sim.load_env_cfg(TASK, "cpu", num_envs=1, seed=3)
    out = {"step_dt": None, "actions": []}
    with sim.make_env(env_cfg, TASK) as env:
        obs, _ = env.reset()
        out["step_dt"] = env.step_dt
        out["images"] = {k: (tuple(v.shape), v.dtype) for k, v in obs["cameras"].items()}
        out["action_dim"] = env.action_manager.total_action_dim
        driver = TaskSpaceDriver(env)
        robot = env.scene["robot"]
        out["joint_names"] = robot.joint_names
        cube = object_pose_in_robot_root_frame(env)[:, :3]
        target = cube + torch.tensor([0.0, 0.0, ABOVE])
        command = torch.cat([target, torch.tensor([SO101_PICK_AND_LIFT.top_down]), torch.ones(1, 1)], dim=-1)
        for _ in range(STEPS):
            action = driver.action(command)
            out["actions"].append(action.clone())
            env.step(action)
        out["error"] = float(torch.linalg.vector_norm(ee_position_in_robot_root_frame(env) - target))
        out["limits"] = robot.data.soft_joint_pos_limits.torch[0].clone()
        out["cube_moved"] = float(torch.linalg.vector_norm(object_pose_in_robot_root_frame(env)[:, :3] - cube))
    return out


def test_controls_at_30_hz_and_records_front_and_wrist_images(driven):
    assert driven["step_dt"] == pytest.approx(1 / 30)
    assert driven["images"] == {
        "front": ((1, 224, 224, 3), torch.uint8),
        "wrist": ((1, 224, 224, 3), torch.uint8),
    }


def test_the_action_is_the_six_joint_targets_within_limits(driven):
    assert driven["action_dim"] == 6
    assert driven["joint_names"] == [
        "shoulder_pan",
        "shoulder_lift",
        "elbow_flex",
        "wrist_flex",
        "wrist_roll",
        "gripper",
    ]
    actions = torch.cat(driven["actions"])
    low, high = driven["limits"][:, 0], driven["limits"][:, 1]
    assert bool(((actions >= low - 1e-6) & (actions <= high + 1e-6)).all())
    assert bool((actions[:, 5] == 1.0).all())  # the open command's jaw target (rad)


def test_a_pose_command_reaches_its_target_through_the_pose_ik(driven):
    assert driven["error"] < REACH_TOL, driven["error"]
    assert driven["cube_moved"] < 1e-3  # the arm stays clear of the cube it hovers over
