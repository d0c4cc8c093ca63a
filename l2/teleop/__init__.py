"""Teleoperation source: a human drives the lift-cube task with a device; successful attempts are saved."""

import gymnasium as gym

from l2.lift import TASK_ID

gym.register(
    id=f"{TASK_ID}-Teleop",
    entry_point="isaaclab.envs:ManagerBasedRLEnv",
    kwargs={"env_cfg_entry_point": f"{__name__}.env_cfg:TeleopLiftCubeEnvCfg"},
    disable_env_checker=True,
)
