"""Names and constants of the L2 HDF5 schema (``docs/l2-hdf5-schema.md``).

The layout is the one Isaac Lab's ``HDF5DatasetFileHandler`` writes; everything that reads or
writes our files takes its names from here.
"""

from __future__ import annotations

import re

FORMAT_VERSION = 1
"""``format_version`` root attr: 1 = quaternions XYZW (scalar last); 0 or missing = legacy WXYZ."""

ATTR_FORMAT_VERSION = "format_version"
DATA_GROUP = "data"
LEGACY_EPISODES_GROUP = "episodes"
ATTR_TOTAL = "total"
ATTR_ENV_ARGS = "env_args"
ENV_ARGS_TYPE = 2
"""robomimic's gym-env marker written in ``env_args["type"]``."""

DEMO_PREFIX = "demo_"
DEMO_NAME_RE = re.compile(r"^demo_(0|[1-9][0-9]*)$")
ATTR_NUM_SAMPLES = "num_samples"
ATTR_SEED = "seed"
ATTR_SUCCESS = "success"

MASK_GROUP = "mask"
"""robomimic's filter keys at the root: ``mask/<name>``, each a 1-D array of demo names (byte strings)."""

ACTIONS = "actions"
OBS = "obs"

# lift_cube action layout: IK-absolute end-effector pose in the robot root frame + binary gripper.
LIFT_ACTION_DIM = 8
EE_POS_SLICE = slice(0, 3)
EE_QUAT_SLICE = slice(3, 7)  # qx, qy, qz, qw
GRIPPER_SLICE = slice(7, 8)  # < 0 closes
LIFT_ACTION_NAMES = ("x", "y", "z", "qx", "qy", "qz", "qw", "gripper")
"""Per-column names of the lift_cube action (the names L3's lift_cube mapping gives them too)."""
QUAT_NORM_TOL = 1e-3
ENV_ARGS_ACTION_SPACE = "action_space"
"""Key of ``env_args`` saying what ``actions`` holds when it is not the IK-absolute pose above (a file without it
holds that pose): :data:`JOINT_POSITION_ACTIONS`."""
JOINT_POSITION_ACTIONS = "joint_position"
"""``actions`` are the robot's absolute joint-position targets, one column per joint (e.g. the SO-101's six)."""

# What a recording says about its env, beside env_name (docs/l2-hdf5-schema.md, l2.format.metadata); all optional.
ENV_ARGS_ROBOT = "robot"
"""The robot's name (the env cfg's ``robot_name``, else its USD file's stem), e.g. ``so101``: L3's robot_type."""
ENV_ARGS_CONTROL_HZ = "control_hz"
"""Control steps per second, ``1 / (sim.dt * decimation)``: one row of every dataset per step."""
ENV_ARGS_CAMERAS = "cameras"
"""``{term: [H, W, C]}``: the recorded camera terms (``obs/<term>``) and their frame shape."""
ENV_ARGS_COLUMNS = "columns"
"""``{path: [name, ...]}``: per-column names of ``actions`` and of the ``obs/<term>`` datasets the recorder can name
(joint terms by joint), paths relative to a demo group."""
ENV_ARGS_RELATIVE = "relative"
"""``[path, ...]``: the datasets whose values are not absolute: offsets from the default joint pose
(``joint_pos_rel``, ``joint_vel_rel``), or actions that are deltas."""
METADATA_KEYS = (ENV_ARGS_ROBOT, ENV_ARGS_CONTROL_HZ, ENV_ARGS_CAMERAS, ENV_ARGS_COLUMNS, ENV_ARGS_RELATIVE)

# Observation terms every lift_cube source records (policy group, concatenate_terms=False).
LIFT_OBS_TERMS = (
    "joint_pos",
    "joint_vel",
    "object_position",
    "target_object_position",
    "actions",
    "object_orientation",
    "ee_position",
    "ee_orientation",
)
LIFT_CAMERA_TERMS = ("table_cam", "wrist_cam")
"""Camera terms recorded unless the cameras are turned off (``presets=no_cameras``)."""

ATTR_INSTRUCTION = "instruction"
"""Per-demo language instruction (UTF-8 text): what the episode asked for; L3 writes it as the episode's task."""
ATTR_SCENE = "scene"
"""Per-demo JSON object of the values ``presets=variety`` drew for the episode (colors, layout, camera offset);
a replay applies them again (docs/variety.md)."""
ATTR_SOURCE = "source"
"""Per-demo source tag (``l2.tools.merge`` writes it); L3 tags the demo with it instead of the file name's."""
SOURCES = ("scripted", "rl", "teleop", "mimic", "policy")
"""``policy``: closed-loop evaluation rollouts of a trained policy (``python -m l2.evaluate --record``)."""
UNKNOWN_SOURCE = "unknown"


def is_camera_term(shape: tuple[int, ...], dtype_name: str) -> bool:
    """Whether an obs term of this (T, ...) shape and numpy dtype name holds camera frames: (T, H, W, 3) uint8."""
    return len(shape) == 4 and shape[-1] == 3 and dtype_name == "uint8"


def demo_name(index: int) -> str:
    """``data/demo_<index>`` group name."""
    return f"{DEMO_PREFIX}{index}"


def demo_index(name: str) -> int | None:
    """Episode index of a ``demo_<i>`` group name, or None when the name does not follow the schema."""
    m = DEMO_NAME_RE.match(name)
    return int(m.group(1)) if m else None


def sorted_demo_names(names) -> list[str]:
    """Demo group names in numeric order (h5py lists them lexicographically: demo_10 before demo_2)."""
    return sorted((n for n in names if demo_index(n) is not None), key=demo_index)


SHARD_PREFIX = "shard_"
"""Shards of a distributed collection (:mod:`l2.distributed`): ``<DIR>/shard_<k>.hdf5``."""


def source_from_filename(filename: str) -> str:
    """Source tag from an L2 file name prefix: ``scripted_``, ``rl_``, ``teleop_``, ``mimic_``, ``policy_``; else
    ``unknown``."""
    base = filename.rsplit("/", 1)[-1]
    for source in SOURCES:
        if base.startswith(source + "_"):
            return source
    return UNKNOWN_SOURCE


def source_from_path(path: str) -> str:
    """Source tag of an L2 file: its name's prefix, or for a shard (``shard_<k>.hdf5``) its folder's, as in
    ``scripted_lift_cube/shard_0.hdf5``; else ``unknown``."""
    parts = path.replace("\\", "/").rstrip("/").split("/")
    if parts[-1].startswith(SHARD_PREFIX) and len(parts) > 1:
        return source_from_filename(parts[-2])
    return source_from_filename(parts[-1])
