"""Recorder terms that make a PPO rollout file look like every other L2 file.

PPO needs the policy group concatenated, and the policy acts in joint space. These terms write
``obs/<term>`` split back out of the flat vector and, as ``actions``, the IK-absolute action the
scripted and teleop sources write; the raw policy action is kept as ``policy_actions``.
"""

from __future__ import annotations

import math

import torch
from isaaclab.managers import RecorderTerm, RecorderTermCfg
from isaaclab.utils import configclass

from l2.recording import L2RecorderManagerCfg


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


class EquivalentIKAbsActionRecorder(RecorderTerm):
    """Writes ``actions`` = the end-effector pose the step's action led to (position and scalar-last
    quaternion in the robot root frame, read after the step) + the binary gripper command (±1)."""

    def record_post_step(self):
        ee = self._env.scene[self.cfg.ee_frame_name].data
        gripper_raw = self._env.action_manager.get_term(self.cfg.gripper_action_name).raw_actions
        gripper = torch.where(gripper_raw < 0, -1.0, 1.0).to(ee.target_pos_source.torch.dtype)
        return "actions", torch.cat([ee.target_pos_source.torch[:, 0], ee.target_quat_source.torch[:, 0], gripper], -1)


class RawPolicyActionRecorder(RecorderTerm):
    """Writes the action the policy produced, in its own space, as ``policy_actions``."""

    def record_pre_step(self):
        return "policy_actions", self._env.action_manager.action.clone()


@configclass
class PolicySplitObsRecorderCfg(RecorderTermCfg):
    class_type: type = PolicySplitObsRecorder
    group: str = "policy"


@configclass
class EquivalentIKAbsActionRecorderCfg(RecorderTermCfg):
    class_type: type = EquivalentIKAbsActionRecorder
    ee_frame_name: str = "ee_frame"
    gripper_action_name: str = "gripper_action"


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
    record_equivalent_actions = EquivalentIKAbsActionRecorderCfg()
    record_policy_actions = RawPolicyActionRecorderCfg()
