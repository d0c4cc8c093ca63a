"""Recorder terms that make a PPO rollout file look like every other L2 file.

PPO needs the policy group concatenated, and the policy acts in joint space. These terms write
``obs/<term>`` split back out of the flat vector and, as ``actions``, what the robot's scripted and teleop sources
write (the IK-absolute pose on the Franka, the joint targets on the SO-101: :func:`rl_recorders`); the raw policy
action is kept as ``policy_actions``.
"""

from __future__ import annotations

import math

import torch
from isaaclab.managers import RecorderTerm, RecorderTermCfg
from isaaclab.utils import configclass

from l2.recording.handler import SCENE_GROUP, L2RecorderManagerCfg


class PolicySplitObsRecorder(RecorderTerm):
    """Writes the flat ``policy`` observation as ``obs/<term>`` (terms in ``active_terms`` order).

    The RecorderManager is built before the ObservationManager, so the layout is looked up on the
    first record call. Only ``concatenate_dim=-1`` with ``history_order="term"`` can be split.
    """

    def __init__(self, cfg: PolicySplitObsRecorderCfg, env):
        super().__init__(cfg, env)
        self._layout: list[tuple[str, tuple[int, ...], int]] | None = None

    def _build_layout(self) -> list[tuple[str, tuple[int, ...], int]]:
        group = self.cfg.group
        manager = self._env.observation_manager
        group_cfg = getattr(self._env.cfg.observations, group)
        if not manager.group_obs_concatenate[group]:
            raise ValueError(f"observation group '{group}' is not concatenated; record it directly")
        if group_cfg.concatenate_dim != -1:
            raise ValueError(f"cannot split group '{group}': concatenate_dim={group_cfg.concatenate_dim}, need -1")
        if group_cfg.history_order == "time" and group_cfg.history_length:
            raise ValueError(f"cannot split group '{group}': history_order='time' interleaves the terms")
        names = manager.active_terms[group]
        dims = [tuple(d) for d in manager.group_obs_term_dim[group]]
        return [(name, dim, math.prod(dim)) for name, dim in zip(names, dims, strict=True)]

    def record_pre_step(self):
        if self._layout is None:
            self._layout = self._build_layout()
        flat = self._env.obs_buf[self.cfg.group]
        width = sum(size for _, _, size in self._layout)
        if flat.shape[-1] != width:
            raise ValueError(f"policy observation has {flat.shape[-1]} columns, its terms add up to {width}")
        terms, start = {}, 0
        for name, dim, size in self._layout:
            terms[name] = flat[:, start : start + size].reshape(-1, *dim).clone()
            start += size
        return "obs", terms


class GroupObsRecorder(RecorderTerm):
    """Writes each term of a non-concatenated observation group as ``obs/<term>``; nothing without the group."""

    def record_pre_step(self):
        terms = self._env.obs_buf.get(self.cfg.group)
        return ("obs", {name: value.clone() for name, value in terms.items()}) if terms else (None, None)


class EquivalentIKAbsActionRecorder(RecorderTerm):
    """Writes ``actions`` = the IK-absolute action equivalent to the policy's joint action: the end-effector
    pose (position and scalar-last quaternion in the robot root frame, the frame the IK action commands) of
    the arm's joint-position target at the end of the step, + the binary gripper command (±1).

    A relative joint action re-targets the arm at ``q + Δ`` on every physics substep, so the arm is still
    being pulled ``Δ`` further when the step ends; an IK-absolute demo's action is likewise where the
    arm is sent, not where it got. The pose of ``q + Δ`` is taken to first order, ``x + J Δ`` (the
    position, and the rotation ``exp(J_ω Δ)`` applied to the current one), with the Jacobian of the robot's
    differential-IK term (the cfg's ``ik_arm_action``), built beside the env's own terms and never applied.
    """

    records_ee_poses = True
    """Its ``actions`` are end-effector poses whatever the env acts in (``l2.recording.handler.records_ee_poses``)."""

    def __init__(self, cfg: RecorderTermCfg, env):
        super().__init__(cfg, env)
        self._ik = None  # built on the first record: the recorder manager comes before the action manager

    def record_post_step(self):
        from isaaclab.envs.mdp.actions.joint_actions import RelativeJointPositionAction

        from l2.recording.task_space import joint_targets_pose, shadow_ik_term

        if self._ik is None:
            self._ik = shadow_ik_term(self._env)
        arm = self._env.action_manager.get_term(self.cfg.arm_action_name)
        joints = self._ik._asset.data.joint_pos.torch[:, self._ik._joint_ids]
        relative = isinstance(arm, RelativeJointPositionAction)
        target = arm.processed_actions + joints if relative else arm.processed_actions
        pos, quat = joint_targets_pose(self._ik, target)
        gripper_raw = self._env.action_manager.get_term(self.cfg.gripper_action_name).raw_actions
        gripper = torch.where(gripper_raw < 0, -1.0, 1.0).to(pos.dtype)
        return "actions", torch.cat([pos, quat, gripper], -1)


