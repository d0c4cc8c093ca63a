"""The lift-cube task on the Franka for PPO (rsl_rl): relative joint-position targets for the 7 arm joints
(``q + 0.1 a``, ``q`` measured) + the binary gripper.

Every action is reachable and there is no IK singularity or damping to learn around, as with Isaac Lab's
absolute joint targets; relative targets make the action a small correction around the current pose, which is
what a policy cloned from the scripted expert (``l2/rl/pretrain.py``) has to predict, instead of the whole pose.
The recorded files still hold the IK-absolute ``actions`` of the other sources (``l2/rl/recorders.py``).
"""

from isaaclab.utils import configclass

from l2.lift import mdp
from l2.lift.config.franka.ik_abs_env_cfg import ARM_JOINTS, IK_ARM_ACTION, FrankaLiftCubeEnvCfg
from l2.lift.variants import RLVariantCfg

RELATIVE_JOINT_SCALE = 0.1
"""rad per unit of the arm action: the joint targets are ``q + 0.1 a`` (``q`` measured, every physics substep)."""


@configclass
class FrankaRLLiftCubeEnvCfg(RLVariantCfg, FrankaLiftCubeEnvCfg):
    ik_arm_action = IK_ARM_ACTION

    def __post_init__(self):
        super().__post_init__()
        self.actions.arm_action = mdp.RelativeJointPositionActionCfg(
            asset_name="robot", joint_names=ARM_JOINTS, scale=RELATIVE_JOINT_SCALE
        )
