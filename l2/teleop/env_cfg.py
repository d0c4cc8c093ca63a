"""Teleoperation variant of the lift-cube task."""

from __future__ import annotations

from isaaclab.managers import TerminationTermCfg as DoneTerm
from isaaclab.utils import configclass

from l2.lift.lift_env_cfg import LiftCubeEnvCfg


@configclass
class TeleopLiftCubeEnvCfg(LiftCubeEnvCfg):
    """The base task in one env, where the operator, not the task, ends an attempt.

    As in Isaac Lab's ``record_demos.py``, the ``success`` term is taken out of the termination manager
    (so a lift no longer resets the env) and kept in :attr:`success_term`, which the session evaluates
    every step to decide when to save. The time-out is removed too; the cube-dropping term stays.
    """

    success_term: DoneTerm | None = None
    """The base task's ``success`` term, evaluated by the teleop session instead of the termination manager."""
    ee_home: tuple[float, ...] = (0.45, 0.0, 0.35, 1.0, 0.0, 0.0, 0.0)
    """End-effector target ``(x, y, z, qx, qy, qz, qw)`` (robot root frame) at the start of every attempt,
    gripper open, pointing down; the device's deltas move it from there."""

    def __post_init__(self):
        super().__post_init__()
        self.scene.num_envs = 1
        self.observations.policy.concatenate_terms = False
        self.success_term = self.terminations.success
        self.terminations.success = None
        self.terminations.time_out = None
