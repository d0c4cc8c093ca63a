"""Isaac Lab's SO-101 cube stack, kit-less: its three gym ids' cfgs (``stack_env_cfg.py``) under ``L2-`` ids, and
the sources' variants.

``L2-Stack-Cube-SO101-v0``, ``-IK-Abs-v0`` and ``-Joint-v0`` are Isaac Lab's ``IsaacContrib-Stack-Cube-SO101-v0``,
``-IK-Abs-v0`` and ``-Joint-Teleop-v0`` offline; ``-Scripted-v0`` and ``-Teleop-v0`` are the joint variant as the
scripted expert and a human drive it (end-effector commands in, joint targets recorded).
"""

import gymnasium as gym

TASK_ID = "L2-Stack-Cube-SO101-Joint-v0"
"""The stack as its demonstrations are recorded: absolute joint targets for the six joints."""
RL_TASK_ID = "L2-Stack-Cube-SO101-RL-v0"
"""PPO's: the task's own joint-position action, its policy terms concatenated, rewards of ours."""

_CFG = f"{__name__}.stack_env_cfg"
_EXPERT = {"scripted_expert_entry_point": f"{__name__}.expert:stack_expert"}
"""The scripted stacking expert (``l2/scripted/run.py``), on the variants that take its commands through the pose IK
at the grasp point."""
for task_id, cfg, extra in (
    ("L2-Stack-Cube-SO101-v0", "So101StackJointPosEnvCfg", {}),
    ("L2-Stack-Cube-SO101-IK-Abs-v0", "So101StackIKAbsEnvCfg", {}),
    (TASK_ID, "So101StackJointEnvCfg", _EXPERT),
    ("L2-Stack-Cube-SO101-Scripted-v0", "So101StackScriptedEnvCfg", _EXPERT),
    ("L2-Stack-Cube-SO101-Teleop-v0", "So101StackTeleopEnvCfg", _EXPERT),
):
    gym.register(
        id=task_id,
        entry_point="isaaclab.envs:ManagerBasedRLEnv",
        kwargs={"env_cfg_entry_point": f"{_CFG}:{cfg}", **extra},
        disable_env_checker=True,
    )
gym.register(
    id="L2-Stack-Cube-SO101-Mimic-v0",
    entry_point="l2.mimic.env:TaskSpaceMimicEnv",
    kwargs={"env_cfg_entry_point": f"{_CFG}:So101StackMimicEnvCfg"},
    disable_env_checker=True,
)
gym.register(
    id=RL_TASK_ID,
    entry_point="isaaclab.envs:ManagerBasedRLEnv",
    kwargs={
        "env_cfg_entry_point": f"{_CFG}:So101StackRLEnvCfg",
        "rsl_rl_cfg_entry_point": f"{__name__}.agents.rsl_rl_ppo_cfg:So101StackPPORunnerCfg",
        "demo_task": TASK_ID,
    },
    disable_env_checker=True,
)
