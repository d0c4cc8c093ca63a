"""The lift-cube task on the Franka, its arm driven by an absolute end-effector pose (differential IK): the
action every Franka source records, ``(x, y, z, qx, qy, qz, qw)`` in the robot root frame + binary gripper."""

from __future__ import annotations

from isaaclab.controllers.differential_ik_cfg import DifferentialIKControllerCfg
from isaaclab.envs.mdp.actions.actions_cfg import DifferentialInverseKinematicsActionCfg
from isaaclab.envs.mimic_env_cfg import MimicEnvCfg
from isaaclab.sensors import FrameTransformerCfg
from isaaclab.sensors.frame_transformer.frame_transformer_cfg import OffsetCfg
from isaaclab.utils import configclass

from l2.assets.franka import EE_BODY, EE_OFFSET_POS, EE_OFFSET_ROT, EE_PRIM_REGEX, ROOT_PRIM_REGEX, FrankaCfg
from l2.lift import mdp
from l2.lift.camera_cfg import wrist_cam_cfg
from l2.lift.config.franka.cameras import WristCamRobotCfg
from l2.lift.lift_env_cfg import LiftCubeEnvCfg
from l2.lift.variants import MimicVariantCfg, ScriptedVariantCfg, TeleopVariantCfg

ARM_JOINTS = ["panda_joint.*"]
FINGER_JOINTS = ["panda_finger.*"]
FINGER_OPEN = 0.04
"""m per finger, open; 0 closed."""

IK_ARM_ACTION = DifferentialInverseKinematicsActionCfg(
    asset_name="robot",
    joint_names=ARM_JOINTS,
    body_name=EE_BODY,
    controller=DifferentialIKControllerCfg(command_type="pose", use_relative_mode=False, ik_method="dls"),
    body_offset=DifferentialInverseKinematicsActionCfg.OffsetCfg(pos=EE_OFFSET_POS, rot=EE_OFFSET_ROT),
)
"""IK-absolute end-effector pose ``(x, y, z, qx, qy, qz, qw)`` in the robot root frame."""


@configclass
class FrankaLiftCubeEnvCfg(LiftCubeEnvCfg):
    """The base task with the offline Franka (``presets=franka_nucleus``: NVIDIA's), its wrist camera, an
    end-effector frame between the finger pads, the IK-absolute arm action and a binary gripper."""

    robot_name: str = "franka_panda"

    def __post_init__(self):
        super().__post_init__()
        self.scene.robot = FrankaCfg()
        self.scene.wrist_cam = wrist_cam_cfg(WristCamRobotCfg())
        self.scene.ee_frame = FrameTransformerCfg(
            prim_path=ROOT_PRIM_REGEX,
            debug_vis=False,
            target_frames=[
                FrameTransformerCfg.FrameCfg(
                    prim_path=EE_PRIM_REGEX,
                    name="end_effector",
                    offset=OffsetCfg(pos=EE_OFFSET_POS, rot=EE_OFFSET_ROT),
                )
            ],
        )
        self.actions.arm_action = IK_ARM_ACTION
        self.actions.gripper_action = mdp.BinaryJointPositionActionCfg(
            asset_name="robot",
            joint_names=FINGER_JOINTS,
            open_command_expr={"panda_finger_.*": FINGER_OPEN},
            close_command_expr={"panda_finger_.*": 0.0},
        )
        self.commands.object_pose.body_name = EE_BODY
        self.events.reset_arm_joints.varied_start.params["asset_cfg"].joint_names = ARM_JOINTS


@configclass
class FrankaScriptedLiftCubeEnvCfg(ScriptedVariantCfg, FrankaLiftCubeEnvCfg):
    """What the scripted state machine drives."""


@configclass
class FrankaTeleopLiftCubeEnvCfg(TeleopVariantCfg, FrankaLiftCubeEnvCfg):
    """One env for a human with a device, starting every attempt over the workspace."""

    ee_home: tuple[float, ...] = (0.45, 0.0, 0.35, 1.0, 0.0, 0.0, 0.0)  # pointing down


@configclass
class FrankaLiftCubeMimicEnvCfg(MimicVariantCfg, FrankaLiftCubeEnvCfg, MimicEnvCfg):
    """Isaac Lab Mimic's generation on the scripted variant."""

    eef_name: str = "franka"
    # Read by isaaclab_tasks' object_grasped: both fingers must have left the open position (4 cm) by this
    # much; they touch the 4 cm cube after 2 cm.
    gripper_joint_names = ["panda_finger_joint.*"]
    gripper_open_val = FINGER_OPEN
    gripper_threshold = 0.015
