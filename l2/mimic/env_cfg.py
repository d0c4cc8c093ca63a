"""Mimic variant of the lift-cube task: two object-centric subtasks (grasp, lift) on the cube."""

from isaaclab.envs.mimic_env_cfg import MimicEnvCfg, SubTaskConfig
from isaaclab.managers import ObservationGroupCfg as ObsGroup
from isaaclab.managers import ObservationTermCfg as ObsTerm
from isaaclab.managers import SceneEntityCfg
from isaaclab.utils import configclass
from isaaclab_tasks.contrib.stack.mdp import object_grasped

from l2.scripted.env_cfg import ScriptedLiftCubeEnvCfg

EEF_NAME = "franka"
"""The one end effector's key in Mimic's per-eef dicts."""
OBJECT_NAME = "object"
"""The cube's scene entity name, the reference object of both subtasks."""
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
class LiftCubeMimicEnvCfg(ScriptedLiftCubeEnvCfg, MimicEnvCfg):
    """The scripted task (IK-absolute actions, same obs and success) plus Mimic's datagen and subtask configs."""

    # Read by isaaclab_tasks' object_grasped: both fingers must have left the open position (4 cm) by this
    # much; they touch the 4 cm cube after 2 cm.
    gripper_joint_names = ["panda_finger_joint.*"]
    gripper_open_val = 0.04
    gripper_threshold = 0.015

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
            action_noise=0.003,
            num_interpolation_steps=5,
            num_fixed_steps=0,
            apply_noise_during_interpolation=False,
        )
        self.subtask_configs[EEF_NAME] = [
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
