"""PPO cfgs on the SO-101: the Franka's recipe (Isaac Lab's lift recipe with observation normalisation), logged
under the SO-101's experiment names."""

from isaaclab.utils import configclass

from l2.lift.config.franka.agents.rsl_rl_ppo_cfg import L2LiftCubePPOFinetuneCfg, L2LiftCubePPORunnerCfg


@configclass
class So101LiftCubePPORunnerCfg(L2LiftCubePPORunnerCfg):
    experiment_name = "l2_lift_cube_so101"


@configclass
class So101LiftCubePPOFinetuneCfg(L2LiftCubePPOFinetuneCfg):
    experiment_name = "l2_lift_cube_so101_finetune"
