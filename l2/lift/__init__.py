"""Lift-cube task package: gym registration of the base task (cfgs import Isaac Lab lazily).

Each variant registers itself beside its cfg (``l2.scripted``, ``l2.teleop``, ``l2.rl``);
:func:`l2.recording.sim.load_env_cfg` imports them all, as ``import isaaclab_tasks`` does for Isaac Lab's tasks.
"""

import gymnasium as gym

TASK_ID = "L2-Lift-Cube-Franka-IK-Abs"

gym.register(
    id=TASK_ID,
    entry_point="isaaclab.envs:ManagerBasedRLEnv",
    kwargs={"env_cfg_entry_point": f"{__name__}.lift_env_cfg:LiftCubeEnvCfg"},
    disable_env_checker=True,
)
