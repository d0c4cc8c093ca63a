"""Observation terms of the lift-cube task (besides Isaac Lab's generic and lift terms)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from isaaclab.managers import SceneEntityCfg
from isaaclab.utils.math import subtract_frame_transforms

if TYPE_CHECKING:
    from isaaclab.envs import ManagerBasedEnv


def object_pose_in_robot_root_frame(
    env: ManagerBasedEnv,
    robot_cfg: SceneEntityCfg = SceneEntityCfg("robot"),
    object_cfg: SceneEntityCfg = SceneEntityCfg("object"),
) -> torch.Tensor:
    """The object's pose ``(x, y, z, qx, qy, qz, qw)`` in the robot root frame, ``(num_envs, 7)``."""
    robot, obj = env.scene[robot_cfg.name].data, env.scene[object_cfg.name].data
    pos, quat = subtract_frame_transforms(
        robot.root_pos_w.torch, robot.root_quat_w.torch, obj.root_pos_w.torch, obj.root_quat_w.torch
    )
    return torch.cat([pos, quat], dim=-1)


def ee_position_in_robot_root_frame(
    env: ManagerBasedEnv, ee_frame_cfg: SceneEntityCfg = SceneEntityCfg("ee_frame")
) -> torch.Tensor:
    """The end-effector point (between the finger pads) in the robot root frame, ``(num_envs, 3)``."""
    return env.scene[ee_frame_cfg.name].data.target_pos_source.torch[:, 0]


def object_orientation_in_robot_root_frame(
    env: ManagerBasedEnv,
    robot_cfg: SceneEntityCfg = SceneEntityCfg("robot"),
    object_cfg: SceneEntityCfg = SceneEntityCfg("object"),
) -> torch.Tensor:
    """The object's orientation ``(qx, qy, qz, qw)`` in the robot root frame, ``(num_envs, 4)``."""
    return object_pose_in_robot_root_frame(env, robot_cfg, object_cfg)[:, 3:]
