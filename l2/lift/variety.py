"""The ``variety`` preset (``presets=variety``): three cubes of palette colors, one of them the target that the
instruction names, and a scene drawn anew every episode.

The target is always the scene's ``object`` (every term of the task, the success rule, the scripted state
machine and ``obs/object_position`` keep meaning "the cube to lift"); what is drawn per episode is which color
it wears, and so which of the three colored cubes the instruction asks for, with the distractors in the other
colors at positions that do not overlap. Each episode also draws the colors' jitter, a table mat's color, a
shade on the robot's links and a small offset of the table camera's pose. Every sampled value is kept per env
(:attr:`randomize_scene.params`), written with each demo and applied again by a replay
(:meth:`randomize_scene.apply`), so that a replayed demo shows the same images.

Colors are written into Newton's per-shape color buffer, which the Warp renderer reads (kit-less, CPU or CUDA).
The renderer has no per-env lights: light direction and intensity are not varied.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from isaaclab.managers import ManagerTermBase, SceneEntityCfg
from isaaclab.utils.math import quat_from_euler_xyz, quat_mul, subtract_frame_transforms

if TYPE_CHECKING:
    from isaaclab.envs import ManagerBasedEnv
    from isaaclab.managers import EventTermCfg

VARIETY = "variety"
"""Name of the preset: ``presets=variety``."""
PALETTE: dict[str, tuple[float, float, float]] = {
    "red": (0.80, 0.08, 0.08),
    "green": (0.10, 0.60, 0.15),
    "blue": (0.08, 0.22, 0.85),
    "yellow": (0.90, 0.80, 0.08),
    "orange": (0.95, 0.42, 0.04),
    "purple": (0.50, 0.12, 0.70),
}
"""Named cube colors (linear RGB); each episode draws three distinct names."""
PHRASINGS = (
    "Pick up the {color} cube and lift it.",
    "Lift the {color} cube.",
    "Grab the {color} cube and raise it off the table.",
    "Pick the {color} cube up.",
)
DEFAULT_INSTRUCTION = "Pick up the cube and lift it."
"""What every episode of the plain scene is asked (one red cube)."""
COLOR_JITTER = 0.06
"""Each RGB channel of a cube's color moves up to this much around its palette value."""
CUBE_AREA = {"x": (0.40, 0.60), "y": (-0.15, 0.15)}
"""Where the three cubes' centers are drawn (env frame, m): reachable, and inside the table camera's view."""
MIN_CUBE_GAP = 0.10
"""Least distance between two cubes' centers (m): an open gripper (8 cm) fits down beside the target."""
MAT_COLORS: dict[str, tuple[float, float, float]] = {
    "grey": (0.40, 0.40, 0.40),
    "oak": (0.50, 0.33, 0.18),
    "walnut": (0.26, 0.16, 0.09),
    "slate": (0.20, 0.25, 0.30),
    "sand": (0.62, 0.55, 0.40),
    "felt": (0.10, 0.28, 0.16),
}
"""Table mat colors (linear RGB), each drawn with a brightness factor in :data:`MAT_BRIGHTNESS`."""
MAT_BRIGHTNESS = (0.8, 1.2)
ROBOT_SHADE = (0.75, 1.15)
"""Factor on the robot links' colors."""
CAMERA_JITTER = (0.02, math.radians(2.0))
"""Largest offset of the table camera's position (m, each axis) and rotation (rad, each axis)."""
DISTRACTORS = ("distractor_0", "distractor_1")
CUBES = ("object", *DISTRACTORS)
ENV_NAMESPACES = ("{ENV_REGEX_NS}", "/World/envs/env_[^/]+", "/World/envs/env_.*")
"""How an entity's prim path starts, before and after the scene resolves it."""


def srgb(linear: torch.Tensor) -> torch.Tensor:
    """Newton's shape colors are stored in sRGB (its own writers convert the same way)."""
    linear = linear.clamp(0.0, 1.0)
    return torch.where(linear <= 0.0031308, 12.92 * linear, 1.055 * linear.pow(1.0 / 2.4) - 0.055)


def instruction(params: dict) -> str:
    return PHRASINGS[params["phrasing"]].format(color=params["target_color"])


