"""The lift-cube task on the SO-101, its six joints driven by absolute joint-position targets: the action a real
SO-101 records (LeRobot's ``so101_follower``), in radians here. Sources that think in end-effector poses (the
scripted expert, keyboard teleop) command through :data:`IK_ARM_ACTION` and record the joint targets it gives
(``l2/recording/task_space.py``).

The scene is scaled to the arm's reach: a 3 cm cube about 22 cm in front of its base, control at 30 Hz (real SO-101
recordings' rate).
"""

from __future__ import annotations

import isaaclab.sim as sim_utils
from isaaclab.envs.mdp.actions.actions_cfg import DifferentialInverseKinematicsActionCfg
from isaaclab.envs.mimic_env_cfg import MimicEnvCfg
from isaaclab.sensors import FrameTransformerCfg
from isaaclab.sensors.frame_transformer.frame_transformer_cfg import OffsetCfg
from isaaclab.utils import configclass
from isaaclab_newton.sim.schemas import MujocoCollisionCfg
from isaaclab_tasks.contrib.stack.config.so101.pose_ik_action import SO101PoseIKActionCfg
from isaaclab_tasks.contrib.stack.config.so101.pose_ik_controller import SO101PoseIKControllerCfg

from l2.assets.so101 import (
    ARM_JOINTS,
    EE_BODY,
    EE_OFFSET_POS,
    EE_OFFSET_ROT,
    EE_PRIM_REGEX,
    GRIPPER_JOINT,
    ROOT_PRIM_REGEX,
    So101Cfg,
)
from l2.lift import mdp, variety
from l2.lift.camera_cfg import TableCamCfg, cameras_obs_group, wrist_cam_cfg
from l2.lift.config.so101.cameras import FRONT_CFG, CamerasObsCfg, WristOnRobotCfg
from l2.lift.lift_env_cfg import LiftCubeEnvCfg, LiftCubeSceneCfg, cube_cfg
from l2.lift.variants import MimicVariantCfg, RLVariantCfg, ScriptedVariantCfg, TeleopVariantCfg

CUBE_SIZE = 0.03
CUBE_START = (0.22, 0.0, CUBE_SIZE / 2)
CUBE_POSE_RANGE = {"x": (-0.04, 0.04), "y": (-0.07, 0.07), "z": (0.0, 0.0), "yaw": (-0.785, 0.785)}
"""Reset randomization of the cube around :data:`CUBE_START` (m, rad): where a top-down grasp reaches."""
SUCCESS_HEIGHT = 0.08
CUBE_AREA = {"x": (0.16, 0.28), "y": (-0.12, 0.12)}
MIN_CUBE_GAP = 0.07
"""``presets=variety``: where its three cubes are drawn, pairwise this far apart (m)."""
MAT_POS = (0.22, 0.0)
MAT_SIZE = (0.3, 0.4, 0.002)
CUBE_MASS = 0.03
CUBE_CONTACT = MujocoCollisionCfg(solimp=(0.99, 0.99, 0.001, 0.5, 2.0), priority=1)
"""The cube's MuJoCo contacts: impedance 0.99 (MuJoCo's default 0.9-0.95), taking precedence over what the cube
touches. At the default the jaws' 1 N m grip sinks several mm into a 30 g cube (the jaw at 0.26 rad on a cube it
meets at 0.4); here about 1 mm (0.32). A shorter time constant as well (0.01 s, under two physics steps) let a held
cube sink 9 mm into the ground now and then."""
GRIPPER_OPEN = 1.0
GRIPPER_CLOSED = 0.1
"""The jaw's targets (rad) for an open and a closed command: 1.0 opens about 8 cm, past a 3 cm cube's diagonal;
closed on the cube the jaw stops near 0.3."""
RELATIVE_JOINT_SCALE = 0.05
"""The RL variant's arm action: joint targets ``q + 0.05 a`` (rad; ``q`` measured every physics substep)."""

