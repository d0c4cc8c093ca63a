"""RL variant of the lift-cube task, for PPO with rsl_rl.

Action space: joint-position targets (7 arm joints, scaled by 0.5 around the default pose) + the
binary gripper, Isaac Lab's proven PPO recipe for Franka lifting: every action is reachable,
there is no IK singularity or damping to learn around, and the arm responds within one step. The
recorded files still hold the IK-absolute ``actions`` of the other sources (see ``recorders.py``).
"""

from isaaclab.managers import RewardTermCfg as RewTerm
from isaaclab.utils import configclass
from isaaclab_tasks.contrib.lift.lift_env_cfg import RewardsCfg

from l2.lift import mdp
from l2.lift.lift_env_cfg import LiftCubeEnvCfg, LiftCubeTerminationsCfg


@configclass
class RLRewardsCfg(RewardsCfg):
    """Isaac Lab's reaching, lifting and goal-tracking rewards, plus a bonus when ``success`` ends the
    episode (it compensates the lifting/tracking rewards that the early termination cuts off)."""

    success_bonus = RewTerm(func=mdp.cube_lifted_and_held, params=LiftCubeTerminationsCfg().success.params, weight=1000.0)


@configclass
class RLLiftCubeEnvCfg(LiftCubeEnvCfg):
    rewards: RLRewardsCfg = RLRewardsCfg()

    def __post_init__(self):
        super().__post_init__()
        self.observations.policy.concatenate_terms = True  # rsl_rl's MLP takes one flat vector
        self.actions.arm_action = mdp.JointPositionActionCfg(
            asset_name="robot", joint_names=["panda_joint.*"], scale=0.5, use_default_offset=True
        )
