"""Vectorized pick-and-lift state machine emitting IK-absolute actions for the lift-cube task.

Every env has its own state and timer in torch tensors on the env's device; one call computes the
actions of all envs at once (no Python loop over envs). Poses are in the robot root frame and
quaternions are scalar-last (x, y, z, w), like the task's action.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from isaaclab.utils.math import euler_xyz_from_quat, quat_from_angle_axis, quat_mul, wrap_to_pi, yaw_quat

if TYPE_CHECKING:
    from isaaclab.envs import ManagerBasedEnv

GRIPPER_OPEN = 1.0
GRIPPER_CLOSE = -1.0
TOP_DOWN = (1.0, 0.0, 0.0, 0.0)
"""The Franka's end effector pointing down (180 deg about x), fingers closing along the base's y axis."""


class PickState(enum.IntEnum):
    REST = 0
    APPROACH = 1
    DESCEND = 2
    GRASP = 3
    LIFT = 4
    HOLD = 5


@dataclass
class PickAndLiftCfg:
    """Timings (s) and thresholds (m) of the state machine."""

    dt: float = 0.02
    """Control period of the env (sim dt x decimation)."""
    rest_time: float = 0.1
    approach_height: float = 0.10
    """Height above the cube's centre before descending."""
    grasp_height: float = 0.03
    """End-effector height relative to the cube's centre when closing. The fingertips reach about 5 cm
    below the end-effector point, so a cube resting on the ground is taken 3 cm below it (lower, the
    fingertips would push against the ground and the cube would be held by the tips only)."""
    lift_height: float = 0.20
    """Target height of the end effector above the robot base while lifting."""
    position_threshold: float = 0.01
    approach_timeout: float = 2.0
    descend_timeout: float = 1.5
    grasp_time: float = 0.4
    lift_timeout: float = 2.0
    top_down: tuple[float, float, float, float] = TOP_DOWN
    """The end-effector frame's orientation (x, y, z, w; robot root frame) pointing down, before the yaw that
    follows the cube's: each robot's frame has its own."""
    max_speed: float | None = None
    """Fastest the commanded position moves (m/s) from DESCEND on (descent, grasp, lift), starting where the end
    effector is when DESCEND begins; None: each state's target at once. An arm that follows one IK step per control
    step (the SO-101's joint-position action) overshoots a target that jumps by centimetres, and shakes a light cube
    out of its jaws. The approach is not limited: the IK brings position and orientation to the cube together."""
    holding_gripper: tuple[float, float] = (0.02, 0.05)
    """The gripper joints' positions (summed; m or rad) of a gripper closed on the cube: below, closed on nothing.
    The reactive expert (``l2/rl/expert.py``), which has no memory of its phase, reads the grasp from them."""
    open_gripper: float = 0.075
    """The gripper joints' positions (summed) below which a gripper is no longer open (closing or closed)."""
    holding_distance: float = 0.045
    """End-effector point to cube centre (m) within which a gripper closed on the cube holds it."""
    descend_xy_range: float = 0.015
    """The reactive expert lowers the end effector from ``approach_height`` to ``grasp_height`` as its horizontal
    distance to the cube shrinks over this range (m) down to 5 mm."""
    reactive_lift_speed: float | None = None
    """Fastest the reactive expert's target moves (m/s) while it holds the cube; None: :attr:`max_speed`. The
    scripted source lifts at ``max_speed`` and its replays rely on that pace; a policy imitating the reactive expert
    drops fewer cubes when the lift it learns is short and brisk."""


def step_toward(start: torch.Tensor, target: torch.Tensor, max_step: float | torch.Tensor) -> torch.Tensor:
    """Positions ``(N, 3)`` from ``start`` toward ``target``, at most ``max_step`` away (m; or per row, ``(N, 1)``)."""
    step = target - start
    norm = torch.linalg.vector_norm(step, dim=-1, keepdim=True)
    return start + step * torch.clamp(max_step / norm.clamp(min=1e-9), max=1.0)


def pick_and_lift_cfg(task: str, dt: float) -> PickAndLiftCfg:
    """The task's scripted-expert parameters at the control period ``dt``: its gym registration's
    ``pick_and_lift_cfg_entry_point`` (as Isaac Lab registers agent cfgs), else :class:`PickAndLiftCfg`'s defaults
    (the Franka's)."""
    import gymnasium as gym
    from isaaclab_tasks.utils.parse_cfg import load_cfg_from_registry

    if ENTRY_POINT not in gym.spec(task).kwargs:
        return PickAndLiftCfg(dt=dt)
    return dataclasses.replace(load_cfg_from_registry(task, ENTRY_POINT), dt=dt)


ENTRY_POINT = "pick_and_lift_cfg_entry_point"


def pick_and_lift_expert(env: ManagerBasedEnv, task: str) -> PickAndLiftStateMachine:
    """The lift tasks' scripted expert (their ``scripted_expert_entry_point``): the state machine for all of
    ``env``'s envs with the task's :func:`pick_and_lift_cfg`."""
    return PickAndLiftStateMachine(env.num_envs, env.device, pick_and_lift_cfg(task, env.step_dt))


