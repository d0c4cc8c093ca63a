"""Isaac Lab's SO-101 cube stack with nothing of its task changed: its cfg classes derived, and after their own
``__post_init__`` only what cannot run here replaced (:class:`OfflineStackCfg`).

What is replaced, and why:

- **the robot**: our offline SO-101 (``l2/assets/so101.py``; the cloud USD is unreachable) at the task's seat
  height and start joints, without the task's 90 deg base yaw (that turns the cloud USD, whose arm faces -y, to
  face the cubes; ours already faces +x);
- **the end-effector frames**: the same two targets (``end_effector`` on ``gripper``, ``tool_jaw`` on the moving
  jaw) at the offline USD's prim paths, ``end_effector`` at the grasp point between the jaws, as the task's own
  comment asks (at the ``gripper`` origin it is 10 cm behind the jaws and ``object_grasped``, so the ``grasp_1``
  and ``grasp_2`` subtask signals, never fire);
- **the table, the ground and the three cubes**: primitive boxes instead of cloud USDs, the cubes 4.77 cm (the
  task's blocks, as its own stack test measures them) with the task's colours and start poses;
- **the physics**: the task's default is PhysX (Isaac Sim); ours is the Newton/MuJoCo-Warp cfg of the rest of the
  package (:class:`l2.lift.lift_env_cfg.LiftPhysicsCfg`), which steps this scene several times faster on the
  CPU than the task's own Newton preset, with one change for box pairs (:class:`l2.stack.physics.StackPhysicsCfg`):
  MuJoCo's analytic box-box collider instead of MuJoCo-Warp's convex one, which gives a cube resting on a cube one
  contact and tips it off unless the two are aligned to the hundredth of a radian;
- **cameras**: the task has none (its ``rgb_camera`` group is empty); a ``front`` and a ``wrist`` camera are added
  in a ``cameras`` group, removed by ``presets=no_cameras``.

The observations, actions, events, terminations and subtask terms are the task's own.
"""

from __future__ import annotations

import copy
import math

import isaaclab.sim as sim_utils
from isaaclab.assets import AssetBaseCfg, RigidObjectCfg
from isaaclab.envs.mimic_env_cfg import MimicEnvCfg, SubTaskConfig
from isaaclab.managers import ObservationGroupCfg as ObsGroup
from isaaclab.managers import ObservationTermCfg as ObsTerm
from isaaclab.managers import RewardTermCfg as RewTerm
from isaaclab.managers import SceneEntityCfg
from isaaclab.utils import configclass, replace
from isaaclab_tasks.contrib.stack import mdp as stack_mdp
from isaaclab_tasks.contrib.stack.config.so101 import (
    stack_ik_abs_env_cfg,
    stack_joint_pos_env_cfg,
    stack_joint_teleop_env_cfg,
)
from isaaclab_tasks.contrib.stack.stack_env_cfg import make_ee_frame_cfg

from l2.assets.so101 import EE_OFFSET_POS, EE_PRIM_REGEX, GRIPPER_OPEN, ROOT_PRIM_REGEX, SO101_OFFLINE_CFG
from l2.lift.camera_cfg import TableCamCfg, cameras_obs_group, wrist_cam_cfg
from l2.lift.config.so101.cameras import CamerasObsCfg, WristOnRobotCfg
from l2.lift.config.so101.joint_pos_env_cfg import IK_ARM_ACTION
from l2.lift.lift_env_cfg import cube_cfg
from l2.lift.variants import TeleopVariantCfg
from l2.stack import mdp
from l2.stack.config.so101.cameras import FRONT_CFG
from l2.stack.physics import StackPhysicsCfg

CUBE_EDGE = 0.0477
"""The task's blocks (m): its own SO-101 stack test measures a resting stack's step as 0.0477."""
CUBE_Z = 0.0203
"""The cubes' centre height in the task's start poses and reset event."""
TABLE_TOP_Z = CUBE_Z - CUBE_EDGE / 2
"""Where the table's top and the robot's base sit, so that the task's cube heights rest on the table."""
CUBE_MASS = 0.05
CUBE_COLORS = {"cube_1": (0.1, 0.2, 0.9), "cube_2": (0.9, 0.1, 0.1), "cube_3": (0.1, 0.8, 0.2)}
"""The task's blocks: blue, red, green."""
INSTRUCTION = "Stack the red cube on the blue cube, then the green cube on the red cube."
"""What the task asks (its success: ``cube_2`` on ``cube_1``, ``cube_3`` on ``cube_2``, the jaw open)."""
JAW_PRIM_REGEX = "{ENV_REGEX_NS}/Robot/(Geometry/base/shoulder/upper_arm/lower_arm/wrist/gripper/)?moving_jaw_so101_v1"


