"""Task-space commands into an env's own action.

The scripted expert, keyboard teleop and the DAgger expert think in end-effector poses: ``(x, y, z, qx, qy, qz, qw,
gripper)`` in the robot root frame, gripper +1 open, -1 closed (between: part open, where the robot's jaw takes a
joint target). A robot whose task takes that pose as its
action (the Franka's IK-absolute variants) gets it as it is. A robot whose task acts in joint space (the SO-101's
joint positions, what its real arm records) gets the joint targets that one step of the robot's differential IK
gives from the measured joints (its cfg's ``ik_arm_action``, built beside the env's own terms and never applied),
and the gripper's ``(open, closed)`` joint target (its cfg's ``gripper_targets``): what the driver commanded is
what the env records.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from isaaclab.envs import ManagerBasedRLEnv


def yaw_of(quat: torch.Tensor) -> torch.Tensor:
    """The heading (rad) of scalar-last quaternions ``(N, 4)``."""
    from isaaclab.utils.math import euler_xyz_from_quat, wrap_to_pi

    return wrap_to_pi(euler_xyz_from_quat(quat)[2])


def fold_yaw(yaw: torch.Tensor, reference: torch.Tensor | float = 0.0, period: float = math.pi / 2) -> torch.Tensor:
    """``yaw`` plus the multiple of ``period`` (a square cube's 90 deg) that brings it within half a period of
    ``reference``."""
    from isaaclab.utils.math import wrap_to_pi

    return reference + torch.remainder(wrap_to_pi(yaw - reference) + period / 2, period) - period / 2


def shadow_ik_term(env: ManagerBasedRLEnv):
    """The robot's differential-IK action term (the cfg's ``ik_arm_action``, else the env's own IK arm action),
    built beside the env's own terms and never applied: its frame pose and Jacobian translate between end-effector
    poses and joint targets."""
    ik_cfg = getattr(env.cfg, "ik_arm_action", None) or env.cfg.actions.arm_action
    return ik_cfg.class_type(ik_cfg, env)


def takes_poses(env: ManagerBasedRLEnv) -> bool:
    """Whether the env's arm action is an absolute end-effector pose (then commands pass through unchanged)."""
    from isaaclab.envs.mdp.actions.task_space_actions import DifferentialInverseKinematicsAction

    arm = env.action_manager.get_term("arm_action")
    return isinstance(arm, DifferentialInverseKinematicsAction) and not arm.cfg.controller.use_relative_mode


def joint_targets_pose(ik, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The pose ``(position, scalar-last quaternion)`` of the IK term's frame (root frame) at the arm joint targets
    ``(N, arm joints)``, to first order around the measured joints: ``x + J Δq``, and the rotation ``exp(J_ω Δq)``
    applied to the current orientation."""
    from isaaclab.utils.math import quat_from_angle_axis, quat_mul

    joints = ik._asset.data.joint_pos.torch[:, ik._joint_ids]
    pos, quat = ik._compute_frame_pose()
    twist = (ik._compute_frame_jacobian() @ (targets - joints).unsqueeze(-1)).squeeze(-1)
    angle = torch.linalg.vector_norm(twist[:, 3:], dim=-1)
    axis = twist[:, 3:] / angle.clamp_min(1e-12).unsqueeze(-1)
    return pos + twist[:, :3], quat_mul(quat_from_angle_axis(angle, axis), quat)


def _rotated(quat: torch.Tensor, rotvec: torch.Tensor) -> torch.Tensor:
    """``quat`` (scalar-last) turned by the rotation vector ``rotvec`` (root frame)."""
    from isaaclab.utils.math import quat_from_angle_axis, quat_mul

    angle = torch.linalg.vector_norm(rotvec, dim=-1)
    return quat_mul(quat_from_angle_axis(angle, rotvec / angle.clamp_min(1e-12).unsqueeze(-1)), quat)


def ik_step_affine(ik, probe: float = 0.01) -> tuple[torch.Tensor, torch.Tensor]:
    """The IK step of ``ik`` in the current state as ``Δq = M e + c``: ``M`` ``(N, joints, 6)``, ``c`` ``(N, joints)``,
    for the pose error ``e`` (position, then rotation vector; root frame). The step is affine in ``e`` (its damping
    and task weights depend on the Jacobian, its joint-limit term on the joints), so probing it with ``e = 0`` and six
    small errors gives it whole, whatever the controller's weights, masks and null-space terms."""
    pos, quat = ik._compute_frame_pose()
    jacobian = ik._compute_frame_jacobian()
    joints = ik._asset.data.joint_pos.torch[:, ik._joint_ids]

    def step(error: torch.Tensor) -> torch.Tensor:
        ik.process_actions(torch.cat([pos + error[:, :3], _rotated(quat, error[:, 3:])], dim=-1))
        return ik._ik_controller.compute(pos, quat, jacobian, joints) - joints

    zero = torch.zeros(len(pos), 6, device=pos.device, dtype=pos.dtype)
    offset = step(zero)
    columns = []
    for i in range(6):
        error = zero.clone()
        error[:, i] = probe
        columns.append((step(error) - offset) / probe)
    return torch.stack(columns, dim=-1), offset


def ik_command_pose(ik, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The pose ``(position, scalar-last quaternion)`` (root frame) whose one IK step from the measured joints gives
    the joint targets ``(N, joints)``: the least pose error that does (:func:`ik_step_affine` inverted), so a
    joint-position action and the pose command it is read as map back onto each other exactly in the same state."""
    matrix, offset = ik_step_affine(ik)
    joints = ik._asset.data.joint_pos.torch[:, ik._joint_ids]
    error = (torch.linalg.pinv(matrix) @ (targets - joints - offset).unsqueeze(-1)).squeeze(-1)
    pos, quat = ik._compute_frame_pose()
    return pos + error[:, :3], _rotated(quat, error[:, 3:])


class TaskSpaceDriver:
    """Turns task-space commands ``(N, 8)`` into the env's action ``(N, action dim)``."""

    def __init__(self, env: ManagerBasedRLEnv):
        from isaaclab.envs.mdp.actions.joint_actions import RelativeJointPositionAction

        self.env = env
        self.passthrough = takes_poses(env)
        self.gripper = env.action_manager.get_term("gripper_action")
        targets = getattr(env.cfg, "gripper_targets", None)
        self.gripper_targets = None if targets is None else torch.tensor(targets, device=env.device)
        if self.passthrough:
            return
        self.ik = shadow_ik_term(env)
        self.arm = env.action_manager.get_term("arm_action")
        self.relative = isinstance(self.arm, RelativeJointPositionAction)
        if list(self.arm._joint_names) != list(self.ik._joint_names):
            raise ValueError(f"arm joints differ: the action's {self.arm._joint_names}, IK's {self.ik._joint_names}")

    def arm_targets(self, pose: torch.Tensor) -> torch.Tensor:
        """The arm's joint targets ``(N, arm joints)`` one IK step gives toward ``pose`` ``(N, 7)``, within the
        joints' soft limits (a target past a limit is never reached, and would be recorded as the action)."""
        ik = self.ik
        ik.process_actions(pose)
        ee_pos, ee_quat = ik._compute_frame_pose()
        joint_pos = ik._asset.data.joint_pos.torch[:, ik._joint_ids]
        target = ik._ik_controller.compute(ee_pos, ee_quat, ik._compute_frame_jacobian(), joint_pos)
        limits = ik._asset.data.soft_joint_pos_limits.torch[:, ik._joint_ids]
        return torch.maximum(torch.minimum(target, limits[..., 1]), limits[..., 0])

    def arm_action(self, pose: torch.Tensor, max_step: float | None = None) -> torch.Tensor:
        """:meth:`arm_targets` in the arm action's units: ``(q* - q) / scale`` for relative joint positions,
        ``(q* - offset) / scale`` for absolute ones; ``max_step`` (rad): each target at most this far from the
        measured joint."""
        target = self.arm_targets(pose)
        if max_step is not None:
            joints = self.ik._asset.data.joint_pos.torch[:, self.ik._joint_ids]
            target = joints + (target - joints).clamp(-max_step, max_step)
        offset = self.ik._asset.data.joint_pos.torch[:, self.ik._joint_ids] if self.relative else self.arm._offset
        return (target - offset) / self.arm._scale

    def gripper_action(self, command: torch.Tensor) -> torch.Tensor:
        """The gripper's action for commands ``(N, 1)`` in [-1, 1]: the command itself, or, where the cfg gives the
        jaw's ``gripper_targets`` ``(open, closed)``, the joint target at that fraction of the way from closed (-1)
        to open (+1), in the gripper action's units (``(target - offset) / scale``: Isaac Lab's IK-Abs SO-101 stack
        takes the jaw's closedness, 0 open … 1 closed)."""
        if self.gripper_targets is None:
            return command
        opened, closed = self.gripper_targets
        target = closed + (command.clamp(-1.0, 1.0) + 1.0) / 2.0 * (opened - closed)
        return (target - self.gripper._offset) / self.gripper._scale

    def action(self, command: torch.Tensor) -> torch.Tensor:
        """The env's action for task-space commands ``(N, 8)``."""
        if self.passthrough:
            if self.gripper_targets is None:
                return command
            return torch.cat([command[:, :7], self.gripper_action(command[:, 7:])], dim=-1)
        return torch.cat([self.arm_action(command[:, :7]), self.gripper_action(command[:, 7:])], dim=-1)
