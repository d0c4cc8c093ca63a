"""The SO-101's cameras, named as SO-101 rigs name them: ``front`` (fixed, facing the arm across the workspace) and
``wrist`` (on the gripper, looking down its jaws)."""

from __future__ import annotations

from isaaclab.sensors import CameraCfg
from isaaclab.utils import configclass, replace
from isaaclab_tasks.utils import PresetCfg

from l2.lift.camera_cfg import ImagesObsCfg, image, rgb_camera

FRONT_EYE = (0.64, 0.0, 0.38)
FRONT_TARGET = (0.12, 0.0, 0.13)
"""The fixed camera, in the env frame (robot base at the origin): in front of the arm, facing it 26 deg downward,
framed so the arm at its start pose (up to about 0.34 m high) and the cube's reset area (x 0.18-0.26 m, y +-0.07 m)
fill the 224 x 224 image with a few pixels to spare (47 deg field of view)."""

WRIST_EYE = (0.018, -0.065, -0.03)
WRIST_TARGET = (0.018, 0.0, -0.115)
WRIST_UP = (0.0, 0.0, 1.0)
"""The wrist camera, in the ``gripper`` frame (the jaws run down its -z, closing along x; the grasp point is at
(0.018, 0, -0.097)): beside the jaws, square to their closing direction, looking past their tips, image up
toward the wrist."""

GRIPPER_PRIM = "{ENV_REGEX_NS}/Robot/Geometry/base/shoulder/upper_arm/lower_arm/wrist/gripper"
"""A camera on a link needs the link's literal prim path (the offline USD nests links under ``Geometry/``)."""
NUCLEUS_GRIPPER_PRIM = "{ENV_REGEX_NS}/Robot/gripper"

FRONT_CFG = rgb_camera("{ENV_REGEX_NS}/front", FRONT_EYE, FRONT_TARGET, near=0.1)
WRIST_CFG = rgb_camera(
    GRIPPER_PRIM + "/wrist", WRIST_EYE, WRIST_TARGET, WRIST_UP, near=0.01, update_latest_camera_pose=True
)


@configclass
class WristOnRobotCfg(PresetCfg):
    """The wrist camera on each robot preset's ``gripper`` (same pose on both)."""

    so101_offline: CameraCfg = WRIST_CFG
    so101_nucleus: CameraCfg = replace(WRIST_CFG, prim_path=NUCLEUS_GRIPPER_PRIM + "/wrist")
    default: CameraCfg = so101_offline


@configclass
class CamerasObsCfg(ImagesObsCfg):
    front = image("front")
    wrist = image("wrist")
