"""The Franka's wrist camera: on ``panda_link7``, looking past the fingertips."""

from __future__ import annotations

from isaaclab.sensors import CameraCfg
from isaaclab.utils import configclass, replace
from isaaclab_tasks.utils import PresetCfg

from l2.lift.camera_cfg import rgb_camera

WRIST_CAM_EYE = (0.0849, -0.0849, 0.04)
WRIST_CAM_TARGET = (0.018, -0.018, 0.26)
WRIST_CAM_UP = (1.0, -1.0, 0.0)
"""The wrist camera, in the ``panda_link7`` frame (+z runs down the gripper, the end-effector point is at
z = 0.21): 12 cm off the gripper axis, square to the fingers' closing direction, looking past the
fingertips, image up pointing away from the axis. It sees both fingers and what lies between them."""

ROBOT_LINK7_PRIM = "{ENV_REGEX_NS}/Robot/Geometry/panda_link0/" + "/".join(f"panda_link{i}" for i in range(1, 8))
"""A camera on a link needs the link's literal prim path (the offline USD nests links under ``Geometry/``);
the regex form of the frame transformer does not resolve in Newton's frame view."""
NUCLEUS_LINK7_PRIM = "{ENV_REGEX_NS}/Robot/panda_link7"

WRIST_CAM_CFG = rgb_camera(
    ROBOT_LINK7_PRIM + "/wrist_cam",
    WRIST_CAM_EYE,
    WRIST_CAM_TARGET,
    WRIST_CAM_UP,
    near=0.01,
    update_latest_camera_pose=True,  # the renderer re-reads the link's pose each frame, else the view stays put
)


@configclass
class WristCamRobotCfg(PresetCfg):
    """The wrist camera on each robot preset's ``panda_link7`` (same pose on both)."""

    franka_offline: CameraCfg = WRIST_CAM_CFG
    franka_nucleus: CameraCfg = replace(WRIST_CAM_CFG, prim_path=NUCLEUS_LINK7_PRIM + "/wrist_cam")
    default: CameraCfg = franka_offline
