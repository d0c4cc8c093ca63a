"""The scripted stacking expert of the SO-101 cube stack (its ``scripted_expert_entry_point``).

A vectorized state machine, every env's phase and timer in torch tensors, one call for all envs: it picks the red
``cube_2`` and places it on the blue ``cube_1``, then picks the green ``cube_3`` and places it on ``cube_2``, rises
and opens the jaw fully, so that the task's own ``success`` (``cubes_stacked``) ends the episode. It commands the
grasp point's pose in the robot root frame and the jaw; ``TaskSpaceDriver`` turns them into the env's action (the
joint variant records the joint targets its pose IK gives).

Which cube comes next is read from the scene each time the grasp point is up and free (the end of
:attr:`Phase.RETREAT`): a cube dropped on the way, or a stack that fell, is picked again.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from isaaclab.managers import SceneEntityCfg
from isaaclab.utils.math import quat_apply, quat_from_angle_axis, quat_mul, wrap_to_pi

from l2.recording.task_space import fold_yaw, yaw_of
from l2.scripted.state_machine import step_toward

if TYPE_CHECKING:
    from isaaclab.envs import ManagerBasedRLEnv

CUBES = ("cube_1", "cube_2", "cube_3")
"""Bottom to top."""


class Phase(enum.IntEnum):
    START = 0
    """Up from the reset pose (over the cubes), the jaw closed as it starts."""
    APPROACH = 1
    """Over the cube to pick, the jaw part-open."""
    DESCEND = 2
    GRASP = 3
    LIFT = 4
    CARRY = 5
    """Over the cube to place on, at the travel height."""
    LOWER = 6
    RELEASE = 7
    """The jaw back to part-open, the grasp point still."""
    RETREAT = 8
    """Straight up; then the next cube, or :attr:`OPEN` when the stack is complete."""
    OPEN = 9
    """The jaw fully open, held until the task's success ends the episode."""


@dataclass
class StackExpertCfg:
    """Timings (s), heights and distances (m), speeds (m/s, rad/s) and jaw angles (rad) of the stacking expert."""

    dt: float = 0.05
    cube_edge: float = 0.0477
    approach_jaw: float = 0.85
    """The jaw while approaching and after a release: 15 mm clear of the cube, narrower than fully open (1.745),
    which sweeps the cubes beside it."""
    grasp_height: float = 0.002
    """Grasp point (between the jaw pads) above the cube's centre when closing: the cube hangs from the pads."""
    grasp_shift: float = 0.007
    """Grasp point from the cube's centre toward the fixed jaw when closing: the grasp point is midway between pads
    40 mm apart, and the fixed pad would land on a 47.7 mm cube's edge (3 mm clear of its face here)."""
    max_roll: float = 2.0
    """Closing directions this far (rad) from the arm's heading or nearer only: the wrist roll's limits are about
    ±2.7 rad, and near them the pose IK turns the whole arm instead and misses the cube by centimetres."""
    neighbour_range: tuple[float, float] = (0.08, 0.13)
    """Centre distances (m) of another cube below which it counts fully, above which not at all, when choosing which
    pair of faces the jaw closes on (the open moving jaw, and to a lesser degree the fixed one, away from it)."""
    travel_clearance: float = 0.06
    """Grasp point above the top of the cube to place on while moving over the table (the travel height)."""
    approach_height: float = 0.06
    """Grasp point above the centre of the last cube while approaching it farther than :attr:`stack_radius` from the
    stack (nearer, and for the first cube, at the travel height)."""
    stack_radius: float = 0.09
    place_clearance: float = 0.003
    """Held cube's bottom above the top of the cube it is placed on when the jaw opens."""
    start_height: float = 0.12
    """Grasp point height the reset pose rises to before the jaw opens."""
    travel_speed: float = 0.15
    carry_speed: float = 0.1
    lift_speed: float = 0.1
    slow_speed: float = 0.04
    """The last :attr:`slow_zone` of a descent onto a cube or of a lowering onto the stack."""
    slow_zone: float = 0.03
    stall_height: float = 0.003
    """Grasp point this far above its commanded height while lowering with the held cube's bottom at the top of
    the cube below: it sits on it."""
    roll_speed: float = 2.0
    position_threshold: float = 0.008
    move_timeout: float = 3.0
    grasp_time: float = 0.8
    release_time: float = 0.6
    release_lift: float = 0.003
    """Grasp point raised this much when the jaw opens: the arm no longer presses the stack (soft contacts give)."""
    release_retract: float = 0.03
    """Grasp point drawn back this much along the jaws once the jaw is open (:attr:`release_time` / 2): the pads
    slide off the placed cube's faces, where rising straight up with the jaws tilted drags it along."""
    holding_distance: float = 0.03
    """Grasp point to held cube's centre beyond which the cube counts as dropped."""
    settled_speed: float = 0.02
    """The stack is judged (what to pick next, or done) once every cube is slower than this (m/s)."""
    stacked_xy: float = 0.03
    """A cube sits on another when their centres are this close horizontally, one edge (± :attr:`stacked_dz`) above
    it."""
    stacked_dz: float = 0.008
    straight_down_reach: tuple[float, ...] = (0.15, 0.20, 0.25, 0.30, 0.33)
    """Distances from the base (m) at which the grasp point's highest straight-down (jaws vertical) pose is
    :attr:`straight_down_z`; above it the jaws tilt away from the base, as far as the wrist flex's limit needs."""
    straight_down_z: tuple[float, ...] = (0.045, 0.075, 0.075, 0.05, 0.01)
    tilt_per_height: float = 450.0
    """Forward tilt (deg) per metre above the highest straight-down pose."""
    max_tilt: float = 40.0


