"""What each demonstration source changes in the lift-cube task, robot-agnostic.

Each is a mixin that a robot's ``config/<robot>/`` cfg puts before that robot's base cfg, e.g.
``class FrankaTeleopLiftCubeEnvCfg(TeleopVariantCfg, FrankaLiftCubeEnvCfg)``: the robot cfg's ``__post_init__``
runs first, then the variant's, then the class's own (for what is both the source's and the robot's, such as the
RL action's joints or the teleop home pose).
"""

from __future__ import annotations

from dataclasses import MISSING

from isaaclab.envs.mimic_env_cfg import SubTaskConfig
from isaaclab.managers import ObservationGroupCfg as ObsGroup
from isaaclab.managers import ObservationTermCfg as ObsTerm
from isaaclab.managers import RewardTermCfg as RewTerm
from isaaclab.managers import SceneEntityCfg
from isaaclab.managers import TerminationTermCfg as DoneTerm
from isaaclab.utils import configclass
from isaaclab_tasks.contrib.lift.lift_env_cfg import RewardsCfg
from isaaclab_tasks.contrib.stack.mdp import object_grasped
from isaaclab_tasks.utils import preset

from l2.lift import mdp, variety
from l2.lift.lift_env_cfg import LiftCubeTerminationsCfg, ObservationsCfg


@configclass
class ScriptedVariantCfg:
    """The scripted state machine's: terms kept separate (the base already does; stated because the state machine
    and the recorder rely on it) and a longer episode so slow grasps can finish."""

    def __post_init__(self):
        super().__post_init__()
        self.observations.policy.concatenate_terms = False
        self.episode_length_s = 6.0


@configclass
class TeleopVariantCfg:
    """One env, where the operator, not the task, ends an attempt.

    As in Isaac Lab's ``record_demos.py``, the ``success`` term is taken out of the termination manager
    (so a lift no longer resets the env) and kept in :attr:`success_term`, which the session evaluates
    every step to decide when to save. The time-out is removed too; the cube-dropping term stays.
    """

    success_term: DoneTerm | None = None
    """The base task's ``success`` term, evaluated by the teleop session instead of the termination manager."""
    ee_home: tuple[float, ...] = MISSING
    """End-effector target ``(x, y, z, qx, qy, qz, qw)`` (robot root frame) at the start of every attempt,
    gripper open; the device's deltas move it from there. Each robot's."""

    def __post_init__(self):
        super().__post_init__()
        self.scene.num_envs = 1
        self.observations.policy.concatenate_terms = False
        self.success_term = self.terminations.success
        self.terminations.success = None
        self.terminations.time_out = None


@configclass
class RLRewardsCfg(RewardsCfg):
    """Isaac Lab's reaching, lifting and goal-tracking rewards, plus a bonus when ``success`` ends the
    episode (it compensates the lifting/tracking rewards that the early termination cuts off)."""

    success_bonus = RewTerm(
        func=mdp.cube_lifted_and_held, params=LiftCubeTerminationsCfg().success.params, weight=1000.0
    )


@configclass
class RLPolicyObsCfg(ObservationsCfg.PolicyCfg):
    """The base task's state terms, concatenated in their order: rsl_rl's MLP takes one vector; the recorder
    splits them back out."""

    def __post_init__(self):
        super().__post_init__()
        self.concatenate_terms = True
        # The policy's input has the width it was trained with: with presets=variety, where the distractors
        # are, is not part of it (the target is object_position, as on the plain scene).
        self.distractor_positions = None


@configclass
class RLSceneObsCfg(ObsGroup):
    """Where the distractor cubes are: written as ``obs/distractor_positions`` like the other sources', never
    fed to the policy (rsl_rl reads the ``policy`` group only)."""

    distractor_positions = ObsTerm(func=variety.distractor_positions)

    def __post_init__(self):
        self.enable_corruption = False
        self.concatenate_terms = False


@configclass
class RLObservationsCfg(ObservationsCfg):
    policy: RLPolicyObsCfg = RLPolicyObsCfg()
    scene = preset(default=None, variety=RLSceneObsCfg())  # l2.recording.handler.SCENE_GROUP


