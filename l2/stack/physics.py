"""The stack's physics: the package's Newton/MuJoCo-Warp cfg (:class:`l2.lift.lift_env_cfg.LiftPhysicsCfg`) with box
pairs through MuJoCo-Warp's analytic box-box collider.

MuJoCo-Warp's default for box pairs is its general convex collider (GJK/EPA, ``NATIVECCD``): there a cube resting on
a cube turned from it, by as little as 0.03 rad, sinks into it and tips off within two seconds (aligned, it stands).
With ``NATIVECCD`` disabled box pairs go through the analytic box-box collider, and stacks turned any way stand
(``tests/test_stack_scripted.py``). Newton's solver takes no option for the flag; :class:`NewtonBoxBoxMJWarpManager`
(Isaac Lab picks the backend by the manager's name, hence its prefix) sets it on the model it builds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from isaaclab.utils import configclass
from isaaclab_newton.physics import NewtonCfg
from isaaclab_newton.physics.mjwarp_manager import NewtonMJWarpManager

from l2.lift.lift_env_cfg import LiftPhysicsCfg
from l2.lift.physics import MJWarpSolverCfg

if TYPE_CHECKING:
    from newton import Model
    from newton.solvers import SolverMuJoCo


class NewtonBoxBoxMJWarpManager(NewtonMJWarpManager):
    """Isaac Lab's MuJoCo-Warp manager; the solver it builds disables ``NATIVECCD`` unless the cfg's
    :attr:`StackMJWarpSolverCfg.native_ccd` keeps it."""

    @classmethod
    def _create_solver(cls, model: Model, solver_cfg: StackMJWarpSolverCfg) -> SolverMuJoCo:
        import mujoco

        solver = super()._create_solver(model, solver_cfg)
        if not getattr(solver_cfg, "native_ccd", True):
            flag = int(mujoco.mjtDisableBit.mjDSBL_NATIVECCD)
            solver.mj_model.opt.disableflags |= flag
            if getattr(solver, "mjw_model", None) is not None:  # read where each step picks its colliders
                solver.mjw_model.opt.disableflags |= flag
        return solver

    @classmethod
    def close(cls) -> None:
        super().close()
        forget_analytic_box_box()


def forget_analytic_box_box() -> None:
    """Drop box pairs from the primitive colliders MuJoCo-Warp has launched in this process: it keeps every type it
    launched for later models too, and a later model with ``NATIVECCD`` on (any other task's) would collide its box
    pairs twice, once by each collider."""
    from mujoco_warp._src import collision_primitive
    from mujoco_warp._src.types import GeomType

    types, funcs = collision_primitive._PRIMITIVE_COLLISION_TYPES, collision_primitive._PRIMITIVE_COLLISION_FUNC
    while (GeomType.BOX, GeomType.BOX) in types:
        i = types.index((GeomType.BOX, GeomType.BOX))
        del types[i], funcs[i]


@configclass
class StackMJWarpSolverCfg(MJWarpSolverCfg):
    """:class:`l2.lift.physics.MJWarpSolverCfg` with the choice of box-box collider."""

    class_type: type | str = f"{__name__}:NewtonBoxBoxMJWarpManager"
    native_ccd: bool = False
    """MuJoCo-Warp's convex collider for box pairs (True), or MuJoCo's analytic box-box collider (False)."""


@configclass
class StackPhysicsCfg(LiftPhysicsCfg):
    """:class:`LiftPhysicsCfg` whose Newton preset collides box pairs with MuJoCo's analytic box-box collider."""

    newton_mjwarp: NewtonCfg = NewtonCfg(
        solver_cfg=StackMJWarpSolverCfg(
            integrator="implicitfast", njmax=500, nconmax=100, cone="elliptic", impratio=10.0
        ),
        use_cuda_graph=True,
    )
    default: NewtonCfg = newton_mjwarp