def _cube(cube: RigidObjectCfg, name: str) -> RigidObjectCfg:
    """The task's cube ``name`` (prim path and start pose kept) as the package's primitive box."""
    spawn = cube_cfg(name, CUBE_COLORS[name], size=CUBE_EDGE, mass=CUBE_MASS).spawn
    spawn.semantic_tags = [("class", name)]
    return replace(cube, spawn=spawn)


@configclass
class OfflineStackCfg:
    """Mixin: a stack cfg of Isaac Lab's, its cloud assets, physics and (absent) cameras replaced after its own
    ``__post_init__`` (the module docstring says what and why)."""

    instruction: str = INSTRUCTION
    robot_name: str = "so101"

    def __post_init__(self):
        super().__post_init__()
        scene = self.scene
        scene.robot = replace(
            SO101_OFFLINE_CFG,
            init_state=replace(
                SO101_OFFLINE_CFG.init_state,
                pos=(0.0, 0.0, TABLE_TOP_Z),
                joint_pos=dict(scene.robot.init_state.joint_pos),
            ),
        )
        scene.ee_frame = make_ee_frame_cfg(
            base_prim_path=ROOT_PRIM_REGEX,
            target_specs=[(EE_PRIM_REGEX, "end_effector", EE_OFFSET_POS), (JAW_PRIM_REGEX, "tool_jaw", (0.0,) * 3)],
            marker_scale=(0.05, 0.05, 0.05),
        )
        scene.table = AssetBaseCfg(
            prim_path="{ENV_REGEX_NS}/Table",
            init_state=AssetBaseCfg.InitialStateCfg(pos=(0.25, 0.0, TABLE_TOP_Z - 0.025)),
            spawn=sim_utils.CuboidCfg(
                size=(0.9, 0.8, 0.05),
                collision_props=sim_utils.UsdPhysicsCollisionCfg(),
                visual_material=sim_utils.PreviewSurfaceCfg(diffuse_color=(0.55, 0.45, 0.35)),
                semantic_tags=[("class", "table")],
            ),
        )
        scene.plane = AssetBaseCfg(
            prim_path="/World/GroundPlane",
            init_state=AssetBaseCfg.InitialStateCfg(pos=(0.0, 0.0, -1.1)),
            spawn=sim_utils.CuboidCfg(
                size=(100.0, 100.0, 0.1),
                collision_props=sim_utils.UsdPhysicsCollisionCfg(),
                semantic_tags=[("class", "ground")],
            ),
        )
        for name in CUBE_COLORS:
            setattr(scene, name, _cube(getattr(scene, name), name))
        self.sim.physics = StackPhysicsCfg()
        scene.front = TableCamCfg(default=FRONT_CFG)
        scene.wrist = wrist_cam_cfg(WristOnRobotCfg())
        self.observations.cameras = cameras_obs_group(CamerasObsCfg())
        self.sim.render_interval = self.decimation  # one render per recorded frame


@configclass
class So101StackJointPosEnvCfg(OfflineStackCfg, stack_joint_pos_env_cfg.SO101CubeStackEnvCfg):
    """``IsaacContrib-Stack-Cube-SO101-v0``: arm joint targets relative to the start pose (scale 0.5), binary jaw."""


@configclass
class So101StackIKAbsEnvCfg(OfflineStackCfg, stack_ik_abs_env_cfg.SO101CubeStackEnvCfg):
    """``IsaacContrib-Stack-Cube-SO101-IK-Abs-v0``: the ``gripper`` body's pose in the robot root frame, then the
    jaw's closedness (0 open … 1 closed)."""

    gripper_targets = (GRIPPER_OPEN, 0.0)
    """Our sources' jaw commands (+1 open … -1 closed) as the task's closedness (``TaskSpaceDriver``)."""