class randomize_scene(ManagerTermBase):
    """Event term (mode ``reset``): draws an episode's layout, colors, shade and camera offset per env."""

    def __init__(self, cfg: EventTermCfg, env: ManagerBasedEnv):
        super().__init__(cfg, env)
        from isaaclab_newton.physics import NewtonManager

        self._newton = NewtonManager
        labels = list(NewtonManager.get_model().shape_label)
        self._shapes = {name: self._entity_shapes(env, name, labels) for name in (*CUBES, "mat", "robot")}
        colors = self._colors()
        self._robot_base = colors[self._shapes["robot"]].clone()
        self.params: list[dict] = [{} for _ in range(env.num_envs)]
        """The current episode's sampled values per env (JSON-able)."""
        self._camera_base: tuple[torch.Tensor, torch.Tensor] | None = None

    @staticmethod
    def _entity_shapes(env, name: str, labels: list[str]) -> torch.Tensor:
        """(num_envs, shapes per env) indices of a scene entity's shapes in Newton's model (by their prim paths)."""
        prim_path = getattr(env.cfg.scene, name).prim_path  # "{ENV_REGEX_NS}/X", or its regex once the scene is built
        namespace = next(ns for ns in ENV_NAMESPACES if prim_path.startswith(ns))
        pattern = re.compile(r"/World/envs/env_(\d+)" + re.escape(prim_path[len(namespace) :]))
        per_env: list[list[int]] = [[] for _ in range(env.num_envs)]
        for shape, label in enumerate(labels):
            m = pattern.match(label)
            if m and label[m.end() : m.end() + 1] in ("", "/"):
                per_env[int(m.group(1))].append(shape)
        if not per_env[0] or len({len(s) for s in per_env}) != 1:
            raise RuntimeError(f"variety: the shapes of {name} differ between envs (or it has none)")
        return torch.tensor(per_env, dtype=torch.long)

    def _colors(self) -> torch.Tensor:
        """Newton's per-shape color buffer, as a torch view (writes reach the renderer)."""
        import warp as wp

        return wp.to_torch(self._newton.get_model().shape_color)

    def __call__(
        self,
        env: ManagerBasedEnv,
        env_ids: torch.Tensor | slice | None,
        cube_area: dict[str, tuple[float, float]] = CUBE_AREA,
        min_cube_gap: float = MIN_CUBE_GAP,
        camera: str = "table_cam",
    ) -> None:
        """``camera``: the scene's fixed camera, jittered per episode."""
        ids = torch.arange(env.num_envs) if env_ids is None or isinstance(env_ids, slice) else env_ids.cpu()
        self.apply(env, ids.tolist(), [self.sample(cube_area, min_cube_gap) for _ in range(len(ids))])

    def sample(self, cube_area: dict[str, tuple[float, float]] = CUBE_AREA, min_cube_gap: float = MIN_CUBE_GAP) -> dict:
        """One episode's values (drawn with torch's generator, which the env's seed seeds); the cubes in
        ``cube_area`` (m, robot base frame), pairwise at least ``min_cube_gap`` apart (each robot's workspace)."""
        names, (move, turn) = list(PALETTE), CAMERA_JITTER
        picked = torch.randperm(len(names))[:3].tolist()
        rng = lambda lo, hi, n=1: (torch.rand(n) * (hi - lo) + lo).tolist()  # noqa: E731
        colors = {}
        for cube, k in zip(CUBES, picked, strict=True):
            base = torch.tensor(PALETTE[names[k]])
            colors[cube] = (base + (torch.rand(3) * 2 - 1) * COLOR_JITTER).clamp(0, 1).tolist()
        return {
            "target_color": names[picked[0]],
            "distractor_colors": [names[k] for k in picked[1:]],
            "phrasing": int(torch.randint(len(PHRASINGS), (1,))),
            "cube_xy": _layout(cube_area, min_cube_gap),
            "cube_yaw": rng(-math.pi / 4, math.pi / 4, 3),
            "colors": colors,
            "mat": (mat := list(MAT_COLORS)[int(torch.randint(len(MAT_COLORS), (1,)))]),
            "mat_color": (torch.tensor(MAT_COLORS[mat]) * rng(*MAT_BRIGHTNESS)[0]).clamp(0, 1).tolist(),
            "robot_shade": rng(*ROBOT_SHADE)[0],
            "table_cam_offset": rng(-move, move, 3) + rng(-turn, turn, 3),
        }

    def apply(self, env: ManagerBasedEnv, env_ids: Sequence[int], params: Sequence[dict]) -> None:
        """Put these values into the scene of these envs (a reset's draw, or a recorded episode's in a replay)."""
        ids = torch.as_tensor(list(env_ids), dtype=torch.long)
        colors = self._colors()
        for cube_index, cube in enumerate(CUBES):
            asset = env.scene[cube]
            xy = torch.tensor([p["cube_xy"][cube_index] for p in params])
            yaw = torch.tensor([p["cube_yaw"][cube_index] for p in params])
            pose = asset.data.default_root_pose.torch[ids].clone()
            pose[:, :2] = xy.to(pose.device)
            pose[:, :3] += env.scene.env_origins[ids]
            zero = torch.zeros_like(yaw)
            pose[:, 3:7] = quat_from_euler_xyz(zero, zero, yaw).to(pose.device)
            asset.write_root_pose_to_sim_index(root_pose=pose, env_ids=ids.to(pose.device))
            asset.write_root_velocity_to_sim_index(
                root_velocity=torch.zeros(len(ids), 6, device=pose.device), env_ids=ids.to(pose.device)
            )
            rgb = srgb(torch.tensor([p["colors"][cube] for p in params]))
            colors[self._shapes[cube][ids]] = rgb[:, None, :].expand(-1, self._shapes[cube].shape[1], -1)
        mat = srgb(torch.tensor([p["mat_color"] for p in params]))
        colors[self._shapes["mat"][ids]] = mat[:, None, :].expand(-1, self._shapes["mat"].shape[1], -1)
        shade = torch.tensor([p["robot_shade"] for p in params])[:, None, None]
        colors[self._shapes["robot"][ids]] = (self._robot_base[ids] * shade).clamp(0, 1)
        camera = self.cfg.params.get("camera", "table_cam")
        self._move_fixed_camera(env, camera, ids, torch.tensor([p["table_cam_offset"] for p in params]))
        for env_id, p in zip(ids.tolist(), params, strict=True):
            self.params[env_id] = dict(p)

    def _move_fixed_camera(self, env: ManagerBasedEnv, name: str, ids: torch.Tensor, offset: torch.Tensor) -> None:
        if name not in env.scene.sensors:
            return
        camera = env.scene[name]
        cfg = camera.cfg.offset
        if self._camera_base is None:
            pos = torch.tensor(cfg.pos).expand(env.num_envs, 3) + env.scene.env_origins.cpu()
            self._camera_base = (pos, torch.tensor(cfg.rot).expand(env.num_envs, 4))
        pos, rot = self._camera_base
        turn = quat_from_euler_xyz(offset[:, 3], offset[:, 4], offset[:, 5])
        device = env.scene.env_origins.device
        camera.set_world_poses(
            (pos[ids] + offset[:, :3]).to(device),
            quat_mul(turn, rot[ids]).to(device),
            env_ids=ids.to(device),
            convention=cfg.convention,
        )


