"""What a task must provide for a teleop session, checked on its parsed cfg before any simulator starts.

A session needs:

- a **success term**: the cfg's ``success_term`` (a teleop variant's, :class:`l2.lift.variants.TeleopVariantCfg`),
  else ``terminations.success``, which the session then takes out of the terminations (with the time-out), as
  Isaac Lab's ``record_demos.py`` does;
- an **action the device's output can become**: end-effector commands (``delta``: keyboard, SpaceMouse, gamepad;
  ``absolute``: XR) need an ``arm_action`` that takes an absolute end-effector pose, or one in joint positions with
  an ``ik_arm_action`` to command it through (:mod:`l2.recording.task_space`), and a ``gripper_action`` (a
  joint-position one with the jaw's ``gripper_targets``); joint
  positions (``joint``: a leader arm) need every action term to take the joints' positions as they are;
- for ``delta`` control, ``ee_home``: the end-effector pose every attempt starts from.

Each missing piece is a :class:`~l2.recording.errors.OneLineError` naming the task and what it lacks.
"""

from __future__ import annotations

import re
from dataclasses import MISSING

from l2.recording.errors import OneLineError


class TeleopTaskError(OneLineError):
    """A task that cannot be teleoperated with the given device (found before any simulator starts)."""


def _term_class(term_cfg) -> type:
    """The action term class a term cfg builds (Isaac Lab keeps it as a ``module:Class`` string until then)."""
    from isaaclab.utils.string import string_to_callable

    cls = term_cfg.class_type
    return string_to_callable(cls) if isinstance(cls, str) else cls


def _kind(term_cfg) -> str:
    """``pose`` (absolute end-effector pose IK), ``relative_pose``, ``joint_position`` (absolute joint targets),
    ``relative_joint`` or ``other``, for an action term cfg."""
    from isaaclab.envs.mdp.actions.joint_actions import JointPositionAction, RelativeJointPositionAction
    from isaaclab.envs.mdp.actions.task_space_actions import DifferentialInverseKinematicsAction

    cls = _term_class(term_cfg)
    if issubclass(cls, DifferentialInverseKinematicsAction):
        return "relative_pose" if term_cfg.controller.use_relative_mode else "pose"
    if issubclass(cls, JointPositionAction):
        return "joint_position"
    if issubclass(cls, RelativeJointPositionAction):
        return "relative_joint"
    return "other"


def _as_is(term_cfg) -> bool:
    """Whether a joint-position term applies its action as the joints' targets unchanged (scale 1, no offset)."""
    scale, offset = term_cfg.scale, term_cfg.offset
    unit = all(float(v) == 1.0 for v in (scale.values() if isinstance(scale, dict) else [scale]))
    zero = all(float(v) == 0.0 for v in (offset.values() if isinstance(offset, dict) else [offset]))
    return unit and zero and not term_cfg.use_default_offset


def _joint_count(terms: dict) -> int | None:
    """How many joints the action terms take, where each names its joints literally (no regex); else None."""
    names = [n for term in terms.values() for n in term.joint_names]
    return len(names) if all(re.fullmatch(r"\w+", n) for n in names) else None


def _describe(name: str, term_cfg) -> str:
    return f"{name}: {_term_class(term_cfg).__name__}"


def check_teleop_task(env_cfg, task: str, control: str, given_by: str, command_dim: int | None = None) -> None:
    """Raise :class:`TeleopTaskError` unless a session can drive ``task`` (its parsed cfg ``env_cfg``) with commands
    of kind ``control`` (``delta``, ``absolute`` or ``joint``). ``given_by`` names them in the message
    (``--teleop_device keyboard``, a trace); ``command_dim``: values per ``joint`` command, where known."""
    if getattr(env_cfg, "success_term", None) is None and getattr(env_cfg.terminations, "success", None) is None:
        raise TeleopTaskError(
            f"{task} has no success term (neither success_term nor terminations.success on its cfg): "
            "a teleop session saves an attempt when it holds"
        )
    terms = {name: term for name, term in vars(env_cfg.actions).items() if term is not None}
    if control == "joint":
        moved = {name: term for name, term in terms.items() if _kind(term) != "joint_position" or not _as_is(term)}
        if moved:
            name, term = next(iter(moved.items()))
            takes = {"pose": "end-effector poses", "relative_pose": "end-effector pose changes"}.get(
                _kind(term), "scaled, offset or relative joint targets"
            )
            raise TeleopTaskError(
                f"{task} takes {takes} ({_describe(name, term)}), not the joint positions of {given_by} "
                "(control joint: a leader arm's joints, applied as they are)"
            )
        joints = _joint_count(terms)
        if command_dim is not None and joints is not None and command_dim != joints:
            raise TeleopTaskError(f"{task} takes {joints} joint positions, {given_by} gives {command_dim}")
        return
    what = f"{given_by}'s end-effector {'steps' if control == 'delta' else 'poses'}"
    for needed in ("arm_action", "gripper_action"):
        if needed not in terms:
            raise TeleopTaskError(f"{task} has no {needed} action term to take {what}")
    arm = terms["arm_action"]
    kind = _kind(arm)
    if kind in ("joint_position", "relative_joint"):
        if getattr(env_cfg, "ik_arm_action", None) is None:
            raise TeleopTaskError(
                f"{task} takes joint positions ({_describe('arm_action', arm)}) and its cfg has no ik_arm_action "
                f"to turn {what} into them"
            )
    elif kind != "pose":
        takes = "end-effector pose changes" if kind == "relative_pose" else "neither end-effector poses nor joints"
        raise TeleopTaskError(f"{task}'s arm takes {takes} ({_describe('arm_action', arm)}), not {what}")
    gripper = terms["gripper_action"]
    if _kind(gripper) == "joint_position" and getattr(env_cfg, "gripper_targets", None) is None:
        raise TeleopTaskError(
            f"{task}'s jaw takes joint positions ({_describe('gripper_action', gripper)}) and its cfg has no "
            f"gripper_targets (open, closed) to turn the open/close of {what} into them"
        )
    if control == "delta" and getattr(env_cfg, "ee_home", MISSING) in (None, MISSING):
        raise TeleopTaskError(
            f"{task} has no ee_home on its cfg: {what} need the end-effector pose each attempt starts from"
        )


def take_success_term(env_cfg) -> None:
    """Give ``env_cfg`` a ``success_term`` the session evaluates: a teleop variant's, else ``terminations.success``
    taken out of the terminations with the time-out (the operator, not the task, ends an attempt)."""
    if getattr(env_cfg, "success_term", None) is not None:
        return
    env_cfg.success_term = env_cfg.terminations.success
    env_cfg.terminations.success = None
    if hasattr(env_cfg.terminations, "time_out"):
        env_cfg.terminations.time_out = None
