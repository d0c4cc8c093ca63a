"""The lift-cube task on the Franka Panda: its gym ids, one per control mode and source, as Isaac Lab names them.

``L2-Lift-Cube-Franka-IK-Abs`` is the base (absolute end-effector pose); ``-Scripted``, ``-Teleop`` and ``-Mimic``
are its sources' variants; ``L2-Lift-Cube-Franka-JointPos-Rel`` is PPO's (relative joint targets).
"""

from pathlib import Path

import gymnasium as gym

TASK_ID = "L2-Lift-Cube-Franka-IK-Abs"
RL_TASK_ID = "L2-Lift-Cube-Franka-JointPos-Rel"
DEMO_NAME = "lift_cube"
"""Its demo files' names, ``data/demos/<source>_lift_cube.hdf5`` (the package's first task: no robot in the name)."""
RL_POLICY = Path(__file__).resolve().parent / "policies" / "rl" / "model.pt"
"""The shipped RL policy (``python -m l2.rl.checkpoint RUN/model.pt --to`` its folder)."""

BC_MAPPING = Path(__file__).resolve().parents[4] / "config" / "robomimic" / "lift_cube_lowdim.yaml"
"""What a state-based BC policy of this task observes and how its action is laid out (``python -m l2.bc.train``)."""
BC_POLICY = Path(__file__).resolve().parent / "policies" / "bc" / "model.pth"
"""The shipped BC policy (``python -m l2.bc.ship``)."""
_BC = {"bc_mapping": str(BC_MAPPING), "bc_policy": str(BC_POLICY)}

_IK_ABS = f"{__name__}.ik_abs_env_cfg"
_EXPERT = {"scripted_expert_entry_point": "l2.scripted.state_machine:pick_and_lift_expert"}
for task_id, entry_point, cfg, extra in (
    (TASK_ID, "isaaclab.envs:ManagerBasedRLEnv", f"{_IK_ABS}:FrankaLiftCubeEnvCfg", {**_EXPERT, **_BC}),
    (f"{TASK_ID}-Scripted", "isaaclab.envs:ManagerBasedRLEnv", f"{_IK_ABS}:FrankaScriptedLiftCubeEnvCfg", _EXPERT),
    (f"{TASK_ID}-Teleop", "isaaclab.envs:ManagerBasedRLEnv", f"{_IK_ABS}:FrankaTeleopLiftCubeEnvCfg", _EXPERT),
    (f"{TASK_ID}-Mimic", "l2.mimic.env:TaskSpaceMimicEnv", f"{_IK_ABS}:FrankaLiftCubeMimicEnvCfg", {}),
):
    gym.register(
        id=task_id,
        entry_point=entry_point,
        kwargs={"env_cfg_entry_point": cfg, "demo_name": DEMO_NAME, **extra},
        disable_env_checker=True,
    )

for task_id in (RL_TASK_ID, "L2-Lift-Cube-Franka-RL"):  # the second: an older name, kept as an alias
    gym.register(
        id=task_id,
        entry_point="isaaclab.envs:ManagerBasedRLEnv",
        kwargs={
            "env_cfg_entry_point": f"{__name__}.joint_pos_env_cfg:FrankaRLLiftCubeEnvCfg",
            "rsl_rl_cfg_entry_point": f"{__name__}.agents.rsl_rl_ppo_cfg:L2LiftCubePPORunnerCfg",
            "rsl_rl_finetune_cfg_entry_point": f"{__name__}.agents.rsl_rl_ppo_cfg:L2LiftCubePPOFinetuneCfg",
            "rsl_rl_policy": str(RL_POLICY),
            "demo_name": DEMO_NAME,
            "demo_task": TASK_ID,  # its rollouts record the IK-absolute pose equivalent to the policy's action
        },
        disable_env_checker=True,
    )