@configclass
class So101StackJointEnvCfg(OfflineStackCfg, stack_joint_teleop_env_cfg.SO101CubeStackEnvCfg):
    """``IsaacContrib-Stack-Cube-SO101-Joint-Teleop-v0``: absolute joint targets for all six joints, what a real
    SO-101 records. Sources that think in end-effector poses command through :attr:`ik_arm_action` (the pose IK
    of the task's IK-Abs variant, at the grasp point) and record the joint targets it gives."""

    ik_arm_action = IK_ARM_ACTION
    gripper_targets = (GRIPPER_OPEN, 0.0)
    """The jaw's targets (rad) for the commands +1 (fully open, as ``cubes_stacked`` wants it) and -1 (closed)."""


@configclass
class So101StackScriptedEnvCfg(So101StackJointEnvCfg):
    """What the scripted stacking expert drives: the joint variant with a 20 s episode (its stacks take 13.5 s on
    average, docs/scripted.md; the task's 30 s would only lengthen failed attempts)."""

    def __post_init__(self):
        super().__post_init__()
        self.episode_length_s = 20.0


@configclass
class So101StackTeleopEnvCfg(TeleopVariantCfg, So101StackJointEnvCfg):
    """One env for a human with a device (keyboard, SpaceMouse, the leader arm's trace): the operator ends an
    attempt, the session saves it when the task's ``success`` holds."""

    ee_home: tuple[float, ...] = (0.2, 0.0, 0.15, 0.0, 0.0, 0.0, 1.0)  # over the cubes, jaws pointing down


@configclass
class So101StackRLRewardsCfg:
    """Dense enough to start: the grasp point near the red cube, the red cube grasped, and a bonus when the task's
    own ``success`` ends the episode."""

    reach_cube_2 = RewTerm(func=mdp.ee_near_cube, params={"std": 0.1}, weight=1.0)
    grasp_cube_2 = RewTerm(
        func=stack_mdp.object_grasped,
        params={
            "robot_cfg": SceneEntityCfg("robot"),
            "ee_frame_cfg": SceneEntityCfg("ee_frame"),
            "object_cfg": SceneEntityCfg("cube_2"),
        },
        weight=2.0,
    )
    success_bonus = RewTerm(func=stack_mdp.cubes_stacked, weight=100.0)
    action_rate = RewTerm(func=stack_mdp.action_rate_l2, weight=-1e-3)


@configclass
class So101StackRLEnvCfg(So101StackJointPosEnvCfg):
    """PPO's (rsl_rl): the task's own joint-position action (arm targets around the start pose, binary jaw) and its
    policy terms concatenated into one input (a rollout's recorder splits them back out). A rollout records the
    joint targets the policy's action sets, as the joint variant's sources do (:attr:`demo_task`)."""

    rewards: So101StackRLRewardsCfg = So101StackRLRewardsCfg()
    demo_actions: str = "joint_position"

    def __post_init__(self):
        super().__post_init__()
        self.observations.policy.concatenate_terms = True


HELD_JAW = 0.7
"""Below this the jaw (rad) is closed on a cube: it stops near 0.55 on a 4.77 cm cube, and approaches at 0.85."""
RELEASED_JAW = 0.75
"""Above this the jaw (rad) has let a placed cube go (it opens back to 0.85 after a release)."""


@configclass
class So101StackSubtaskTermsCfg(ObsGroup):
    """Mimic's subtask signals for a jaw that approaches part-open, as the scripted expert's does. The task's own
    measure "grasped" from the fully open jaw and "stacked" only once it is fully open again: with a part-open
    approach its ``grasp_1`` rises before the cube is reached and its ``stack_1`` only after ``grasp_2``, which
    Mimic refuses. These are the same three signals, measured from the jaw closed on the cube and released."""

    grasp_1 = ObsTerm(func=mdp.cube_held, params={"cube_cfg": SceneEntityCfg("cube_2"), "max_jaw": HELD_JAW})
    stack_1 = ObsTerm(
        func=mdp.cube_released_on,
        params={
            "upper_cfg": SceneEntityCfg("cube_2"),
            "lower_cfg": SceneEntityCfg("cube_1"),
            "min_jaw": RELEASED_JAW,
            "edge": CUBE_EDGE,
        },
    )
    grasp_2 = ObsTerm(func=mdp.cube_held, params={"cube_cfg": SceneEntityCfg("cube_3"), "max_jaw": HELD_JAW})

    def __post_init__(self):
        self.enable_corruption = False
        self.concatenate_terms = False


