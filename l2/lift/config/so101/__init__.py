"""The lift-cube task on the SO-101 (TheRobotStudio's ``so101_new_calib``): its gym ids.

``L2-Lift-Cube-SO101-JointPos`` is the base (absolute joint positions, all six joints); ``-Scripted``,
``-Teleop`` and ``-Mimic`` are its sources' variants (they command end-effector poses and record the joint targets);
``L2-Lift-Cube-SO101-JointPos-Rel`` is PPO's (relative arm joint targets, binary jaw), whose rollouts record the
joint targets too (replayed in the base).
"""

from pathlib import Path

import gymnasium as gym

TASK_ID = "L2-Lift-Cube-SO101-JointPos"
RL_TASK_ID = f"{TASK_ID}-Rel"
RL_POLICY = Path(__file__).resolve().parent / "policies" / "rl" / "model.pt"
"""The shipped RL policy (``python -m l2.rl.checkpoint RUN/model.pt --to`` its folder)."""

BC_MAPPING = Path(__file__).resolve().parents[4] / "config" / "robomimic" / "so101_lift_cube_lowdim.yaml"
"""What a state-based BC policy of this task observes and how its action is laid out (``python -m l2.bc.train``)."""
BC_POLICY = Path(__file__).resolve().parent / "policies" / "bc" / "model.pth"
"""The shipped BC policy (``python -m l2.bc.ship``)."""
_BC = {"bc_mapping": str(BC_MAPPING), "bc_policy": str(BC_POLICY)}

_CFG = f"{__name__}.joint_pos_env_cfg"
_AGENTS = f"{__name__}.agents.rsl_rl_ppo_cfg"
_EXPERT = {
    "pick_and_lift_cfg_entry_point": f"{__name__}.expert:SO101_PICK_AND_LIFT",
    "scripted_expert_entry_point": "l2.scripted.state_machine:pick_and_lift_expert",
}
for task_id, cfg, extra in (
    (TASK_ID, f"{_CFG}:So101LiftCubeEnvCfg", {**_EXPERT, **_BC}),
    (f"{TASK_ID}-Scripted", f"{_CFG}:So101ScriptedLiftCubeEnvCfg", _EXPERT),
    (f"{TASK_ID}-Teleop", f"{_CFG}:So101TeleopLiftCubeEnvCfg", _EXPERT),  # the leader-arm trace maker drives it
    (f"{TASK_ID}-Mimic", f"{_CFG}:So101LiftCubeMimicEnvCfg", {"entry_point": "l2.mimic.env:TaskSpaceMimicEnv"}),
    (
        RL_TASK_ID,
        f"{_CFG}:So101RLLiftCubeEnvCfg",
        {
            **_EXPERT,  # the DAgger teacher (l2/rl/pretrain.py)
            "rsl_rl_cfg_entry_point": f"{_AGENTS}:So101LiftCubePPORunnerCfg",
            "rsl_rl_finetune_cfg_entry_point": f"{_AGENTS}:So101LiftCubePPOFinetuneCfg",
            "rsl_rl_policy": str(RL_POLICY),
            "demo_task": TASK_ID,
        },
    ),
):
    extra = dict(extra)
    gym.register(
        id=task_id,
        entry_point=extra.pop("entry_point", "isaaclab.envs:ManagerBasedRLEnv"),
        kwargs={"env_cfg_entry_point": cfg, **extra},
        disable_env_checker=True,
    )