class PickAndLiftStateMachine:
    """Per-env states REST -> APPROACH -> DESCEND -> GRASP -> LIFT -> HOLD (held until the env resets)."""

    def __init__(self, num_envs: int, device: str | torch.device, cfg: PickAndLiftCfg | None = None):
        self.cfg = cfg or PickAndLiftCfg()
        self.num_envs = num_envs
        self.device = torch.device(device)
        self.state = torch.zeros(num_envs, dtype=torch.long, device=self.device)
        self.time_in_state = torch.zeros(num_envs, device=self.device)
        self.grasp_pose = torch.zeros(num_envs, 7, device=self.device)
        """End-effector pose latched when closing the gripper (the lift keeps its x, y and orientation)."""
        self._top_down = torch.tensor(self.cfg.top_down, device=self.device).expand(num_envs, 4)
        self._z_axis = torch.tensor((0.0, 0.0, 1.0), device=self.device).expand(num_envs, 3)
        self.commanded_pos = torch.full((num_envs, 3), math.nan, device=self.device)
        """The last commanded position (:attr:`PickAndLiftCfg.max_speed`); NaN before DESCEND."""

    def reset(self, env_ids: Sequence[int] | torch.Tensor | None = None) -> None:
        """Restart the given envs (all when None) from REST; other envs are untouched."""
        ids = slice(None) if env_ids is None else torch.as_tensor(env_ids, device=self.device, dtype=torch.long)
        self.state[ids] = PickState.REST
        self.time_in_state[ids] = 0.0
        self.grasp_pose[ids] = 0.0
        self.commanded_pos[ids] = math.nan

    def grasp_orientation(self, cube_quat: torch.Tensor) -> torch.Tensor:
        """Top-down orientation whose yaw follows the cube's, folded into [-45, 45] deg (the cube is square)."""
        yaw = euler_xyz_from_quat(yaw_quat(cube_quat))[2]
        yaw = wrap_to_pi(yaw)
        yaw = torch.remainder(yaw + math.pi / 4, math.pi / 2) - math.pi / 4
        return quat_mul(quat_from_angle_axis(yaw, self._z_axis), self._top_down)

    def act(self, env: ManagerBasedEnv) -> torch.Tensor:
        """:meth:`compute` on the env's current cube and end-effector poses (read from its scene)."""
        from l2.lift import mdp

        cube = mdp.object_pose_in_robot_root_frame(env)
        return self.compute(mdp.ee_position_in_robot_root_frame(env), cube[:, :3], cube[:, 3:])

    def compute(self, ee_pos: torch.Tensor, cube_pos: torch.Tensor, cube_quat: torch.Tensor) -> torch.Tensor:
        """Advance every env by one control step and return actions ``(num_envs, 8)``.

        Args:
            ee_pos: end-effector position (between the finger pads), robot root frame, ``(N, 3)``.
            cube_pos: cube centre, robot root frame, ``(N, 3)``.
            cube_quat: cube orientation (x, y, z, w), robot root frame, ``(N, 4)``.
        """
        cfg = self.cfg
        s = self.state
        self.time_in_state += cfg.dt

        above = cube_pos.clone()
        above[:, 2] += cfg.approach_height
        at_grasp = cube_pos.clone()
        at_grasp[:, 2] += cfg.grasp_height
        grasp_quat = self.grasp_orientation(cube_quat)

        # Transitions (decided on the previous target, so the emitted action follows the new state).
        reached_above = torch.linalg.vector_norm(ee_pos - above, dim=-1) < cfg.position_threshold
        reached_grasp = torch.linalg.vector_norm(ee_pos - at_grasp, dim=-1) < cfg.position_threshold
        t = self.time_in_state
        advance = torch.zeros_like(s, dtype=torch.bool)
        advance |= (s == PickState.REST) & (t >= cfg.rest_time)
        advance |= (s == PickState.APPROACH) & (reached_above | (t >= cfg.approach_timeout))
        advance |= (s == PickState.DESCEND) & (reached_grasp | (t >= cfg.descend_timeout))
        advance |= (s == PickState.GRASP) & (t >= cfg.grasp_time)
        advance |= (s == PickState.LIFT) & (t >= cfg.lift_timeout)
        entering_grasp = advance & (s == PickState.DESCEND)
        self.grasp_pose[entering_grasp] = torch.cat([at_grasp, grasp_quat], dim=-1)[entering_grasp]
        self.state = torch.where(advance, torch.clamp(s + 1, max=PickState.HOLD), s)
        self.time_in_state = torch.where(advance, torch.zeros_like(t), t)
        s = self.state

        # Targets per state.
        pos = torch.where((s <= PickState.APPROACH).unsqueeze(-1), above, at_grasp)
        quat = grasp_quat.clone()
        latched = s >= PickState.GRASP
        pos = torch.where(latched.unsqueeze(-1), self.grasp_pose[:, :3], pos)
        quat = torch.where(latched.unsqueeze(-1), self.grasp_pose[:, 3:], quat)
        lifting = s >= PickState.LIFT
        pos[:, 2] = torch.where(lifting, torch.full_like(pos[:, 2], cfg.lift_height), pos[:, 2])
        if cfg.max_speed is not None:
            pos = self._rate_limited(pos, ee_pos, cfg.max_speed * cfg.dt, s >= PickState.DESCEND)
        gripper = torch.where(latched, GRIPPER_CLOSE, GRIPPER_OPEN).to(pos.dtype).unsqueeze(-1)
        return torch.cat([pos, quat, gripper], dim=-1)

    def _rate_limited(
        self, target: torch.Tensor, ee_pos: torch.Tensor, max_step: float, active: torch.Tensor
    ) -> torch.Tensor:
        """``target`` where ``active`` is False; elsewhere reached from the last commanded position (the end
        effector's on the first active step) by at most ``max_step`` (m)."""
        limited = step_toward(torch.where(self.commanded_pos.isnan(), ee_pos, self.commanded_pos), target, max_step)
        active = active.unsqueeze(-1)
        self.commanded_pos = torch.where(active, limited, math.nan)
        return torch.where(active, limited, target)
