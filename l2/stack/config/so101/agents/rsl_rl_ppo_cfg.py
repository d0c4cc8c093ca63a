"""PPO on the stack: the SO-101 lift's recipe, logged under the stack's experiment name."""

from isaaclab.utils import configclass

from l2.lift.config.so101.agents.rsl_rl_ppo_cfg import So101LiftCubePPORunnerCfg


@configclass
class So101StackPPORunnerCfg(So101LiftCubePPORunnerCfg):
    experiment_name = "l2_stack_cube_so101"
