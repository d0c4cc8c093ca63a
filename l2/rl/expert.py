"""The scripted pick-and-lift state machine as a teacher in the RL variant's joint-position action space."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from l2.scripted.state_machine import PickAndLiftCfg, PickAndLiftStateMachine

if TYPE_CHECKING:
    from isaaclab.envs import ManagerBasedRLEnv


class JointSpaceExpert:
    """Scripted expert acting in the RL variant's action space (arm joint targets + binary gripper).

    The state machine emits the IK-absolute pose the scripted source sends. The base task's
    differential-IK action term, built here beside the env's own terms and never applied, turns it into
    the joint targets one IK step gives from the current joint positions; the arm action is those targets
    in the RL variant's units, ``(q* - offset) / scale``. The IK-absolute task recomputes the IK on
    every physics substep, this once per control step, so the expert approaches a little more slowly.
    """

    def __init__(self, env: ManagerBasedRLEnv, cfg: PickAndLiftCfg | None = None):
        from l2.lift.lift_env_cfg import ActionsCfg

        ik_cfg = ActionsCfg().arm_action
        self.env = env
        self.state_machine = PickAndLiftStateMachine(env.num_envs, env.device, cfg or PickAndLiftCfg(dt=env.step_dt))
        self._ik = ik_cfg.class_type(ik_cfg, env)
        self._arm = env.action_manager.get_term("arm_action")
        if list(self._arm._joint_names) != list(self._ik._joint_names):
            raise ValueError(f"arm joints differ: RL action {self._arm._joint_names}, IK {self._ik._joint_names}")

    def reset(self, env_ids: Sequence[int] | torch.Tensor | None = None) -> None:
        self.state_machine.reset(env_ids)

    def act(self) -> torch.Tensor:
        """Advance the state machine one control step; actions ``(num_envs, 8)`` in the RL action space."""
        pose_and_gripper = self.state_machine.act(self.env)
        ik = self._ik
        ik.process_actions(pose_and_gripper[:, :7])
        ee_pos, ee_quat = ik._compute_frame_pose()
        joint_pos = ik._asset.data.joint_pos.torch[:, ik._joint_ids]
        target = ik._ik_controller.compute(ee_pos, ee_quat, ik._compute_frame_jacobian(), joint_pos)
        arm = (target - self._arm._offset) / self._arm._scale
        return torch.cat([arm, pose_and_gripper[:, 7:]], dim=-1)
