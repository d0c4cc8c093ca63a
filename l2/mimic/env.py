"""The lift-cube Mimic env: the interface Isaac Lab Mimic's data generator drives the task through.

Every pose is a 4x4 matrix in the robot root frame, the frame of the task's IK-absolute action
``(x, y, z, qx, qy, qz, qw, gripper)``; so a target end-effector pose is an action, and back.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from isaaclab.envs import ManagerBasedRLMimicEnv
from isaaclab.utils import math as math_utils

from l2.lift import mdp
from l2.lift.variants import GRASP_SIGNAL, OBJECT_NAME


class LiftCubeMimicEnv(ManagerBasedRLMimicEnv):
    """Mimic wrapper of the lift-cube task (one end effector, the cfg's ``eef_name``; one object, the cube)."""

    def get_robot_eef_pose(self, eef_name: str, env_ids: Sequence[int] | None = None) -> torch.Tensor:
        """The pose the IK action controls (its body plus offset, root frame), from the arm action term: the
        ``ee_frame`` sensor holds zeros after a reset until the next physics step (Newton)."""
        ids = slice(None) if env_ids is None else env_ids
        pos, quat = self.action_manager.get_term("arm_action")._compute_frame_pose()
        return math_utils.make_pose(pos[ids], math_utils.matrix_from_quat(quat[ids]))

    def target_eef_pose_to_action(
        self,
        target_eef_pose_dict: dict,
        gripper_action_dict: dict,
        action_noise_dict: dict | None = None,
        env_id: int = 0,
    ) -> torch.Tensor:
        """The IK-absolute action reaching the target pose; noise (m) on the position only, so the action's
        quaternion stays a unit one (the L2 schema checks it)."""
        pos, rot = math_utils.unmake_pose(target_eef_pose_dict[self.cfg.eef_name])
        if action_noise_dict is not None and action_noise_dict[self.cfg.eef_name]:
            pos = pos + action_noise_dict[self.cfg.eef_name] * torch.randn_like(pos)
        quat = math_utils.normalize(math_utils.quat_from_matrix(rot))
        return torch.cat([pos, quat, gripper_action_dict[self.cfg.eef_name]], dim=-1).unsqueeze(0)

    def action_to_target_eef_pose(self, action: torch.Tensor) -> dict[str, torch.Tensor]:
        pose = math_utils.make_pose(action[:, 0:3], math_utils.matrix_from_quat(action[:, 3:7]))
        return {self.cfg.eef_name: pose}

    def actions_to_gripper_actions(self, actions: torch.Tensor) -> dict[str, torch.Tensor]:
        return {self.cfg.eef_name: actions[:, -1:]}

    def get_object_poses(self, env_ids: Sequence[int] | None = None) -> dict[str, torch.Tensor]:
        """The cube's pose in the robot root frame (Isaac Lab's default is the env frame)."""
        ids = slice(None) if env_ids is None else env_ids
        pose = mdp.object_pose_in_robot_root_frame(self)[ids]
        return {OBJECT_NAME: math_utils.make_pose(pose[:, :3], math_utils.matrix_from_quat(pose[:, 3:]))}

    def get_subtask_term_signals(self, env_ids: Sequence[int] | None = None) -> dict[str, torch.Tensor]:
        ids = slice(None) if env_ids is None else env_ids
        return {GRASP_SIGNAL: self.obs_buf["subtask_terms"][GRASP_SIGNAL][ids]}
