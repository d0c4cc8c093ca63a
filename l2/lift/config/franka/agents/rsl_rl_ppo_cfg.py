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


@configclass
class L2LiftCubePPOFinetuneCfg(L2LiftCubePPORunnerCfg):
    """PPO from a behaviour-cloned actor (``l2/rl/train.py --agent rsl_rl_finetune_cfg_entry_point --init ...``).

    The warm-started actor already lifts the cube with a small action std (0.05); the entropy bonus of
    the from-scratch recipe would widen that std at every update (Adam moves it by about the learning
    rate per step whatever the gradient's size) until the grasp is lost, so it is off here.
    """

    max_iterations = 120
    save_interval = 20
    experiment_name = "l2_lift_cube_finetune"

    def __post_init__(self):
        super().__post_init__()
        self.algorithm.entropy_coef = 0.0
