"""The Mimic env of a task with one end effector: the interface Isaac Lab Mimic's data generator drives it through.

Every pose is a 4x4 matrix in the robot root frame. Where the robot's task takes the IK-absolute action
``(x, y, z, qx, qy, qz, qw, gripper)`` (the Franka's), a target end-effector pose is an action, and back. Where it
acts in joint positions (the SO-101's), a target pose becomes the joint targets one step of the robot's
differential IK gives from the measured joints, and an action's target pose is the pose command whose IK step
gives its joint targets (``l2/recording/task_space.py``); the gripper's part is the action's own.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from isaaclab.envs import ManagerBasedRLMimicEnv
from isaaclab.managers import SceneEntityCfg
from isaaclab.utils import math as math_utils

from l2.lift import mdp
from l2.recording.task_space import TaskSpaceDriver, fold_yaw, ik_command_pose, yaw_of

SUBTASK_GROUP = "subtask_terms"
"""The observation group of the subtask signals (Isaac Lab's Mimic tasks' name)."""


class TaskSpaceMimicEnv(ManagerBasedRLMimicEnv):
    """Mimic wrapper of a task with one end effector (the cfg's ``eef_name``), its rigid objects and the subtask
    signals of its ``subtask_terms`` group (the lift's cube and ``grasp``; the stack's cubes, ``grasp_1``,
    ``stack_1``, ``grasp_2``). Optional cfg fields: ``object_yaw_periods`` (:meth:`get_object_poses`) and, for a
    joint-position task, ``max_joint_step`` (rad): a target pose whose IK step would move a joint farther in one
    step is approached at that rate (a moved segment can ask for a pose the IK reaches only by a jump of its
    solution, which throws a held object)."""

    _driver: TaskSpaceDriver | None = None

    @property
    def task_space(self) -> TaskSpaceDriver:
        """Poses into the env's own action (built on first use: the action manager comes after ``__init__``)."""
        if self._driver is None:
            self._driver = TaskSpaceDriver(self)
        return self._driver

    def _ik_term(self):
        """The differential-IK term whose frame is the end effector: the env's arm action, or its shadow."""
        return self.action_manager.get_term("arm_action") if self.task_space.passthrough else self.task_space.ik

    def get_robot_eef_pose(self, eef_name: str, env_ids: Sequence[int] | None = None) -> torch.Tensor:
        """The pose the IK controls (its body plus offset, root frame), from the IK term: the ``ee_frame`` sensor
        holds zeros after a reset until the next physics step (Newton)."""
        ids = slice(None) if env_ids is None else env_ids
        pos, quat = self._ik_term()._compute_frame_pose()
        return math_utils.make_pose(pos[ids], math_utils.matrix_from_quat(quat[ids]))

    def target_eef_pose_to_action(
        self,
        target_eef_pose_dict: dict,
        gripper_action_dict: dict,
        action_noise_dict: dict | None = None,
        env_id: int = 0,
    ) -> torch.Tensor:
        """Env ``env_id``'s action toward the target pose: the IK-absolute action, or one IK step's joint targets;
        noise (m) on the position only, so an IK-absolute quaternion stays a unit one (the L2 schema checks it)."""
        pos, rot = math_utils.unmake_pose(target_eef_pose_dict[self.cfg.eef_name])
        if action_noise_dict is not None and action_noise_dict[self.cfg.eef_name]:
            pos = pos + action_noise_dict[self.cfg.eef_name] * torch.randn_like(pos)
        pose = torch.cat([pos, math_utils.normalize(math_utils.quat_from_matrix(rot))], dim=-1)
        if not self.task_space.passthrough:  # the IK runs for every env; env_id's row is this env's targets
            max_step = getattr(self.cfg, "max_joint_step", None)
            pose = self.task_space.arm_action(pose.expand(self.num_envs, -1), max_step)[env_id]
        return torch.cat([pose, gripper_action_dict[self.cfg.eef_name]], dim=-1).unsqueeze(0)

    def action_to_target_eef_pose(self, action: torch.Tensor) -> dict[str, torch.Tensor]:
        """The target poses of ``action`` ``(N, D)``. Joint-position actions: one action taken in every env, or one
        per env, with the envs in the state the actions were taken from (as annotation replays them)."""
        if self.task_space.passthrough:
            pos, quat = action[:, 0:3], action[:, 3:7]
        else:
            arm = self.task_space.arm
            targets = action[:, : arm.action_dim] * arm._scale + arm._offset
            pos, quat = ik_command_pose(self.task_space.ik, targets.expand(self.num_envs, -1))
            pos, quat = pos[: len(action)], quat[: len(action)]
        return {self.cfg.eef_name: math_utils.make_pose(pos, math_utils.matrix_from_quat(quat))}

    def actions_to_gripper_actions(self, actions: torch.Tensor) -> dict[str, torch.Tensor]:
        return {self.cfg.eef_name: actions[:, -1:]}

    def get_object_poses(self, env_ids: Sequence[int] | None = None) -> dict[str, torch.Tensor]:
        """Every rigid object's pose in the robot root frame, the frame of the end-effector poses (Isaac Lab's
        default is the env frame). An object the cfg's ``object_yaw_periods`` names (symmetric about the vertical,
        at rest: a cube's period is pi/2) is given upright, with the one of its equivalent yaws nearest the heading
        from the robot to it: a segment moved with it then turns by the change of heading plus less than one
        period, which a 5-joint arm, whose jaws tilt only in its own vertical plane, can follow."""
        ids = slice(None) if env_ids is None else env_ids
        periods = getattr(self.cfg, "object_yaw_periods", {})
        poses = {}
        for name in self.scene.rigid_objects:
            pose = mdp.object_pose_in_robot_root_frame(self, object_cfg=SceneEntityCfg(name))[ids]
            pos, quat = pose[:, :3], pose[:, 3:]
            if name in periods:
                heading = torch.atan2(pos[:, 1], pos[:, 0])
                yaw = fold_yaw(yaw_of(quat), heading, periods[name])
                quat = math_utils.quat_from_angle_axis(yaw, torch.tensor([0.0, 0.0, 1.0], device=pos.device))
            poses[name] = math_utils.make_pose(pos, math_utils.matrix_from_quat(quat))
        return poses

    def get_subtask_term_signals(self, env_ids: Sequence[int] | None = None) -> dict[str, torch.Tensor]:
        """Every term of the ``subtask_terms`` observation group, as the task last computed it."""
        ids = slice(None) if env_ids is None else env_ids
        return {name: signal[ids] for name, signal in self.obs_buf[SUBTASK_GROUP].items()}
