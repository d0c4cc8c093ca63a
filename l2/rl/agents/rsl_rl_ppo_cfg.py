"""PPO cfg: Isaac Lab's Franka lift recipe with observation normalisation, logged under ``logs/rl/``."""

from isaaclab.utils import configclass
from isaaclab_tasks.contrib.lift.config.franka.agents.rsl_rl_ppo_cfg import LiftCubePPORunnerCfg


@configclass
class L2LiftCubePPORunnerCfg(LiftCubePPORunnerCfg):
    experiment_name = "l2_lift_cube"
    obs_groups = {"actor": ["policy"], "critic": ["policy"]}

    def __post_init__(self):
        super().__post_init__()
        # Joint velocities and joint-space actions are several times larger than positions; normalised inputs
        # let the behaviour-cloned warm start (l2/rl/pretrain.py) and PPO share one well-conditioned MLP.
        self.actor.obs_normalization = True
        self.critic.obs_normalization = True
