"""Lift-cube task package: gym registration of the base task (cfgs import Isaac Lab lazily)."""

import gymnasium as gym

TASK_ID = "L2-Lift-Cube-Franka-IK-Abs"

gym.register(
    id=TASK_ID,
    entry_point="isaaclab.envs:ManagerBasedRLEnv",
    kwargs={"env_cfg_entry_point": f"{__name__}.lift_env_cfg:LiftCubeEnvCfg"},
    disable_env_checker=True,
)

gym.register(
    id=f"{TASK_ID}-Scripted",
    entry_point="isaaclab.envs:ManagerBasedRLEnv",
    kwargs={"env_cfg_entry_point": "l2.scripted.env_cfg:ScriptedLiftCubeEnvCfg"},
    disable_env_checker=True,
)

gym.register(
    id=f"{TASK_ID}-Teleop",
    entry_point="isaaclab.envs:ManagerBasedRLEnv",
    kwargs={"env_cfg_entry_point": "l2.teleop.env_cfg:TeleopLiftCubeEnvCfg"},
    disable_env_checker=True,
)

gym.register(
    id="L2-Lift-Cube-Franka-RL",
    entry_point="isaaclab.envs:ManagerBasedRLEnv",
    kwargs={
        "env_cfg_entry_point": "l2.rl.env_cfg:RLLiftCubeEnvCfg",
        "rsl_rl_cfg_entry_point": "l2.rl.agents.rsl_rl_ppo_cfg:L2LiftCubePPORunnerCfg",
        "rsl_rl_finetune_cfg_entry_point": "l2.rl.agents.rsl_rl_ppo_cfg:L2LiftCubePPOFinetuneCfg",
    },
    disable_env_checker=True,
)
