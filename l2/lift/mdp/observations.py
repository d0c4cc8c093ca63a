"""Observation terms of the lift-cube task (besides Isaac Lab's generic and lift terms)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import torch
from isaaclab.managers import SceneEntityCfg
from isaaclab.utils.math import combine_frame_transforms, subtract_frame_transforms

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


def ee_body_name(prim_path: str) -> str:
    """The link an end-effector frame is on: the literal name that ends its prim path expression, e.g.
    ``panda_link7`` of ``{ENV_REGEX_NS}/Robot/(Geometry/.*/)?panda_link7``."""
    return re.split(r"[/)?*]", prim_path)[-1]


def ee_pose_in_robot_root_frame(
    env: ManagerBasedEnv, ee_frame_cfg: SceneEntityCfg = SceneEntityCfg("ee_frame")
) -> torch.Tensor:
    """The end-effector frame's pose ``(x, y, z, qx, qy, qz, qw)`` in the robot root frame, ``(num_envs, 7)``:
    the frame the robot's cfg gives its ``ee_frame`` sensor (a link plus an offset to the point between the
    gripper's jaws; for the Franka, the frame its IK action commands).

    Computed from the articulation's body poses, which a reset refreshes; the sensor's data is only refreshed by
    a physics step, so right after a reset it still holds the previous episode's last pose. Of the sensor, only
    its cfg is read.
    """
    sensor_cfg = env.scene[ee_frame_cfg.name].cfg
    frame = sensor_cfg.target_frames[0]
    robot = env.scene["robot"]
    body = robot.find_bodies(ee_body_name(frame.prim_path))[0][0]
    data = robot.data
    link_pos, link_quat = data.body_pos_w.torch[:, body], data.body_quat_w.torch[:, body]
    offset_pos = torch.tensor(frame.offset.pos, device=link_pos.device).expand_as(link_pos)
    offset_rot = torch.tensor(frame.offset.rot, device=link_pos.device).expand_as(link_quat)
    ee_pos, ee_quat = combine_frame_transforms(link_pos, link_quat, offset_pos, offset_rot)
    pos, quat = subtract_frame_transforms(data.root_pos_w.torch, data.root_quat_w.torch, ee_pos, ee_quat)
    return torch.cat([pos, quat], dim=-1)


def ee_position_in_robot_root_frame(
    env: ManagerBasedEnv, ee_frame_cfg: SceneEntityCfg = SceneEntityCfg("ee_frame")
) -> torch.Tensor:
    """The end-effector point (between the gripper's jaws) in the robot root frame, ``(num_envs, 3)``."""
    return ee_pose_in_robot_root_frame(env, ee_frame_cfg)[:, :3]


def ee_orientation_in_robot_root_frame(
    env: ManagerBasedEnv, ee_frame_cfg: SceneEntityCfg = SceneEntityCfg("ee_frame")
) -> torch.Tensor:
    """The end-effector frame's orientation ``(qx, qy, qz, qw)`` in the robot root frame, ``(num_envs, 4)``."""
    return ee_pose_in_robot_root_frame(env, ee_frame_cfg)[:, 3:]


def object_orientation_in_robot_root_frame(
    env: ManagerBasedEnv,
    robot_cfg: SceneEntityCfg = SceneEntityCfg("robot"),
    object_cfg: SceneEntityCfg = SceneEntityCfg("object"),
) -> torch.Tensor:
    """The object's orientation ``(qx, qy, qz, qw)`` in the robot root frame, ``(num_envs, 4)``."""
    return object_pose_in_robot_root_frame(env, robot_cfg, object_cfg)[:, 3:]
