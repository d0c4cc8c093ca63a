"""Scripted source: a vectorized pick-and-lift state machine recording lift-cube demos."""

import gymnasium as gym

from l2.lift import TASK_ID

gym.register(
    id=f"{TASK_ID}-Scripted",
    entry_point="isaaclab.envs:ManagerBasedRLEnv",
    kwargs={"env_cfg_entry_point": f"{__name__}.env_cfg:ScriptedLiftCubeEnvCfg"},
    disable_env_checker=True,
)
