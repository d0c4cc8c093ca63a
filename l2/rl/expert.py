"""The scripted pick-and-lift expert as a teacher in the RL variant's joint-position action space."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from l2.scripted.state_machine import (
    GRIPPER_CLOSE,
    GRIPPER_OPEN,
    PickAndLiftCfg,
    PickAndLiftStateMachine,
    pick_and_lift_cfg,
    step_toward,
)

if TYPE_CHECKING:
    from isaaclab.envs import ManagerBasedRLEnv


def reactive_pick_and_lift(
    ee_pos: torch.Tensor,
    gripper: torch.Tensor,
    cube_pos: torch.Tensor,
    grasp_quat: torch.Tensor,
    cfg: PickAndLiftCfg,
) -> torch.Tensor:
    """The state machine's targets as a function of the current state only: IK-absolute pose + gripper ``(N, 8)``.

    The scripted source's :class:`PickAndLiftStateMachine` remembers its phase; a policy that imitates it
    sees only the state, and where the phase is not implied by the state (half-way down, is it still
    approaching or already descending?) its labels contradict each other. Here the phase follows from the
    state: holding the cube -> lift; at the grasp point (or closing near it) -> close; otherwise go over the
    cube, lower the closer it is above it (from ``approach_height`` at 5 mm + ``descend_xy_range`` off to
    ``grasp_height`` at 5 mm),
    with the gripper open (re-opened if it closed on nothing). ``gripper`` is the gripper joints' positions summed
    (the Franka's finger opening, the SO-101's jaw angle). With :attr:`PickAndLiftCfg.max_speed` the target of the
    descent and the lift is at most one control step's travel at that speed from the end effector, and the lift
    goes straight up.
    """
    at_grasp = cube_pos.clone()
    at_grasp[:, 2] += cfg.grasp_height
    xy_err = torch.linalg.vector_norm(ee_pos[:, :2] - cube_pos[:, :2], dim=-1)
    to_grasp = torch.linalg.vector_norm(ee_pos - at_grasp, dim=-1)
    holding = (
        (gripper > cfg.holding_gripper[0])
        & (gripper < cfg.holding_gripper[1])
        & (torch.linalg.vector_norm(ee_pos - cube_pos, dim=-1) < cfg.holding_distance)
    )
    at_grasp_point = (xy_err < cfg.position_threshold) & (
        (ee_pos[:, 2] - at_grasp[:, 2]).abs() < cfg.position_threshold
    )
    closing = (gripper < cfg.open_gripper) & (gripper > cfg.holding_gripper[0]) & (to_grasp < 0.02)
    close = holding | at_grasp_point | closing

    lower = ((xy_err - 0.005) / cfg.descend_xy_range).clamp(0.0, 1.0)
    pos = cube_pos.clone()
    pos[:, 2] += cfg.grasp_height + (cfg.approach_height - cfg.grasp_height) * lower
    pos = torch.where(at_grasp_point.unsqueeze(-1), at_grasp, pos)
    pos[:, 2] = torch.where(holding, torch.full_like(pos[:, 2], cfg.lift_height), pos[:, 2])
    if cfg.max_speed is not None:
        # A slow lift goes straight up from where the end effector is: toward the held cube's xy, any sideways step
        # of the arm carries the cube and the target along with it.
        pos[:, :2] = torch.where(holding.unsqueeze(-1), ee_pos[:, :2], pos[:, :2])
        near = ((lower < 1.0) | holding).unsqueeze(-1)  # as the state machine: descent, grasp and lift, not approach
        lift_speed = cfg.max_speed if cfg.reactive_lift_speed is None else cfg.reactive_lift_speed
        step = torch.where(holding, lift_speed * cfg.dt, cfg.max_speed * cfg.dt).unsqueeze(-1)
        pos = torch.where(near, step_toward(ee_pos, pos, step), pos)
    gripper = torch.where(close, GRIPPER_CLOSE, GRIPPER_OPEN).to(pos.dtype).unsqueeze(-1)
    return torch.cat([pos, grasp_quat, gripper], dim=-1)


class JointSpaceExpert:
    """Scripted expert acting in the RL variant's action space (arm joint targets + binary gripper).

    :func:`reactive_pick_and_lift` gives the IK-absolute pose the scripted source would send from this
    state; :class:`~l2.recording.task_space.TaskSpaceDriver` turns it into the arm action one IK step gives
    (``(q* - q) / scale`` for relative joint-position actions, ``(q* - offset) / scale`` for absolute ones).
    """

    max_arm_action: float = 2.0
    """Arm actions are clipped to ±this: far from the target one IK step asks for radians at once, and such
    rare, large labels would dominate a regression on the expert's actions."""

    def __init__(self, env: ManagerBasedRLEnv, task: str):
        from l2.recording.task_space import TaskSpaceDriver

        self.env = env
        self.cfg = pick_and_lift_cfg(task, env.step_dt)
        """The robot's scripted-expert parameters (its task's ``pick_and_lift_cfg_entry_point``)."""
        self._orientation = PickAndLiftStateMachine(env.num_envs, env.device, self.cfg).grasp_orientation
        self._driver = TaskSpaceDriver(env)
        if self._driver.passthrough:
            raise ValueError("the env acts in task space already: the scripted state machine is its expert")
        self._fingers = self._driver.ik._asset.find_joints(env.action_manager.get_term("gripper_action")._joint_names)[
            0
        ]

    def reset(self, env_ids: Sequence[int] | torch.Tensor | None = None) -> None:
        """Nothing to reset: the expert has no memory."""

    def act(self) -> torch.Tensor:
        """The expert's actions ``(num_envs, arm joints + 1)`` in the RL action space for the env's current state."""
        from l2.lift import mdp

        joints = self._driver.ik._asset.data.joint_pos.torch
        cube = mdp.object_pose_in_robot_root_frame(self.env)
        pose_and_gripper = reactive_pick_and_lift(
            mdp.ee_position_in_robot_root_frame(self.env),
            joints[:, self._fingers].sum(-1),
            cube[:, :3],
            self._orientation(cube[:, 3:]),
            self.cfg,
        )
        arm = self._driver.arm_action(pose_and_gripper[:, :7]).clamp(-self.max_arm_action, self.max_arm_action)
        return torch.cat([arm, pose_and_gripper[:, 7:]], dim=-1)
