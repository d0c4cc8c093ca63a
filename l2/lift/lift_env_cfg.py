"""The lift-cube base task, robot-agnostic: each robot's cfgs in ``config/<robot>/`` derive from
:class:`LiftCubeEnvCfg`, as Isaac Lab's task packages lay them out.

It reuses Isaac Lab's lift MDP (``isaaclab_tasks.contrib.lift``: commands, rewards, object reset) and
changes what our data needs: a ground plane, a 4 cm primitive cube, two cameras, a policy group that keeps
its terms separate, a ``success`` termination that Isaac Lab's RecorderManager reads, and Newton physics by
default. A robot's cfg fills in what is left ``MISSING`` here: the robot, its end-effector frame, its wrist
camera, its arm and gripper actions and its arm joints.
"""

from __future__ import annotations

from dataclasses import MISSING

import isaaclab.sim as sim_utils
from isaaclab.assets import AssetBaseCfg, RigidObjectCfg
from isaaclab.managers import ActionTermCfg, SceneEntityCfg
from isaaclab.managers import EventTermCfg as EventTerm
from isaaclab.managers import ObservationGroupCfg as ObsGroup
from isaaclab.managers import ObservationTermCfg as ObsTerm
from isaaclab.managers import TerminationTermCfg as DoneTerm
from isaaclab.physics import PhysxAutoCfg
from isaaclab.utils import configclass
from isaaclab_newton.physics import NewtonCfg
from isaaclab_physx.physics import PhysxCfg
from isaaclab_tasks.contrib.lift.lift_env_cfg import EventCfg, LiftEnvCfg, ObjectTableSceneCfg, TerminationsCfg
from isaaclab_tasks.utils import PresetCfg, preset

from l2.lift import mdp, variety
from l2.lift.camera_cfg import TableCamCfg, cameras_obs_group
from l2.lift.physics import MJWarpSolverCfg

CUBE_SIZE = 0.04
CUBE_START = (0.5, 0.0, CUBE_SIZE / 2)
CUBE_POSE_RANGE = {"x": (-0.05, 0.05), "y": (-0.1, 0.1), "z": (0.0, 0.0), "yaw": (-0.785, 0.785)}
"""Reset randomization of the cube around :data:`CUBE_START` (m, rad)."""
SUCCESS_HEIGHT = 0.10
VARIED_START = "varied_start"
"""Preset that draws the arm's start pose at random around its home pose: ``presets=varied_start``."""
ARM_START_RANGE = (-0.2, 0.2)
"""rad added to each arm joint's home position at reset under :data:`VARIED_START` (the end effector then
starts up to about 10 cm from its home position, in another posture)."""


@configclass
class LiftPhysicsCfg(PresetCfg):
    """Physics presets: Newton/MuJoCo-Warp (default, runs kit-less on CPU or CUDA) or ``physics=physx``."""

    newton_mjwarp: NewtonCfg = NewtonCfg(
        # implicitfast + armature keep the arm stable; elliptic cones and impratio hold the cube in the grasp.
        # njmax (constraint rows per env) is room, not behaviour: 300 overflowed once with the three cubes of
        # presets=variety ("nefc overflow ... 327"), which drops contacts; at 500 plain-scene demos are bit-identical.
        # The sparse Jacobian (l2.lift.physics) is what keeps resting cubes cheap on the CPU.
        solver_cfg=MJWarpSolverCfg(integrator="implicitfast", njmax=500, nconmax=100, cone="elliptic", impratio=10.0),
        use_cuda_graph=True,  # ignored on CPU (queries run eagerly there)
    )
    isaacsim_physx: PhysxCfg = PhysxCfg(
        bounce_threshold_velocity=0.01,
        gpu_found_lost_aggregate_pairs_capacity=1024 * 1024 * 4,
        gpu_total_aggregate_pairs_capacity=16 * 1024,
        friction_correlation_distance=0.00625,
    )
    physx: PhysxAutoCfg = PhysxAutoCfg(isaacsim_physx=isaacsim_physx)
    default: NewtonCfg = newton_mjwarp


