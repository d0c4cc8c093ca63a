"""The stack's fixed camera: the SO-101 lift's ``front`` camera (``l2/lift/config/so101/cameras.py``) reframed for
the stack's wider cube area and taller result. The ``wrist`` camera is the lift's."""

from __future__ import annotations

from l2.lift.camera_cfg import rgb_camera

FRONT_EYE = (0.62, 0.0, 0.44)
FRONT_TARGET = (0.17, 0.0, 0.09)
"""In the env frame (robot base at the origin): in front of the arm, facing it, framed so the cubes' reset area
(x 0.15-0.30 m, y +-0.10 m), a three-cube stack and the arm at its start pose are in the 224 x 224 image."""

FRONT_CFG = rgb_camera("{ENV_REGEX_NS}/front", FRONT_EYE, FRONT_TARGET, near=0.1)