def _layout(
    cube_area: dict[str, tuple[float, float]] = CUBE_AREA, min_cube_gap: float = MIN_CUBE_GAP
) -> list[list[float]]:
    """Three cube centers in ``cube_area``, pairwise at least ``min_cube_gap`` apart (rejection draws)."""
    (x0, x1), (y0, y1) = cube_area["x"], cube_area["y"]
    while True:
        xy = torch.rand(3, 2) * torch.tensor([x1 - x0, y1 - y0]) + torch.tensor([x0, y0])
        if bool((torch.pdist(xy) >= min_cube_gap).all()):
            return xy.tolist()


def scene_term(env: ManagerBasedEnv) -> randomize_scene | None:
    """The env's variety event term (None on the plain scene)."""
    manager = getattr(env, "event_manager", None)
    if manager is None or "randomize_scene" not in manager.active_terms.get("reset", []):
        return None
    return manager.get_term_cfg("randomize_scene").func


def episode_language(env: ManagerBasedEnv, env_id: int) -> tuple[str, str | None]:
    """``(instruction, scene parameters as JSON or None)`` of env ``env_id``'s current episode."""
    term = scene_term(env)
    if term is None or not term.params[env_id]:
        return getattr(env.cfg, "instruction", DEFAULT_INSTRUCTION), None
    params = term.params[env_id]
    return instruction(params), json.dumps(params, sort_keys=True)


def distractor_positions(env: ManagerBasedEnv, robot_cfg: SceneEntityCfg = SceneEntityCfg("robot")) -> torch.Tensor:
    """The distractor cubes' positions in the robot root frame, ``(num_envs, 3 * number of distractors)``."""
    robot = env.scene[robot_cfg.name].data
    out = []
    for name in DISTRACTORS:
        data = env.scene[name].data
        pos, _ = subtract_frame_transforms(robot.root_pos_w.torch, robot.root_quat_w.torch, data.root_pos_w.torch)
        out.append(pos)
    return torch.cat(out, dim=-1)