MIMIC_INTERPOLATION_STEPS = 30
"""Steps (1 s) from one subtask's last pose to the next one's first: at Isaac Lab's 5 the held cube is thrown
out of the SO-101's 1 N m jaw by the jump to the next segment."""

MIMIC_FIXED_STEPS = 6
"""Steps the interpolation's end is held before the next subtask's segment starts: the arm comes to rest there, where
a segment that starts back the other way threw the held cube out of the jaw."""

MIMIC_ORIENTATION_WEIGHT = 0.1
"""The pose IK's orientation weight while Mimic drives (the sources': 0.5). A moved segment's orientation can be one
the 5-joint arm cannot take; at 0.5 the IK gave centimetres of position for it, here millimetres."""

MIMIC_SUBTASKS = (
    ("cube_2", "grasp_1", (30, 34), "Grasp the red cube"),
    ("cube_1", "stack_1", (22, 26), "Stack the red cube on the blue cube"),
    ("cube_3", "grasp_2", (38, 42), "Grasp the green cube"),
    ("cube_2", None, (0, 0), "Stack the green cube on the red cube"),
)
"""Isaac Lab's Franka stack Mimic subtasks, which the SO-101 stack's ``subtask_terms`` are made for: each segment
is replayed relative to its object (``object_ref``), and ends where the task's own signal first rises."""


@configclass
class So101StackMimicEnvCfg(So101StackScriptedEnvCfg, MimicEnvCfg):
    """Isaac Lab Mimic's generation on the stack (Isaac Lab ships no SO-101 stack Mimic cfg; this follows its
    Franka stack's): the four subtasks of :data:`MIMIC_SUBTASKS` for the one end effector ``so101``, target poses
    through the pose IK, joint targets out (``l2/mimic/env.py``). Isaac Lab's ``MimicEnvCfg`` comes last among the
    bases: its ``__post_init__`` does not pass the call on."""

    eef_name: str = "so101"
    action_noise: float = 0.002
    """Noise (m, std) on each generated target position."""
    join_segments_at_nearest: bool = True
    """Each later subtask's segment joined where it passes nearest the end effector (``l2/mimic/generator.py``)."""
    max_joint_step: float = 0.15
    """Joint targets at most this far (rad) from the measured joints per step (3 rad/s): where a moved segment's
    pose flipped the IK's solution, shoulder_lift jumped up to 1.3 rad in one step and threw the held cube."""
    object_yaw_periods: dict[str, float] = {cube: math.pi / 2 for cube in ("cube_1", "cube_2", "cube_3")}
    """The cubes as Mimic sees them: upright, their yaw the one of a cube's four nearest the arm's heading
    (``l2/mimic/env.py``). With their own yaws (±1 rad at reset) a moved segment turned the tilted jaws out of the
    arm's plane; the pose IK then gave up centimetres of position for orientation, and placements missed."""

    def __post_init__(self):
        super().__post_init__()
        self.ik_arm_action = copy.deepcopy(self.ik_arm_action)
        self.ik_arm_action.controller.orientation_weight = MIMIC_ORIENTATION_WEIGHT
        self.observations.subtask_terms = So101StackSubtaskTermsCfg()
        config = self.datagen_config
        config.name = "stack_cube_so101_mimic"
        config.generation_guarantee = True
        config.generation_keep_failed = False
        config.generation_select_src_per_subtask = True
        config.generation_transform_first_robot_pose = False
        config.generation_interpolate_from_last_target_pose = True
        self.subtask_configs[self.eef_name] = [
            SubTaskConfig(
                object_ref=obj,
                subtask_term_signal=signal,
                subtask_term_offset_range=offsets,
                selection_strategy="nearest_neighbor_object" if i == 0 else "nearest_neighbor_robot_distance",
                selection_strategy_kwargs={"nn_k": 3} if i == 0 else {"nn_k": 3, "rot_weight": 0.1},
                action_noise=self.action_noise,
                num_interpolation_steps=MIMIC_INTERPOLATION_STEPS,
                num_fixed_steps=MIMIC_FIXED_STEPS,
                apply_noise_during_interpolation=False,
                description=description,
            )
            for i, (obj, signal, offsets, description) in enumerate(MIMIC_SUBTASKS)
        ]
