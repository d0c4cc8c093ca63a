"""RL source: PPO (rsl_rl) on the lift-cube task and policy rollouts recorded in the L2 schema."""

import gymnasium as gym

TASK_ID = "L2-Lift-Cube-Franka-JointPos-Rel"
"""Named by its control mode, as Isaac Lab names its variants: relative joint-position targets."""

for task_id in (TASK_ID, "L2-Lift-Cube-Franka-RL"):  # the second: the id before 2026-12, kept as an alias
    gym.register(
        id=task_id,
        entry_point="isaaclab.envs:ManagerBasedRLEnv",
        kwargs={
            "env_cfg_entry_point": f"{__name__}.env_cfg:RLLiftCubeEnvCfg",
            "rsl_rl_cfg_entry_point": f"{__name__}.agents.rsl_rl_ppo_cfg:L2LiftCubePPORunnerCfg",
            "rsl_rl_finetune_cfg_entry_point": f"{__name__}.agents.rsl_rl_ppo_cfg:L2LiftCubePPOFinetuneCfg",
        },
        disable_env_checker=True,
    )
