"""Termination terms of the lift-cube task."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from isaaclab.managers import SceneEntityCfg

if TYPE_CHECKING:
    from isaaclab.envs import ManagerBasedRLEnv


def cube_lifted_and_held(
    env: ManagerBasedRLEnv,
    minimal_height: float = 0.10,
    max_ee_distance: float = 0.04,
    object_cfg: SceneEntityCfg = SceneEntityCfg("object"),
    robot_cfg: SceneEntityCfg = SceneEntityCfg("robot"),
    ee_frame_cfg: SceneEntityCfg = SceneEntityCfg("ee_frame"),
) -> torch.Tensor:
    """Success: the cube's centre is at least ``minimal_height`` above the robot base and within
    ``max_ee_distance`` of the end-effector point (so it is held in the gripper, not thrown)."""
    cube_pos = env.scene[object_cfg.name].data.root_pos_w.torch
    base_z = env.scene[robot_cfg.name].data.root_pos_w.torch[:, 2]
    ee_pos = env.scene[ee_frame_cfg.name].data.target_pos_w.torch[:, 0]
    lifted = cube_pos[:, 2] - base_z >= minimal_height
    held = torch.linalg.vector_norm(cube_pos - ee_pos, dim=-1) <= max_ee_distance
    return lifted & held
