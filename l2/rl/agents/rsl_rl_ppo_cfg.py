"""PPO cfg: Isaac Lab's tuned Franka lift recipe, logged under ``logs/rl/``."""

from isaaclab.utils import configclass
from isaaclab_tasks.contrib.lift.config.franka.agents.rsl_rl_ppo_cfg import LiftCubePPORunnerCfg


@configclass
class L2LiftCubePPORunnerCfg(LiftCubePPORunnerCfg):
    experiment_name = "l2_lift_cube"
    obs_groups = {"actor": ["policy"], "critic": ["policy"]}
