"""MDP terms of the lift-cube task: Isaac Lab's generic and lift terms plus our success rule."""

from isaaclab.envs.mdp import *  # noqa: F401,F403
from isaaclab_tasks.contrib.lift.mdp import (  # noqa: F401
    object_ee_distance,
    object_goal_distance,
    object_is_lifted,
    object_position_in_robot_root_frame,
)

from .observations import (  # noqa: F401
    ee_orientation_in_robot_root_frame,
    ee_position_in_robot_root_frame,
    object_orientation_in_robot_root_frame,
    object_pose_in_robot_root_frame,
)
from .terminations import cube_lifted_and_held  # noqa: F401
