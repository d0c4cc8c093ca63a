"""Newton/MuJoCo-Warp settings our tasks share (docs/physics.md).

:class:`MJWarpSolverCfg` is Isaac Lab's MuJoCo-Warp solver cfg with the one solver option it does not expose:
how the constraint Jacobian is stored. Isaac Lab forwards every field of the cfg that Newton's ``SolverMuJoCo``
takes, so a field added here reaches the solver as it is.
"""

from __future__ import annotations

from isaaclab.utils import configclass
from isaaclab_newton.physics import MJWarpSolverCfg as IsaacLabMJWarpSolverCfg


@configclass
class MJWarpSolverCfg(IsaacLabMJWarpSolverCfg):
    """Isaac Lab's cfg plus ``jacobian``, sparse by default."""

    jacobian: str = "sparse"
    """``"sparse"``, ``"dense"`` or ``"auto"`` (MuJoCo's: dense up to 32 degrees of freedom). On the CPU the dense
    path's elliptic-cone Hessian update runs one Warp thread per contact slot (``nconmax`` x envs) and per entry of
    the Hessian's triangle, whether the slot holds a contact or not; the sparse path visits only the constraints
    there are. Same solver, same equations: about 2x the plain scene's rate and 3.5-6x the variety scene's
    (docs/physics.md)."""
