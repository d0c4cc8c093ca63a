"""Isaac Lab Mimic source: many lift-cube demos generated from a few annotated ones (MimicGen-style)."""

import gymnasium as gym

from l2.lift import TASK_ID

gym.register(
    id=f"{TASK_ID}-Mimic",
    entry_point=f"{__name__}.env:LiftCubeMimicEnv",
    kwargs={"env_cfg_entry_point": f"{__name__}.env_cfg:LiftCubeMimicEnvCfg"},
    disable_env_checker=True,
)
