"""RL variant of the lift-cube task, for PPO with rsl_rl.

Action space: relative joint-position targets for the 7 arm joints (``q + 0.1 a``, ``q`` measured) + the
binary gripper. Every action is reachable and there is no IK singularity or damping to learn around, as
with Isaac Lab's absolute joint targets; relative targets make the action a small correction around the
current pose, which is what a policy cloned from the scripted expert (``l2/rl/pretrain.py``) has to
predict, instead of the whole pose. The recorded files still hold the IK-absolute ``actions`` of the
other sources (see ``recorders.py``).
"""

from isaaclab.managers import ObservationGroupCfg as ObsGroup
from isaaclab.managers import ObservationTermCfg as ObsTerm
from isaaclab.managers import RewardTermCfg as RewTerm
from isaaclab.utils import configclass
from isaaclab_tasks.contrib.lift.lift_env_cfg import RewardsCfg
from isaaclab_tasks.utils import preset

from l2.lift import mdp, variety
from l2.lift.lift_env_cfg import LiftCubeEnvCfg, LiftCubeTerminationsCfg, ObservationsCfg

RELATIVE_JOINT_SCALE = 0.1
"""rad per unit of the arm action: the joint targets are ``q + 0.1 a`` (``q`` measured, every physics substep)."""


@configclass
class RLRewardsCfg(RewardsCfg):
    """Isaac Lab's reaching, lifting and goal-tracking rewards, plus a bonus when ``success`` ends the
    episode (it compensates the lifting/tracking rewards that the early termination cuts off)."""

    success_bonus = RewTerm(
        func=mdp.cube_lifted_and_held, params=LiftCubeTerminationsCfg().success.params, weight=1000.0
    )


@configclass
class RLPolicyObsCfg(ObservationsCfg.PolicyCfg):
    """The base task's state terms, concatenated in their order: rsl_rl's MLP takes one vector; the recorder
    splits them back out."""

    def __post_init__(self):
        super().__post_init__()
        self.concatenate_terms = True
        # The policy's input has the width it was trained with: with presets=variety, where the distractors
        # are, is not part of it (the target is object_position, as on the plain scene).
        self.distractor_positions = None


@configclass
class RLSceneObsCfg(ObsGroup):
    """Where the distractor cubes are: written as ``obs/distractor_positions`` like the other sources', never
    fed to the policy (rsl_rl reads the ``policy`` group only)."""

    distractor_positions = ObsTerm(func=variety.distractor_positions)

    def __post_init__(self):
        self.enable_corruption = False
        self.concatenate_terms = False


@configclass
class RLObservationsCfg(ObservationsCfg):
    policy: RLPolicyObsCfg = RLPolicyObsCfg()
    scene = preset(default=None, variety=RLSceneObsCfg())  # l2.recording.handler.SCENE_GROUP


@configclass
class RLLiftCubeEnvCfg(LiftCubeEnvCfg):
    observations: RLObservationsCfg = RLObservationsCfg()
    rewards: RLRewardsCfg = RLRewardsCfg()

    def __post_init__(self):
        super().__post_init__()
        self.actions.arm_action = mdp.RelativeJointPositionActionCfg(
            asset_name="robot", joint_names=["panda_joint.*"], scale=RELATIVE_JOINT_SCALE
        )
