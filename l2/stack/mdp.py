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