IK_ARM_ACTION = SO101PoseIKActionCfg(
    asset_name="robot",
    joint_names=list(ARM_JOINTS),
    body_name=EE_BODY,
    body_offset=DifferentialInverseKinematicsActionCfg.OffsetCfg(pos=EE_OFFSET_POS, rot=EE_OFFSET_ROT),
    scale=1.0,
    # Isaac Lab's SO-101 pose IK (its cube-stack IK-Abs task): a 5-DOF arm cannot reach every pose, so the
    # orientation rows are soft-weighted and served by the wrist only; position is exact.
    controller=SO101PoseIKControllerCfg(
        command_type="pose",
        use_relative_mode=False,
        ik_method="adaptive_dls",
        ik_params={"lambda_min": 0.05, "lambda_max": 0.2, "sigma_thresh": 0.02},
        orientation_weight=0.5,
        orientation_joint_names=("wrist_flex", "wrist_roll"),
        joint_limit_avoidance_gain=0.5,
        joint_limit_avoidance_margin=0.3,
    ),
)
"""The end-effector pose ``(x, y, z, qx, qy, qz, qw)`` of the grasp point in the robot root frame."""


@configclass
class So101LiftCubeSceneCfg(LiftCubeSceneCfg):
    """The base scene with the cameras under SO-101 rigs' names: the fixed one ``front``, the gripper's ``wrist``."""

    table_cam = None
    wrist_cam = None
    front = TableCamCfg(default=FRONT_CFG)
    wrist = wrist_cam_cfg(WristOnRobotCfg())


@configclass
class So101LiftCubeEnvCfg(LiftCubeEnvCfg):
    """The base task with the offline SO-101 (``presets=so101_nucleus``: Isaac Lab's cloud asset), its ``front`` and
    ``wrist`` cameras, a grasp-point frame between the jaws and absolute joint-position actions for all six
    joints: ``shoulder_pan, shoulder_lift, elbow_flex, wrist_flex, wrist_roll`` then ``gripper``."""

    scene: So101LiftCubeSceneCfg = So101LiftCubeSceneCfg(num_envs=16, env_spacing=2.0)
    robot_name: str = "so101"
    ik_arm_action = IK_ARM_ACTION
    gripper_targets = (GRIPPER_OPEN, GRIPPER_CLOSED)

    def __post_init__(self):
        super().__post_init__()
        self.sim.dt = 1 / 120
        self.decimation = 4  # 30 Hz control, as real SO-101 recordings
        self.sim.render_interval = self.decimation

        scene = self.scene
        scene.robot = So101Cfg()
        scene.ee_frame = FrameTransformerCfg(
            prim_path=ROOT_PRIM_REGEX,
            debug_vis=False,
            target_frames=[
                FrameTransformerCfg.FrameCfg(
                    prim_path=EE_PRIM_REGEX, name="end_effector", offset=OffsetCfg(pos=EE_OFFSET_POS, rot=EE_OFFSET_ROT)
                )
            ],
        )
        scene.object = cube_cfg("Object", variety.PALETTE["red"], CUBE_START, size=CUBE_SIZE, mass=CUBE_MASS)
        for i, name in enumerate(("distractor_0", "distractor_1")):
            pos = (0.22, 0.12 - 0.24 * i, CUBE_SIZE / 2)
            grey = (0.5, 0.5, 0.5)
            getattr(scene, name).variety = cube_cfg(f"Distractor{i}", grey, pos, size=CUBE_SIZE, mass=CUBE_MASS)
        for cube in (scene.object, scene.distractor_0.variety, scene.distractor_1.variety):
            cube.spawn.collision_props = [sim_utils.UsdPhysicsCollisionCfg(), CUBE_CONTACT]
        scene.mat.variety.init_state.pos = (*MAT_POS, 0.0005 - MAT_SIZE[2] / 2)
        scene.mat.variety.spawn.size = MAT_SIZE
        self.observations.cameras = cameras_obs_group(CamerasObsCfg())

        self.actions.arm_action = mdp.JointPositionActionCfg(
            asset_name="robot", joint_names=list(ARM_JOINTS), scale=1.0, use_default_offset=False
        )
        self.actions.gripper_action = mdp.JointPositionActionCfg(
            asset_name="robot", joint_names=[GRIPPER_JOINT], scale=1.0, use_default_offset=False
        )

        self.commands.object_pose.body_name = EE_BODY
        self.commands.object_pose.ranges.pos_x = (0.16, 0.28)
        self.commands.object_pose.ranges.pos_y = (-0.1, 0.1)
        self.commands.object_pose.ranges.pos_z = (0.1, 0.18)
        self.events.reset_object_position.params["pose_range"] = dict(CUBE_POSE_RANGE)
        self.events.reset_arm_joints.varied_start.params["asset_cfg"].joint_names = list(ARM_JOINTS)
        self.events.randomize_scene.variety.params = {
            "cube_area": CUBE_AREA,
            "min_cube_gap": MIN_CUBE_GAP,
            "camera": "front",
        }
        self.terminations.success.params["minimal_height"] = SUCCESS_HEIGHT
        self.terminations.success.params["max_ee_distance"] = 0.03