def interp(x: torch.Tensor, xs: Sequence[float], ys: Sequence[float]) -> torch.Tensor:
    """Piecewise-linear ``ys(xs)`` at ``x``, extrapolated from the end segments."""
    out = torch.full_like(x, ys[0])
    for i in range(len(xs) - 1):
        seg = ys[i] + (x - xs[i]) * (ys[i + 1] - ys[i]) / (xs[i + 1] - xs[i])
        inside = (x >= xs[i]) if i else torch.ones_like(x, dtype=torch.bool)
        out = torch.where(inside, seg, out)
    return out


class StackExpert:
    """Per-env phases :class:`Phase` of stage 0 (``cube_2`` onto ``cube_1``) and stage 1 (``cube_3`` onto
    ``cube_2``)."""

    def __init__(self, env: ManagerBasedRLEnv, cfg: StackExpertCfg | None = None):
        from l2.recording.task_space import shadow_ik_term

        self.cfg = cfg or StackExpertCfg(dt=env.step_dt)
        n, device = env.num_envs, torch.device(env.device)
        self.num_envs, self.device = n, device
        self.ik = shadow_ik_term(env)  # its frame is the grasp point
        opened, closed = env.cfg.gripper_targets
        self.jaw_approach = -1.0 + 2.0 * (self.cfg.approach_jaw - closed) / (opened - closed)
        self._z = torch.tensor((0.0, 0.0, 1.0), device=device).expand(n, 3)
        self._y = torch.tensor((0.0, 1.0, 0.0), device=device).expand(n, 3)
        self.phase = torch.zeros(n, dtype=torch.long, device=device)
        self.stage = torch.zeros(n, dtype=torch.long, device=device)
        self.time_in_phase = torch.zeros(n, device=device)
        self.commanded_pos = torch.full((n, 3), math.nan, device=device)
        self.commanded_roll = torch.zeros(n, device=device)
        """The closing direction's angle from the arm's heading (rad)."""
        self.latched_pos = torch.zeros(n, 3, device=device)
        self.place_goal = torch.zeros(n, 3, device=device)
        """Where :attr:`Phase.LOWER` takes the grasp point, fixed when it starts."""
        self.grasp_yaw = torch.zeros(n, device=device)
        """The closing direction chosen for the cube being picked (:meth:`pick_yaw`)."""
        self.start_quat = torch.zeros(n, 4, device=device)
        self.commanded_quat = torch.zeros(n, 4, device=device)
        self._down = torch.tensor((0.0, 0.0, -1.0), device=device).expand(n, 3)
        self.target = torch.zeros(n, 3, device=device)
        """Each env's position target in its phase, before the rate limit."""

    def reset(self, env_ids: Sequence[int] | torch.Tensor | None = None) -> None:
        """Restart the given envs (all when None) from :attr:`Phase.START`."""
        ids = slice(None) if env_ids is None else torch.as_tensor(env_ids, device=self.device, dtype=torch.long)
        self.phase[ids] = Phase.START
        self.stage[ids] = 0
        self.time_in_phase[ids] = 0.0
        self.commanded_pos[ids] = math.nan

    def _cubes(self, env: ManagerBasedRLEnv) -> tuple[torch.Tensor, torch.Tensor]:
        """The cubes' centres ``(N, 3, 3)`` and yaws ``(N, 3)`` in the robot root frame."""
        from l2.lift.mdp import object_pose_in_robot_root_frame

        poses = torch.stack([object_pose_in_robot_root_frame(env, object_cfg=SceneEntityCfg(c)) for c in CUBES], 1)
        return poses[..., :3], yaw_of(poses[..., 3:].reshape(-1, 4)).reshape(-1, len(CUBES))

    def _on(self, upper: torch.Tensor, lower: torch.Tensor) -> torch.Tensor:
        """Whether the cube centred at ``upper`` sits on the one at ``lower`` ``(N, 3)``."""
        d = upper - lower
        xy = torch.linalg.vector_norm(d[:, :2], dim=-1)
        return (xy < self.cfg.stacked_xy) & ((d[:, 2] - self.cfg.cube_edge).abs() < self.cfg.stacked_dz)

    def pick_yaw(self, cubes: torch.Tensor, yaws: torch.Tensor) -> torch.Tensor:
        """The closing direction (yaw, rad) for picking the stage's cube: along one of its four face normals, the
        one whose open moving jaw (ahead along it) and fixed jaw (behind) stay clearest of the other cubes, within
        the wrist roll's range."""
        cfg = self.cfg
        rows = torch.arange(self.num_envs, device=self.device)
        pick = cubes[rows, self.stage + 1]
        options = yaws[rows, self.stage + 1].unsqueeze(-1) + torch.arange(4, device=self.device) * (math.pi / 2)
        axis = torch.stack([torch.cos(options), torch.sin(options)], -1)  # (N, 4, 2)
        cost = torch.zeros_like(options)
        near, far = cfg.neighbour_range
        for j in range(len(CUBES)):
            other = cubes[:, j, :2] - pick[:, :2]
            dist = torch.linalg.vector_norm(other, dim=-1)
            weight = ((far - dist) / (far - near)).clamp(0.0, 1.0)
            weight = torch.where(self.stage + 1 == j, 0.0, weight)
            along = (axis * (other / dist.clamp_min(1e-6).unsqueeze(-1)).unsqueeze(1)).sum(-1)
            cost = torch.maximum(cost, weight.unsqueeze(-1) * torch.where(along > 0, along, -0.5 * along))
        roll = wrap_to_pi(options - torch.atan2(pick[:, 1], pick[:, 0]).unsqueeze(-1))
        cost = cost + (roll.abs() > cfg.max_roll) * 10.0 + 0.01 * roll.abs()
        return wrap_to_pi(options.gather(1, cost.argmin(-1, keepdim=True)).squeeze(-1))

    def tilt(self, pos: torch.Tensor) -> torch.Tensor:
        """The jaws' forward tilt (rad, <= 0: away from the base) the wrist needs to put the grasp point at ``pos``."""
        cfg = self.cfg
        r = torch.linalg.vector_norm(pos[:, :2], dim=-1)
        above = pos[:, 2] - interp(r, cfg.straight_down_reach, cfg.straight_down_z)
        return -torch.deg2rad((above * cfg.tilt_per_height).clamp(0.0, cfg.max_tilt))

    def orientation(self, pos: torch.Tensor, roll: torch.Tensor) -> torch.Tensor:
        """The grasp frame's quaternion at ``pos``: jaws down, tilted forward by :meth:`tilt` in the arm's vertical
        plane (all a 5-joint arm can tilt in), turned about the jaws so that the closing direction is ``roll`` (rad)
        from the arm's heading."""
        heading = quat_from_angle_axis(torch.atan2(pos[:, 1], pos[:, 0]), self._z)
        pitch = quat_from_angle_axis(self.tilt(pos), self._y)
        return quat_mul(heading, quat_mul(pitch, quat_from_angle_axis(roll, self._z)))

    def act(self, env: ManagerBasedRLEnv) -> torch.Tensor:
        """Advance every env by one control step; task-space commands ``(N, 8)``."""
        cfg = self.cfg
        rows = torch.arange(self.num_envs, device=self.device)
        cubes, yaws = self._cubes(env)
        ee_pos, ee_quat = self.ik._compute_frame_pose()
        self.time_in_phase += cfg.dt
        t = self.time_in_phase
        p = self.phase
        first = self.commanded_pos.isnan().any(-1)
        self.latched_pos = torch.where(first.unsqueeze(-1), ee_pos, self.latched_pos)
        self.start_quat = torch.where(first.unsqueeze(-1), ee_quat, self.start_quat)
        start_roll = wrap_to_pi(yaw_of(ee_quat) - torch.atan2(ee_pos[:, 1], ee_pos[:, 0]))
        self.commanded_roll = torch.where(first, start_roll, self.commanded_roll)

        def targets() -> dict[Phase | str, torch.Tensor]:
            """Every phase's position target for the current stage."""
            pick, place = cubes[rows, self.stage + 1], cubes[rows, self.stage]
            # Chosen once per pick (entering APPROACH), then kept on the faces nearest it if the cube turns.
            yaw = torch.where(self.phase == Phase.APPROACH, self.pick_yaw(cubes, yaws), self.grasp_yaw)
            yaw = fold_yaw(yaws[rows, self.stage + 1], yaw)
            shift = torch.stack([torch.cos(yaw), torch.sin(yaw), torch.zeros_like(yaw)], -1) * cfg.grasp_shift
            place_top = place[:, 2] + cfg.cube_edge / 2
            travel_z = (place_top + cfg.travel_clearance).unsqueeze(-1)
            offset = ee_pos - pick  # the grasp point from the held cube's centre
            on_place = torch.cat([place[:, :2] + offset[:, :2], (place_top + cfg.place_clearance).unsqueeze(-1)], -1)
            on_place[:, 2] += cfg.cube_edge / 2 + offset[:, 2]
            up = torch.cat([self.latched_pos[:, :2], torch.maximum(travel_z, self.latched_pos[:, 2:])], -1)
            # To the last cube at the travel height over the stack, lower away from it: the wrist reaches less high
            # near the base.
            cmd = torch.where(self.commanded_pos.isnan(), ee_pos, self.commanded_pos)
            away = torch.linalg.vector_norm(cmd[:, :2] - place[:, :2], dim=-1) > cfg.stack_radius
            away = (away & (self.stage == 1)).unsqueeze(-1)
            approach_z = torch.where(away, pick[:, 2:] + cfg.approach_height, travel_z)
            opened = (self.phase == Phase.RELEASE) & (self.time_in_phase >= cfg.release_time / 2)
            clear = quat_apply(self.commanded_quat, self._down) * (cfg.release_retract * opened.unsqueeze(-1))
            return {
                Phase.START: torch.cat([self.latched_pos[:, :2], torch.full_like(travel_z, cfg.start_height)], -1),
                Phase.APPROACH: torch.cat([pick[:, :2], approach_z], -1),
                Phase.DESCEND: pick - shift + torch.tensor((0.0, 0.0, cfg.grasp_height), device=self.device),
                Phase.GRASP: self.latched_pos,
                Phase.LIFT: up,
                Phase.CARRY: torch.cat([on_place[:, :2], travel_z], -1),
                Phase.LOWER: self.place_goal,
                Phase.RELEASE: self.latched_pos - clear,
                Phase.RETREAT: up,
                Phase.OPEN: self.latched_pos,
                "on_place": on_place,
                "pick_yaw": yaw,
            }

        goal = targets()

        def reached(phase: Phase) -> torch.Tensor:
            target = goal[phase]
            close = torch.linalg.vector_norm(ee_pos - target, dim=-1) < cfg.position_threshold
            done = torch.linalg.vector_norm(self.commanded_pos - target, dim=-1) < 0.002  # NaN: False
            return (p == phase) & ((close & done) | (t >= cfg.move_timeout))

        held = torch.linalg.vector_norm(ee_pos - cubes[rows, self.stage + 1], dim=-1) < cfg.holding_distance
        first_on = self._on(cubes[:, 1], cubes[:, 0])
        complete = first_on & self._on(cubes[:, 2], cubes[:, 1])
        nxt = p.clone()
        nxt = torch.where(reached(Phase.START), Phase.RETREAT, nxt)
        nxt = torch.where(reached(Phase.APPROACH), Phase.DESCEND, nxt)
        nxt = torch.where(reached(Phase.DESCEND), Phase.GRASP, nxt)
        nxt = torch.where((p == Phase.GRASP) & (t >= cfg.grasp_time), Phase.LIFT, nxt)
        nxt = torch.where(reached(Phase.LIFT), Phase.CARRY, nxt)
        nxt = torch.where(reached(Phase.CARRY), Phase.LOWER, nxt)
        held_bottom = cubes[rows, self.stage + 1, 2] - cfg.cube_edge / 2
        on_top = held_bottom - (cubes[rows, self.stage, 2] + cfg.cube_edge / 2) < cfg.place_clearance + 0.002
        stalled = (p == Phase.LOWER) & on_top & (ee_pos[:, 2] - self.commanded_pos[:, 2] > cfg.stall_height)
        nxt = torch.where(reached(Phase.LOWER) | stalled, Phase.RELEASE, nxt)
        nxt = torch.where((p == Phase.RELEASE) & (t >= cfg.release_time), Phase.RETREAT, nxt)
        carrying = (p == Phase.LIFT) | (p == Phase.CARRY) | (p == Phase.LOWER)
        nxt = torch.where(carrying & ~held & (t > 0.3), Phase.RETREAT, nxt)  # dropped: up, then pick it again
        # The hub: up and free, pick what the stack misses next, or open the jaw when it is complete.
        settled = (
            torch.stack(
                [torch.linalg.vector_norm(env.scene[c].data.root_lin_vel_w.torch, dim=-1) for c in CUBES], -1
            ).amax(-1)
            < cfg.settled_speed
        )
        hub = reached(Phase.RETREAT) & settled
        self.stage = torch.where(hub, first_on.long(), self.stage)
        nxt = torch.where(hub, torch.where(complete, Phase.OPEN, Phase.APPROACH), nxt)
        nxt = torch.where((p == Phase.OPEN) & ~complete, Phase.RETREAT, nxt)

        changed = nxt != p
        lowering = changed & (nxt == Phase.LOWER)
        self.place_goal = torch.where(lowering.unsqueeze(-1), goal["on_place"], self.place_goal)
        self.grasp_yaw = torch.where(p == Phase.APPROACH, goal["pick_yaw"], self.grasp_yaw)
        latch = changed & ((nxt == Phase.GRASP) | (nxt == Phase.LIFT) | (nxt >= Phase.RELEASE))
        self.latched_pos = torch.where(latch.unsqueeze(-1), ee_pos, self.latched_pos)
        releasing = changed & (nxt == Phase.RELEASE)
        self.latched_pos[:, 2] += torch.where(releasing, cfg.release_lift, 0.0)
        self.phase = p = nxt
        self.time_in_phase = torch.where(changed, torch.zeros_like(t), t)

        goal = targets()  # the stage may have changed at the hub
        target, speed = self.latched_pos.clone(), torch.zeros_like(t)
        for phase, v in (
            (Phase.GRASP, cfg.slow_speed),
            (Phase.RELEASE, cfg.slow_speed),
            (Phase.OPEN, cfg.slow_speed),
            (Phase.START, cfg.travel_speed),
            (Phase.APPROACH, cfg.travel_speed),
            (Phase.DESCEND, cfg.lift_speed),
            (Phase.LIFT, cfg.lift_speed),
            (Phase.CARRY, cfg.carry_speed),
            (Phase.LOWER, cfg.lift_speed),
            (Phase.RETREAT, cfg.lift_speed),
        ):
            target = torch.where((p == phase).unsqueeze(-1), goal[phase], target)
            speed = torch.where(p == phase, v, speed)
        start = torch.where(self.commanded_pos.isnan(), ee_pos, self.commanded_pos)
        landing = ((p == Phase.DESCEND) | (p == Phase.LOWER)) & (start[:, 2] - target[:, 2] < cfg.slow_zone)
        speed = torch.where(landing, cfg.slow_speed, speed)
        self.target = target
        self.commanded_pos = step_toward(start, target, (speed * cfg.dt).unsqueeze(-1))

        # The closing direction, as its angle from the arm's heading (the wrist roll's share, moved within the roll's
        # range, never across its ends): :meth:`pick_yaw` to pick; sideways over the stack, so that the held cube,
        # tilted with the jaws about it, hinges flat onto the cube below.
        heading = torch.atan2(self.commanded_pos[:, 1], self.commanded_pos[:, 0])
        placing = (p == Phase.CARRY) | (p == Phase.LOWER)
        roll_target = torch.where(
            placing, fold_yaw(torch.full_like(t, math.pi / 2), self.commanded_roll, math.pi), goal["pick_yaw"] - heading
        )
        roll_target = wrap_to_pi(roll_target)
        hold = (p == Phase.START) | (p == Phase.GRASP) | (p == Phase.LIFT) | (p >= Phase.RELEASE)
        roll_target = torch.where(hold, self.commanded_roll, roll_target)
        turn = cfg.roll_speed * cfg.dt
        self.commanded_roll = self.commanded_roll + (roll_target - self.commanded_roll).clamp(-turn, turn)
        quat = self.orientation(self.commanded_pos, self.commanded_roll)
        quat = torch.where((p == Phase.START).unsqueeze(-1), self.start_quat, quat)
        self.commanded_quat = quat

        jaw = torch.full_like(t, self.jaw_approach)
        closed = (p == Phase.START) | (p == Phase.GRASP) | (p == Phase.LIFT) | (p == Phase.CARRY) | (p == Phase.LOWER)
        jaw = torch.where(closed, -1.0, jaw)
        jaw = torch.where(p == Phase.OPEN, 1.0, jaw)
        return torch.cat([self.commanded_pos, quat, jaw.unsqueeze(-1)], dim=-1)


def stack_expert(env: ManagerBasedRLEnv, task: str) -> StackExpert:
    """The stack's ``scripted_expert_entry_point``: :class:`StackExpert` at the env's control period."""
    return StackExpert(env, StackExpertCfg(dt=env.step_dt))