@configclass
class RLVariantCfg:
    """PPO's (rsl_rl): one concatenated policy input and the lift rewards. The arm's action (a joint-space one,
    which every robot can reach without IK) is the robot's, set by its RL cfg with its ``ik_arm_action``."""

    observations: RLObservationsCfg = RLObservationsCfg()
    rewards: RLRewardsCfg = RLRewardsCfg()
    demo_actions: str = "ee_pose"
    """What a rollout records as ``actions`` (``l2/rl/recorders.py``): what the robot's other sources record.
    ``"ee_pose"``: the IK-absolute pose equivalent to the policy's joint action (the Franka's);
    ``"joint_position"``: the joint targets the policy's action set (the SO-101's)."""

    def __post_init__(self):
        super().__post_init__()  # a configclass mixin without one would end the chain (configclass adds its own)


OBJECT_NAME = "object"
"""The cube's scene entity name, the reference object of both Mimic subtasks."""
GRASP_SIGNAL = "grasp"


@configclass
class SubtaskTermsCfg(ObsGroup):
    """Mimic's ``subtask_terms`` group: one 0/1 signal per subtask that has an end (the last has none)."""

    grasp = ObsTerm(
        func=object_grasped,
        params={
            "robot_cfg": SceneEntityCfg("robot"),
            "ee_frame_cfg": SceneEntityCfg("ee_frame"),
            "object_cfg": SceneEntityCfg(OBJECT_NAME),
            # The end-effector point is 3 cm above the cube's centre when it closes (PickAndLiftCfg.grasp_height).
            "diff_threshold": 0.05,
        },
    )

    def __post_init__(self):
        self.enable_corruption = False
        self.concatenate_terms = False


@configclass
class MimicVariantCfg(ScriptedVariantCfg):
    """Isaac Lab Mimic's: the scripted variant (the robot's actions, same obs and success) plus two object-centric
    subtasks (grasp, lift) of the one end effector :attr:`eef_name`. The robot's cfg names Isaac Lab's
    ``MimicEnvCfg`` last among its bases (its ``__post_init__`` does not pass the call on) and gives
    ``object_grasped``'s gripper fields (``gripper_joint_names``, ``gripper_open_val``, ``gripper_threshold``)."""

    eef_name: str = MISSING
    """The one end effector's key in Mimic's per-eef dicts."""

    action_noise: float = 0.003
    """Noise (m, std) Mimic adds to each generated target position: variety between demos from one source, kept
    below what the robot's grasp tolerates."""

    def __post_init__(self):
        super().__post_init__()
        self.observations.subtask_terms = SubtaskTermsCfg()

        self.datagen_config.name = "lift_cube_mimic"
        self.datagen_config.generation_guarantee = True
        self.datagen_config.generation_keep_failed = False
        self.datagen_config.generation_select_src_per_subtask = True
        self.datagen_config.generation_transform_first_robot_pose = False
        self.datagen_config.generation_interpolate_from_last_target_pose = True

        common = dict(
            object_ref=OBJECT_NAME,
            # With one source demo there is nothing to choose from; with several, the demo whose cube pose is
            # nearest the new one.
            selection_strategy="nearest_neighbor_object",
            selection_strategy_kwargs={"nn_k": 3},
            action_noise=self.action_noise,
            num_interpolation_steps=5,
            num_fixed_steps=0,
            apply_noise_during_interpolation=False,
        )
        self.subtask_configs[self.eef_name] = [
            # Approach, descend and close until both fingers press the cube, a few steps more at random.
            SubTaskConfig(
                subtask_term_signal=GRASP_SIGNAL,
                subtask_term_offset_range=(2, 6),
                description="Grasp the cube",
                next_subtask_description="Lift the cube",
                **common,
            ),
            # Lift it: replayed relative to the cube's pose when the lift starts (it is in the hand by then).
            SubTaskConfig(
                subtask_term_signal=None,
                subtask_term_offset_range=(0, 0),
                description="Lift the cube",
                **common,
            ),
        ]