def cube_cfg(
    name: str, color: tuple[float, float, float], pos=CUBE_START, size: float = CUBE_SIZE, mass: float = 0.05
) -> RigidObjectCfg:
    """A cube (4 cm, 50 g by default) at ``{ENV_REGEX_NS}/<name>``."""
    return RigidObjectCfg(
        prim_path="{ENV_REGEX_NS}/" + name,
        init_state=RigidObjectCfg.InitialStateCfg(pos=pos),
        spawn=sim_utils.CuboidCfg(
            size=(size,) * 3,
            rigid_props=sim_utils.UsdPhysicsRigidBodyCfg(),
            mass_props=sim_utils.MassPropertiesCfg(mass=mass),
            collision_props=sim_utils.UsdPhysicsCollisionCfg(),
            physics_material=sim_utils.RigidBodyMaterialCfg(static_friction=1.5, dynamic_friction=1.5),
            visual_material=sim_utils.PreviewSurfaceCfg(diffuse_color=color),
        ),
    )


MAT_SIZE = (0.45, 0.55, 0.002)
"""The table mat under the cubes in ``presets=variety`` (m): visual only, its color drawn per episode."""


def distractor_cfg(index: int) -> PresetCfg:
    return preset(default=None, variety=cube_cfg(f"Distractor{index}", (0.5, 0.5, 0.5), (0.5, 0.3 + 0.1 * index, 0.02)))


@configclass
class LiftCubeSceneCfg(ObjectTableSceneCfg):
    """A ground plane (no Nucleus table), a 4 cm cube and a table camera (``camera_cfg.py``); the robot's cfg
    adds the ``robot``, its ``wrist_cam`` and its ``ee_frame`` (the point between the gripper's jaws)."""

    table = None
    plane = AssetBaseCfg(
        prim_path="/World/GroundPlane",
        init_state=AssetBaseCfg.InitialStateCfg(pos=(0.0, 0.0, -0.05)),
        spawn=sim_utils.CuboidCfg(size=(100.0, 100.0, 0.1), collision_props=sim_utils.UsdPhysicsCollisionCfg()),
    )
    object = cube_cfg("Object", variety.PALETTE["red"])
    distractor_0 = distractor_cfg(0)
    distractor_1 = distractor_cfg(1)
    mat = preset(
        default=None,
        variety=AssetBaseCfg(
            prim_path="{ENV_REGEX_NS}/Mat",
            # Its top 0.5 mm above the ground: seen, but the cubes stand as on the ground. Newton makes shapes of
            # colliders only, so the mat collides (static, like the ground it sits in).
            init_state=AssetBaseCfg.InitialStateCfg(pos=(0.5, 0.0, 0.0005 - MAT_SIZE[2] / 2)),
            spawn=sim_utils.CuboidCfg(
                size=MAT_SIZE,
                collision_props=sim_utils.UsdPhysicsCollisionCfg(),
                visual_material=sim_utils.PreviewSurfaceCfg(diffuse_color=(0.5, 0.45, 0.4)),
            ),
        ),
    )
    table_cam = TableCamCfg()
    wrist_cam: PresetCfg = MISSING


@configclass
class ActionsCfg:
    """The arm's action and the gripper's, each robot's own (``config/<robot>/``)."""

    arm_action: ActionTermCfg = MISSING
    gripper_action: ActionTermCfg = MISSING


@configclass
class ObservationsCfg:
    """A ``policy`` group of state terms kept separate and a ``cameras`` group of images; every term of
    both is written as ``obs/<term>``."""

    @configclass
    class PolicyCfg(ObsGroup):
        joint_pos = ObsTerm(func=mdp.joint_pos)  # absolute joint positions (rad, m for fingers)
        joint_vel = ObsTerm(func=mdp.joint_vel)
        object_position = ObsTerm(func=mdp.object_position_in_robot_root_frame)
        target_object_position = ObsTerm(func=mdp.generated_commands, params={"command_name": "object_pose"})
        actions = ObsTerm(func=mdp.last_action)
        # What a state policy needs beyond Isaac Lab's lift terms (RL, behaviour cloning): the cube's yaw is
        # reset at random (±45°) and a parallel gripper must close across two faces; the action is an absolute
        # end-effector pose, so the policy must see where the end effector is (from joint angles alone it would
        # have to learn the arm's forward kinematics to the millimetre). Last, in this order: the RL policy's
        # concatenated input grew by appending them.
        object_orientation = ObsTerm(func=mdp.object_orientation_in_robot_root_frame)  # (qx, qy, qz, qw)
        ee_position = ObsTerm(func=mdp.ee_position_in_robot_root_frame)  # between the finger pads
        ee_orientation = ObsTerm(func=mdp.ee_orientation_in_robot_root_frame)  # (qx, qy, qz, qw)
        distractor_positions = preset(default=None, variety=ObsTerm(func=variety.distractor_positions))

        def __post_init__(self):
            self.enable_corruption = False
            self.concatenate_terms = False

    policy: PolicyCfg = PolicyCfg()
    cameras = cameras_obs_group()


