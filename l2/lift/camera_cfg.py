"""Cameras of the lift-cube task: a fixed third-person ``table_cam`` and a ``wrist_cam`` on the hand (where
on the hand is each robot's, ``config/<robot>/``).

Both render RGB (uint8, one frame per control step) through Isaac Lab's renderer presets: Newton's Warp
ray tracer by default (kit-less, CPU or CUDA), ``renderer=isaacsim_rtx`` for Isaac Sim's RTX renderer
(needs Kit and a GPU). Their images form the ``cameras`` observation group, kept apart from the
``policy`` state group so that a PPO policy never takes images as input; every source records both
groups as ``obs/<term>``. ``presets=no_cameras`` removes the sensors and the group (state-only
collection, RL training).
"""

from __future__ import annotations

import isaaclab.sim as sim_utils
import isaaclab.utils.math as math_utils
import numpy as np
import torch
from isaaclab.envs import mdp
from isaaclab.managers import ObservationGroupCfg as ObsGroup
from isaaclab.managers import ObservationTermCfg as ObsTerm
from isaaclab.managers import SceneEntityCfg
from isaaclab.sensors import CameraCfg
from isaaclab.utils import configclass
from isaaclab_tasks.utils import PresetCfg, preset
from isaaclab_tasks.utils.presets import MultiBackendRendererCfg

CAMERA_HEIGHT = 224
CAMERA_WIDTH = 224
"""Default image size (px). Change one camera with ``env.scene.table_cam.height=H env.scene.table_cam.width=W``
(even sizes: yuv420p GR00T videos need them)."""
NO_CAMERAS = "no_cameras"
"""Name of the preset that turns the cameras off: ``presets=no_cameras``."""

TABLE_CAM_EYE = (1.05, 0.2, 0.75)
TABLE_CAM_TARGET = (0.5, 0.0, 0.3)
"""The fixed camera, in the env frame (robot base at the origin): in front of the robot and to its left,
looking down 38 deg at the workspace. At 224 px the hand at its reset pose and the cube at every reset
pose stay >= 17 px inside the frame and the cube is 14-21 px wide; the horizon stays out of view."""


def look_at(eye, target, up=(0.0, 0.0, 1.0)) -> tuple[float, float, float, float]:
    """Quaternion (x, y, z, w) of a camera at ``eye`` looking at ``target`` in Isaac Lab's ``"world"``
    camera convention (+X forward, +Z up), its up axis as close to ``up`` as the view allows."""
    forward = np.subtract(target, eye, dtype=float)
    forward /= np.linalg.norm(forward)
    left = np.cross(up, forward)
    left /= np.linalg.norm(left)
    rot = np.stack([forward, left, np.cross(forward, left)], axis=1)  # columns: the camera's axes
    return tuple(float(v) for v in math_utils.quat_from_matrix(torch.tensor(rot)))


def rgb_camera(prim_path: str, eye, target, up=(0.0, 0.0, 1.0), near: float = 0.05, **kwargs) -> CameraCfg:
    """An RGB camera at ``eye`` (in its parent's frame) looking at ``target``, rendered every control step."""
    return CameraCfg(
        prim_path=prim_path,
        height=CAMERA_HEIGHT,
        width=CAMERA_WIDTH,
        data_types=["rgb"],
        update_period=0.0,
        spawn=sim_utils.PinholeCameraCfg(focal_length=24.0, horizontal_aperture=20.955, clipping_range=(near, 4.0)),
        offset=CameraCfg.OffsetCfg(pos=eye, rot=look_at(eye, target, up), convention="world"),
        renderer_cfg=MultiBackendRendererCfg(),  # Newton Warp by default; renderer=isaacsim_rtx under Kit
        **kwargs,
    )


TABLE_CAM_CFG = rgb_camera("{ENV_REGEX_NS}/table_cam", TABLE_CAM_EYE, TABLE_CAM_TARGET, near=0.1)


@configclass
class TableCamCfg(PresetCfg):
    default: CameraCfg = TABLE_CAM_CFG
    no_cameras: CameraCfg | None = None


def wrist_cam_cfg(on_robot: PresetCfg) -> PresetCfg:
    """The wrist camera, ``on_robot`` one alternative per robot preset, removed by ``presets=no_cameras``.
    Nested so that a robot preset and ``no_cameras`` are not two alternatives of one preset."""
    return preset(default=on_robot, no_cameras=None)


def image(sensor: str) -> ObsTerm:
    """The uint8 RGB image of the scene's camera ``sensor``, (num_envs, H, W, 3)."""
    return ObsTerm(func=mdp.image_rgb, params={"sensor_cfg": SceneEntityCfg(sensor), "normalize": False})


@configclass
class ImagesObsCfg(ObsGroup):
    """A group of camera images, each recorded as ``obs/<term>``; no noise, terms kept apart."""

    def __post_init__(self):
        self.enable_corruption = False
        self.concatenate_terms = False


@configclass
class CamerasObsCfg(ImagesObsCfg):
    table_cam = image("table_cam")
    wrist_cam = image("wrist_cam")


def cameras_obs_group(group: ImagesObsCfg | None = None) -> PresetCfg:
    """The ``cameras`` observation group (the table and wrist cameras unless ``group``), removed by
    ``presets=no_cameras``."""
    return preset(default=group or CamerasObsCfg(), no_cameras=None)
