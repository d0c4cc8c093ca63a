"""Franka Panda articulation cfgs for the lift task: the offline USD (default) or NVIDIA's official asset.

Both expose Isaac Lab's names (``panda_joint1..7``, ``panda_finger_joint1/2``, ``panda_link0..7``), so
the task refers to the end effector the same way for either (``panda_link7`` plus :data:`EE_OFFSET`).
"""

from __future__ import annotations

import isaaclab.sim as sim_utils
from isaaclab.actuators import ImplicitActuatorCfg
from isaaclab.assets import ArticulationCfg
from isaaclab.utils import configclass, replace
from isaaclab_newton.sim.schemas import MujocoRigidBodyCfg, NewtonArticulationCfg
from isaaclab_physx.sim.schemas import PhysxRigidBodyCfg
from isaaclab_tasks.utils import PresetCfg

from l2.assets.franka_build import franka_usd_path

EE_BODY = "panda_link7"
EE_OFFSET_POS = (0.0, 0.0, 0.2104)
"""End-effector point in the ``panda_link7`` frame (= Isaac Lab's panda_hand + 0.1034 m, between the official
model's finger pads; the offline model's pads are longer, so it is their upper end and the tips are 5 cm lower)."""
EE_OFFSET_ROT = (0.0, 0.0, -0.3826834, 0.9238795)
"""The ``panda_hand`` orientation in the ``panda_link7`` frame (-45 deg about z, xyzw), so our IK targets
mean the same as Isaac Lab's stock Franka IK tasks (top-down grasp = quaternion (1, 0, 0, 0))."""
ROOT_PRIM_REGEX = "{ENV_REGEX_NS}/Robot/(Geometry/)?panda_link0"
EE_PRIM_REGEX = "{ENV_REGEX_NS}/Robot/(Geometry/.*/)?panda_link7"
"""The converted USD nests links under ``Geometry/panda_link0/...``; the official one does not."""

FRANKA_OFFLINE_CFG = ArticulationCfg(
    prim_path="{ENV_REGEX_NS}/Robot",
    spawn=sim_utils.UsdFileCfg(
        usd_path=str(franka_usd_path()),
        activate_contact_sensors=False,
        fix_root_link=None,  # the converted USD already fixes panda_link0 to the world
        # Like Isaac Lab's IK Franka (FRANKA_PANDA_HIGH_PD_CFG), no gravity sag on the arm, or IK targets
        # computed from the measured joints leave ~9 mm of steady-state error: PhysX reads disableGravity,
        # Newton's MuJoCo solver needs body gravity compensation.
        rigid_props=[PhysxRigidBodyCfg(disable_gravity=True), MujocoRigidBodyCfg(gravcomp=1.0)],
        articulation_props=[NewtonArticulationCfg(self_collision_enabled=False)],
    ),
    init_state=ArticulationCfg.InitialStateCfg(
        joint_pos={
            "panda_joint1": 0.0,
            "panda_joint2": -0.569,
            "panda_joint3": 0.0,
            "panda_joint4": -2.810,
            "panda_joint5": 0.0,
            "panda_joint6": 1.466,  # this MJCF's joint6 is offset by -pi/2 from the official model (3.037)
            "panda_joint7": 0.741,
            "panda_finger_joint.*": 0.04,
        },
    ),
    # Stiff gains track IK targets at 50 Hz; armature keeps MuJoCo-Warp's implicit integration stable.
    actuators={
        "panda_shoulder": ImplicitActuatorCfg(
            joint_names_expr=["panda_joint[1-4]"],
            joint_effort_limit=87.0,
            stiffness=2000.0,
            damping=150.0,
            armature=0.5,
        ),
        "panda_forearm": ImplicitActuatorCfg(
            joint_names_expr=["panda_joint[5-7]"], joint_effort_limit=12.0, stiffness=800.0, damping=60.0, armature=0.2
        ),
        "panda_hand": ImplicitActuatorCfg(
            joint_names_expr=["panda_finger_joint.*"], joint_effort_limit=70.0, stiffness=2e3, damping=1e2, armature=0.1
        ),
    },
    soft_joint_pos_limit_factor=1.0,
)


def _nucleus_franka_cfg() -> ArticulationCfg:
    """Isaac Lab's official Franka (Nucleus), as its stock IK lift task configures it."""
    from isaaclab_assets.robots.franka import FRANKA_PANDA_HIGH_PD_CFG

    return replace(FRANKA_PANDA_HIGH_PD_CFG, prim_path="{ENV_REGEX_NS}/Robot")


@configclass
class FrankaCfg(PresetCfg):
    """Robot presets: ``presets=franka_nucleus`` selects NVIDIA's asset (needs Nucleus access)."""

    franka_offline: ArticulationCfg = FRANKA_OFFLINE_CFG
    franka_nucleus: ArticulationCfg = _nucleus_franka_cfg()
    default: ArticulationCfg = franka_offline
