"""The scripted pick-and-lift expert as a teacher in the RL variant's joint-position action space."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from l2.scripted.state_machine import GRIPPER_CLOSE, GRIPPER_OPEN, PickAndLiftCfg, PickAndLiftStateMachine

if TYPE_CHECKING:
    from isaaclab.envs import ManagerBasedRLEnv

HOLDING_WIDTH = (0.02, 0.05)
"""Finger opening (m, both fingers) of a gripper closed on the 4 cm cube; below it, closed on nothing."""


def reactive_pick_and_lift(
    ee_pos: torch.Tensor,
    finger_width: torch.Tensor,
    cube_pos: torch.Tensor,
    grasp_quat: torch.Tensor,
    cfg: PickAndLiftCfg,
) -> torch.Tensor:
    """The state machine's targets as a function of the current state only: IK-absolute pose + gripper ``(N, 8)``.

    The scripted source's :class:`PickAndLiftStateMachine` remembers its phase; a policy that imitates it
    sees only the state, and where the phase is not implied by the state (half-way down, is it still
    approaching or already descending?) its labels contradict each other. Here the phase follows from the
    state: holding the cube -> lift; at the grasp point (or closing near it) -> close; otherwise go over the
    cube, lower the closer it is above it (from ``approach_height`` at 2 cm off to ``grasp_height`` at 5 mm),
    with the gripper open (re-opened if it closed on nothing).
    """
    at_grasp = cube_pos.clone()
    at_grasp[:, 2] += cfg.grasp_height
    xy_err = torch.linalg.vector_norm(ee_pos[:, :2] - cube_pos[:, :2], dim=-1)
    to_grasp = torch.linalg.vector_norm(ee_pos - at_grasp, dim=-1)
    holding = (
        (finger_width > HOLDING_WIDTH[0])
        & (finger_width < HOLDING_WIDTH[1])
        & (torch.linalg.vector_norm(ee_pos - cube_pos, dim=-1) < 0.045)
    )
    at_grasp_point = (xy_err < cfg.position_threshold) & (
        (ee_pos[:, 2] - at_grasp[:, 2]).abs() < cfg.position_threshold
    )
    closing = (finger_width < 0.075) & (finger_width > HOLDING_WIDTH[0]) & (to_grasp < 0.02)
    close = holding | at_grasp_point | closing

    lower = ((xy_err - 0.005) / 0.015).clamp(0.0, 1.0)
    pos = cube_pos.clone()
    pos[:, 2] += cfg.grasp_height + (cfg.approach_height - cfg.grasp_height) * lower
    pos = torch.where(at_grasp_point.unsqueeze(-1), at_grasp, pos)
    pos[:, 2] = torch.where(holding, torch.full_like(pos[:, 2], cfg.lift_height), pos[:, 2])
    gripper = torch.where(close, GRIPPER_CLOSE, GRIPPER_OPEN).to(pos.dtype).unsqueeze(-1)
    return torch.cat([pos, grasp_quat, gripper], dim=-1)


def shadow_ik_term(env: ManagerBasedRLEnv):
    """The robot's differential-IK action term (a joint-space cfg's ``ik_arm_action``, else the env's own IK arm
    action), built beside the env's own terms and never applied: its frame pose and Jacobian translate between
    end-effector poses and joint targets."""
    ik_cfg = getattr(env.cfg, "ik_arm_action", None) or env.cfg.actions.arm_action
    return ik_cfg.class_type(ik_cfg, env)


class JointSpaceExpert:
    """Scripted expert acting in the RL variant's action space (arm joint targets + binary gripper).

    :func:`reactive_pick_and_lift` gives the IK-absolute pose the scripted source would send from this
    state. The robot's differential-IK action term, built here beside the env's own terms and never
    applied, turns it into the joint targets ``q*`` one IK step gives from the measured joints ``q``; the
    arm action is those targets in the RL variant's units: ``(q* - q) / scale`` for relative joint-position
    actions, ``(q* - offset) / scale`` for absolute ones.
    """

    max_arm_action: float = 2.0
    """Arm actions are clipped to ±this: far from the target one IK step asks for radians at once, and such
    rare, large labels would dominate a regression on the expert's actions."""

    def __init__(self, env: ManagerBasedRLEnv, cfg: PickAndLiftCfg | None = None):
        from isaaclab.envs.mdp.actions.joint_actions import RelativeJointPositionAction

        self.env = env
        self.cfg = cfg or PickAndLiftCfg(dt=env.step_dt)
        self._orientation = PickAndLiftStateMachine(env.num_envs, env.device, self.cfg).grasp_orientation
        self._ik = shadow_ik_term(env)
        self._arm = env.action_manager.get_term("arm_action")
        self._fingers = self._ik._asset.find_joints(env.action_manager.get_term("gripper_action")._joint_names)[0]
        self._relative = isinstance(self._arm, RelativeJointPositionAction)
        if list(self._arm._joint_names) != list(self._ik._joint_names):
            raise ValueError(f"arm joints differ: RL action {self._arm._joint_names}, IK {self._ik._joint_names}")

    def reset(self, env_ids: Sequence[int] | torch.Tensor | None = None) -> None:
        """Nothing to reset: the expert has no memory."""

    def act(self) -> torch.Tensor:
        """The expert's actions ``(num_envs, 8)`` in the RL action space for the env's current state."""
        from l2.lift import mdp

        ik = self._ik
        joints = ik._asset.data.joint_pos.torch
        cube = mdp.object_pose_in_robot_root_frame(self.env)
        pose_and_gripper = reactive_pick_and_lift(
            mdp.ee_position_in_robot_root_frame(self.env),
            joints[:, self._fingers].sum(-1),
            cube[:, :3],
            self._orientation(cube[:, 3:]),
            self.cfg,
        )
        ik.process_actions(pose_and_gripper[:, :7])
        ee_pos, ee_quat = ik._compute_frame_pose()
        joint_pos = joints[:, ik._joint_ids]
        target = ik._ik_controller.compute(ee_pos, ee_quat, ik._compute_frame_jacobian(), joint_pos)
        offset = joint_pos if self._relative else self._arm._offset
        arm = ((target - offset) / self._arm._scale).clamp(-self.max_arm_action, self.max_arm_action)
        return torch.cat([arm, pose_and_gripper[:, 7:]], dim=-1)