@configclass
class LiftCubeEventCfg(EventCfg):
    """Isaac Lab's lift events (scene back to default, cube pose drawn), and with ``presets=varied_start`` the arm's
    joints drawn around their home positions: demonstrations that start from many postures cover more of the
    states a learned policy visits than ones that all leave the same pose along nearly the same path."""

    randomize_scene = preset(default=None, variety=EventTerm(func=variety.randomize_scene, mode="reset"))
    reset_arm_joints = preset(
        default=None,
        varied_start=EventTerm(
            func=mdp.reset_joints_by_offset,
            mode="reset",
            params={
                "position_range": ARM_START_RANGE,
                "velocity_range": (0.0, 0.0),
                "asset_cfg": SceneEntityCfg("robot", joint_names=MISSING),  # the arm's joints, set by the robot
            },
        ),
    )


@configclass
class LiftCubeTerminationsCfg(TerminationsCfg):
    """Isaac Lab's time-out and cube-dropping terms plus ``success`` (its name is what the recorder reads)."""

    success = DoneTerm(
        func=mdp.cube_lifted_and_held,
        params={"minimal_height": SUCCESS_HEIGHT, "max_ee_distance": 0.04, "object_cfg": SceneEntityCfg("object")},
    )


@configclass
class LiftCubeEnvCfg(LiftEnvCfg):
    """Base lift-cube task (no robot yet; Newton by default)."""

    scene: LiftCubeSceneCfg = LiftCubeSceneCfg(num_envs=16, env_spacing=2.0)
    observations: ObservationsCfg = ObservationsCfg()
    actions: ActionsCfg = ActionsCfg()
    events: LiftCubeEventCfg = LiftCubeEventCfg()
    terminations: LiftCubeTerminationsCfg = LiftCubeTerminationsCfg()
    ik_arm_action: ActionTermCfg | None = None
    """The robot's IK-absolute arm action (end-effector pose in the robot root frame), never applied, where the
    env's own arm action is in joint space: what task-space drivers (the scripted expert, keyboard teleop, the
    DAgger expert) command through it, and what the RL recorder writes the IK-absolute ``actions`` with
    (``l2/recording/task_space.py``)."""
    gripper_targets: tuple[float, float] | None = None
    """``(open, closed)`` joint targets that a task-space driver's gripper command (``> 0`` open, ``< 0`` close)
    becomes, where the gripper's action is a joint position (None: the gripper's action takes the ±1 itself)."""
    robot_name: str | None = None
    """The robot's name its recordings carry (L3's ``robot_type``; l2/recording/metadata.py); None: the stem of the
    robot's USD file."""
    instruction: str = variety.DEFAULT_INSTRUCTION
    """What the plain scene asks in every episode (``presets=variety`` draws one per episode that names its
    target's color); recorded with each demo, and L3's task text."""

    def __post_init__(self):
        super().__post_init__()
        self.sim.physics = LiftPhysicsCfg()
        self.sim.dt = 0.005
        self.decimation = 4  # 50 Hz control
        self.sim.render_interval = self.decimation
        self.commands.object_pose.debug_vis = False
        self.events.reset_object_position.params["pose_range"] = dict(CUBE_POSE_RANGE)
        self.events.reset_object_position.params["asset_cfg"] = SceneEntityCfg("object")