@configclass
class So101ScriptedLiftCubeEnvCfg(ScriptedVariantCfg, So101LiftCubeEnvCfg):
    """What the scripted state machine drives (through the pose IK)."""


@configclass
class So101TeleopLiftCubeEnvCfg(TeleopVariantCfg, So101LiftCubeEnvCfg):
    """One env for a human with a device, starting every attempt over the workspace."""

    ee_home: tuple[float, ...] = (0.22, 0.0, 0.15, 0.0, 0.0, 0.0, 1.0)  # jaws pointing down


@configclass
class So101LiftCubeMimicEnvCfg(MimicVariantCfg, So101LiftCubeEnvCfg, MimicEnvCfg):
    """Isaac Lab Mimic's generation on the scripted variant: target poses through the pose IK, joint targets out."""

    eef_name: str = "so101"
    # The jaws close 2 mm above the cube's centre (expert.py); 3 mm of noise on the targets tips the cube in most
    # attempts (0 of 20 generated), 1 mm in few (19 of 24).
    action_noise = 0.001
    # Read by isaaclab_tasks' object_grasped: the jaw has left its open target by this much (rad); closed on the
    # cube it stops near 0.3.
    gripper_joint_names = [GRIPPER_JOINT]
    gripper_open_val = GRIPPER_OPEN
    gripper_threshold = 0.3


@configclass
class So101RLLiftCubeEnvCfg(RLVariantCfg, So101LiftCubeEnvCfg):
    """PPO's (rsl_rl): relative joint-position targets for the five arm joints (a small correction around the
    current pose, what a policy cloned from the scripted expert predicts) and the binary jaw (open or closed target).
    A rollout records the joint targets these set, all six joints, as the other sources do."""

    demo_actions = "joint_position"
    gripper_targets = None  # the binary jaw action takes the ±1 itself

    def __post_init__(self):
        super().__post_init__()
        # The expert's slow descent and lift (PickAndLiftCfg.max_speed) take 3-5 s of the base's 5.
        self.episode_length_s = 8.0
        self.actions.arm_action = mdp.RelativeJointPositionActionCfg(
            asset_name="robot", joint_names=list(ARM_JOINTS), scale=RELATIVE_JOINT_SCALE
        )
        self.actions.gripper_action = mdp.BinaryJointPositionActionCfg(
            asset_name="robot",
            joint_names=[GRIPPER_JOINT],
            open_command_expr={GRIPPER_JOINT: GRIPPER_OPEN},
            close_command_expr={GRIPPER_JOINT: GRIPPER_CLOSED},
        )
