"""The lift-cube task package, laid out as Isaac Lab lays out its tasks: the robot-agnostic base cfg
(``lift_env_cfg.py``, ``mdp/``, ``camera_cfg.py``, ``variety.py``, the sources' ``variants.py``), then each
robot's cfgs and gym registrations in ``config/<robot>/`` (imported here, as ``import isaaclab_tasks`` imports
Isaac Lab's; they import Isaac Lab lazily, through their entry points)."""

from l2.lift import config  # noqa: F401
from l2.lift.config.franka import TASK_ID  # noqa: F401