class JointTargetActionRecorder(RecorderTerm):
    """Writes ``actions`` = the joint-position targets the policy's action set at the end of the step, arm joints
    then gripper: the action of a robot whose other sources record joint positions (the SO-101's). A relative arm
    action's target is ``q + Δ`` with ``q`` measured then, as :class:`EquivalentIKAbsActionRecorder` takes it."""

    records_joint_targets = True
    """Its ``actions`` are one target per joint of each action term (``l2.recording.handler.add_file_metadata``)."""

    def record_post_step(self):
        from isaaclab.envs.mdp.actions.joint_actions import RelativeJointPositionAction

        arm = self._env.action_manager.get_term(self.cfg.arm_action_name)
        target = arm.processed_actions
        if isinstance(arm, RelativeJointPositionAction):
            target = target + arm._asset.data.joint_pos.torch[:, arm._joint_ids]
        gripper = self._env.action_manager.get_term(self.cfg.gripper_action_name).processed_actions
        return "actions", torch.cat([target, gripper], -1)


class RawPolicyActionRecorder(RecorderTerm):
    """Writes the action the policy produced, in its own space, as ``policy_actions``."""

    def record_pre_step(self):
        return "policy_actions", self._env.action_manager.action.clone()


@configclass
class PolicySplitObsRecorderCfg(RecorderTermCfg):
    class_type: type = PolicySplitObsRecorder
    group: str = "policy"


@configclass
class GroupObsRecorderCfg(RecorderTermCfg):
    class_type: type = GroupObsRecorder
    group: str = SCENE_GROUP


@configclass
class EquivalentIKAbsActionRecorderCfg(RecorderTermCfg):
    class_type: type = EquivalentIKAbsActionRecorder
    arm_action_name: str = "arm_action"
    gripper_action_name: str = "gripper_action"


@configclass
class JointTargetActionRecorderCfg(EquivalentIKAbsActionRecorderCfg):
    class_type: type = JointTargetActionRecorder


@configclass
class RawPolicyActionRecorderCfg(RecorderTermCfg):
    class_type: type = RawPolicyActionRecorder


@configclass
class RLRecorderManagerCfg(L2RecorderManagerCfg):
    """The L2 schema for PPO rollouts: the shared terms, with the state ``obs/<term>`` split from the flat policy
    vector and ``actions`` = the equivalent IK-absolute action; the policy's own action as ``policy_actions``."""

    record_pre_step_actions = None
    record_pre_step_policy_observations = None
    record_policy_split_obs = PolicySplitObsRecorderCfg()
    record_scene_obs = GroupObsRecorderCfg()
    record_equivalent_actions = EquivalentIKAbsActionRecorderCfg()
    record_policy_actions = RawPolicyActionRecorderCfg()


def rl_recorders(env_cfg) -> RLRecorderManagerCfg:
    """The RL recorders for ``env_cfg``, whose ``actions`` are what its robot's other sources record
    (:attr:`l2.lift.variants.RLVariantCfg.demo_actions`)."""
    from l2.format import schema

    cfg = RLRecorderManagerCfg()
    if getattr(env_cfg, "demo_actions", "ee_pose") == schema.JOINT_POSITION_ACTIONS:
        cfg.record_equivalent_actions = JointTargetActionRecorderCfg()
    return cfg
