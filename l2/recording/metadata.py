"""What a recording says about its env beside ``env_name``, read from the built env: the robot, the control rate, the
cameras, the names of the columns of ``actions`` and of the joint observation terms, and which datasets are relative
(the keys of :data:`l2.format.schema.METADATA_KEYS`, docs/l2-hdf5-schema.md). L3 infers a mapping from them.

Joint observation terms are found as Isaac Lab's own are made: a term whose ``asset_cfg`` (its params', else its
function's default) selects joints of an articulation and whose width is that many joints.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Literal

from l2.format import schema

if TYPE_CHECKING:
    from isaaclab.envs import ManagerBasedEnv

RecordedActions = Literal["env", "ee_pose", "joint_targets"]
"""What a file's ``actions`` hold: the env's own action, the IK-absolute pose and binary gripper that a recorder
writes for it, or the joint targets that a recorder writes for it (one per joint of each action term)."""

POSE_NAMES = ("x", "y", "z", "qx", "qy", "qz", "qw")
POSITION_NAMES = POSE_NAMES[:3]
DELTA_POSE_NAMES = ("dx", "dy", "dz", "drx", "dry", "drz")
"""A relative pose command: the position change, then the rotation vector."""


def describe(
    env: ManagerBasedEnv, state_groups: Sequence[str], camera_groups: Sequence[str], actions: RecordedActions = "env"
) -> dict:
    """The metadata keys of the file the env records: its obs terms of ``state_groups`` (named when they read
    joints) and the camera terms of ``camera_groups``, and ``actions`` as they are recorded."""
    cfg = env.cfg
    out: dict = {}
    robot = robot_name(env)
    if robot:
        out[schema.ENV_ARGS_ROBOT] = robot
    out[schema.ENV_ARGS_CONTROL_HZ] = round(1.0 / (cfg.sim.dt * cfg.decimation), 6)
    manager = env.observation_manager
    cams = {
        name: list(dim)
        for group in camera_groups
        if group in manager.active_terms
        for name, dim in zip(manager.active_terms[group], manager.group_obs_term_dim[group], strict=True)
    }
    if cams:
        out[schema.ENV_ARGS_CAMERAS] = cams
    columns: dict[str, list[str]] = {}
    relative: list[str] = []
    names, delta = action_names(env, actions)
    if names:
        columns[schema.ACTIONS] = names
    if delta:
        relative.append(schema.ACTIONS)
    for group in state_groups:
        if group not in manager.active_terms:
            continue
        terms = zip(
            manager.active_terms[group],
            manager.group_obs_term_dim[group],
            manager._group_obs_term_cfgs[group],
            strict=True,
        )
        for name, dim, term_cfg in terms:
            joints = _term_joints(env, term_cfg)
            if joints and tuple(dim) == (len(joints),):
                path = f"{schema.OBS}/{name}"
                columns[path] = joints
                if _function_name(term_cfg.func).endswith("_rel"):  # joint_pos_rel, joint_vel_rel: from the default
                    relative.append(path)
    if columns:
        out[schema.ENV_ARGS_COLUMNS] = columns
    if relative:
        out[schema.ENV_ARGS_RELATIVE] = relative
    return out


def robot_name(env: ManagerBasedEnv) -> str | None:
    """The env cfg's ``robot_name``, else the stem of the robot articulation's USD file (``so101.usdc``: ``so101``),
    else None."""
    name = getattr(env.cfg, "robot_name", None)
    if isinstance(name, str) and name.strip():
        return name.strip()
    robot = _robot(env)
    usd = getattr(getattr(getattr(robot, "cfg", None), "spawn", None), "usd_path", None)
    if isinstance(usd, str) and usd:
        return PurePosixPath(usd.replace("\\", "/")).name.split(".")[0].lower() or None
    return None


def _robot(env: ManagerBasedEnv):
    """The scene's articulation named ``robot``, else its only articulation, else None."""
    articulations = dict(getattr(env.scene, "articulations", {}) or {})
    if "robot" in articulations:
        return articulations["robot"]
    return next(iter(articulations.values())) if len(articulations) == 1 else None


def action_names(env: ManagerBasedEnv, actions: RecordedActions = "env") -> tuple[list[str], bool]:
    """One name per column of the recorded ``actions``, and whether they are deltas (a relative term of the env's
    own action). Terms whose columns it cannot name give ``<term>_<i>``."""
    manager = env.action_manager
    if actions == "ee_pose":
        return list(schema.LIFT_ACTION_NAMES), False
    names: list[str] = []
    delta = False
    for term_name in manager.active_terms:
        term = manager.get_term(term_name)
        if actions == "joint_targets":
            names += [str(j) for j in getattr(term, "_joint_names", ())]
            continue
        got, relative = _term_action_names(term_name, term)
        names += got
        delta |= relative
    return names, delta


def _term_action_names(term_name: str, term) -> tuple[list[str], bool]:
    """The names of one action term's columns, and whether they are deltas."""
    from isaaclab.envs.mdp.actions.binary_joint_actions import BinaryJointAction
    from isaaclab.envs.mdp.actions.joint_actions import JointAction, RelativeJointPositionAction
    from isaaclab.envs.mdp.actions.task_space_actions import DifferentialInverseKinematicsAction

    width = term.action_dim
    joints = [str(j) for j in getattr(term, "_joint_names", ())]
    if isinstance(term, JointAction) and len(joints) == width:
        return joints, isinstance(term, RelativeJointPositionAction)
    if isinstance(term, BinaryJointAction) and width == 1:
        return [joints[0] if len(joints) == 1 else term_name.removesuffix("_action")], False
    if isinstance(term, DifferentialInverseKinematicsAction):
        controller = term.cfg.controller
        relative = bool(controller.use_relative_mode)
        if controller.command_type == "pose":
            names = DELTA_POSE_NAMES if relative else POSE_NAMES
        else:
            names = tuple(f"d{n}" for n in POSITION_NAMES) if relative else POSITION_NAMES
        if len(names) == width:
            return list(names), relative
    return [f"{term_name}_{i}" for i in range(width)], False


def _term_joints(env: ManagerBasedEnv, term_cfg) -> list[str] | None:
    """The joints an observation term reads: those its ``asset_cfg`` selects of an articulation, for a term whose
    function says it reads joints (``joint_pos``, ``joint_vel_rel``, ...) or whose ``asset_cfg`` names them."""
    from isaaclab.managers import SceneEntityCfg

    asset_cfg = term_cfg.params.get("asset_cfg")
    if asset_cfg is None:
        try:
            asset_cfg = inspect.signature(term_cfg.func).parameters["asset_cfg"].default
        except (KeyError, TypeError, ValueError):
            return None
    if not isinstance(asset_cfg, SceneEntityCfg):
        return None
    if "joint" not in _function_name(term_cfg.func) and asset_cfg.joint_names is None:
        return None
    articulation = dict(getattr(env.scene, "articulations", {}) or {}).get(asset_cfg.name)
    all_joints = [str(j) for j in getattr(articulation, "joint_names", None) or ()]
    if not all_joints:
        return None
    ids = asset_cfg.joint_ids
    if isinstance(ids, slice):  # slice(None): every joint (also what the manager resolves a match of all to)
        return all_joints[ids]
    try:
        return [all_joints[int(i)] for i in ids]
    except (IndexError, TypeError, ValueError):
        return None


def _function_name(func) -> str:
    """A term function's name (a class-based term: its class's)."""
    return getattr(func, "__name__", None) or type(func).__name__
