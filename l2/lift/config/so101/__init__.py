"""The lift-cube task on the SO-101 (TheRobotStudio's ``so101_new_calib``): its gym ids.

``L2-Lift-Cube-SO101-JointPos`` is the base (absolute joint positions, all six joints); ``-Scripted`` and
``-Teleop`` are its sources' variants (they command end-effector poses and record the joint targets).
"""

import gymnasium as gym

TASK_ID = "L2-Lift-Cube-SO101-JointPos"

_CFG = f"{__name__}.joint_pos_env_cfg"
_EXPERT = {"pick_and_lift_cfg_entry_point": f"{__name__}.expert:SO101_PICK_AND_LIFT"}
for task_id, cfg, extra in (
    (TASK_ID, f"{_CFG}:So101LiftCubeEnvCfg", _EXPERT),
    (f"{TASK_ID}-Scripted", f"{_CFG}:So101ScriptedLiftCubeEnvCfg", _EXPERT),
    (f"{TASK_ID}-Teleop", f"{_CFG}:So101TeleopLiftCubeEnvCfg", _EXPERT),  # the leader-arm trace maker drives it
):
    gym.register(
        id=task_id,
        entry_point="isaaclab.envs:ManagerBasedRLEnv",
        kwargs={"env_cfg_entry_point": cfg, **extra},
        disable_env_checker=True,
    )
