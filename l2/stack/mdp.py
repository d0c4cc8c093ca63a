"""Reward terms of the stack's RL variant (Isaac Lab's stack task has none: it is a demonstration task)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from isaaclab.managers import SceneEntityCfg

if TYPE_CHECKING:
    from isaaclab.envs import ManagerBasedRLEnv


def ee_near_cube(
    env: ManagerBasedRLEnv,
    std: float,
    cube_cfg: SceneEntityCfg = SceneEntityCfg("cube_2"),
    ee_frame_cfg: SceneEntityCfg = SceneEntityCfg("ee_frame"),
) -> torch.Tensor:
    """``1 - tanh(d / std)`` of the distance ``d`` (m) from the ``ee_frame`` sensor's first target (the grasp point)
    to the cube's centre."""
    ee = env.scene[ee_frame_cfg.name].data.target_pos_w.torch[:, 0, :]
    cube = env.scene[cube_cfg.name].data.root_pos_w.torch
    return 1.0 - torch.tanh(torch.linalg.vector_norm(ee - cube, dim=-1) / std)


def _jaw(env: ManagerBasedRLEnv, robot_cfg: SceneEntityCfg) -> torch.Tensor:
    """The jaw joint's position (rad; the cfg's ``gripper_joint_names``, 0 closed)."""
    robot = env.scene[robot_cfg.name]
    ids, _ = robot.find_joints(env.cfg.gripper_joint_names)
    return robot.data.joint_pos.torch[:, ids[0]]


def cube_held(
    env: ManagerBasedRLEnv,
    cube_cfg: SceneEntityCfg,
    max_jaw: float,
    max_distance: float = 0.05,
    robot_cfg: SceneEntityCfg = SceneEntityCfg("robot"),
    ee_frame_cfg: SceneEntityCfg = SceneEntityCfg("ee_frame"),
) -> torch.Tensor:
    """Whether the cube is between the jaws, closed on it: the grasp point (the ``ee_frame`` sensor's first target)
    within ``max_distance`` (m) of its centre and the jaw below ``max_jaw`` (rad)."""
    ee = env.scene[ee_frame_cfg.name].data.target_pos_w.torch[:, 0, :]
    cube = env.scene[cube_cfg.name].data.root_pos_w.torch
    near = torch.linalg.vector_norm(ee - cube, dim=-1) < max_distance
    return near & (_jaw(env, robot_cfg) < max_jaw)


def cube_released_on(
    env: ManagerBasedRLEnv,
    upper_cfg: SceneEntityCfg,
    lower_cfg: SceneEntityCfg,
    min_jaw: float,
    edge: float,
    xy_threshold: float = 0.04,
    height_threshold: float = 0.005,
    robot_cfg: SceneEntityCfg = SceneEntityCfg("robot"),
) -> torch.Tensor:
    """Whether the upper cube rests on the lower one (centres within ``xy_threshold`` across, one ``edge`` ±
    ``height_threshold`` apart in height) and the jaw has let it go (above ``min_jaw``, rad)."""
    diff = env.scene[upper_cfg.name].data.root_pos_w.torch - env.scene[lower_cfg.name].data.root_pos_w.torch
    on = (torch.linalg.vector_norm(diff[:, :2], dim=-1) < xy_threshold) & ((diff[:, 2] - edge).abs() < height_threshold)
    return on & (_jaw(env, robot_cfg) > min_jaw)
