"""Turning delta device commands into the task's IK-absolute action.

Isaac Lab's SE(3) devices (``Se3Keyboard``, ``Se3SpaceMouse``, ``Se3Gamepad``) output
``[dx, dy, dz, rx, ry, rz, gripper]``: a position step (m) and a rotation vector (rad) in the robot
root frame, plus a gripper (+1 open, -1 close; a value between, part open, as an analog trigger or the trace
maker's expert gives it). A task takes an absolute end-effector target ``[x, y, z, qx, qy, qz, qw, gripper]``, as
its action or through its robot's IK (:mod:`l2.recording.task_space`).
:class:`DeltaPoseAccumulator` integrates the deltas into that target with Isaac Lab's own
``apply_delta_pose`` (the rule its IK-relative controller uses), starting from the home
end-effector target of the task cfg (``ee_home``) at the start of each attempt.
"""

from __future__ import annotations

import torch
from isaaclab.utils.math import apply_delta_pose

DELTA_DIM = 7
"""``[dx, dy, dz, rx, ry, rz, gripper]``"""
ACTION_DIM = 8
"""``[x, y, z, qx, qy, qz, qw, gripper]``"""


class DeltaPoseAccumulator:
    """Absolute end-effector target of one env, moved by delta commands.

    Args:
        workspace_min, workspace_max: the target position is clamped to this box (robot root frame, m: in front of
            the base, above its mounting plane), so that an operator cannot drive the IK target far out of reach.
    """

    def __init__(
        self,
        device: str | torch.device = "cpu",
        workspace_min: tuple[float, float, float] = (0.0, -0.5, 0.0),
        workspace_max: tuple[float, float, float] = (0.8, 0.5, 0.6),
    ):
        self.device = torch.device(device)
        self.lo = torch.tensor(workspace_min, device=self.device)
        self.hi = torch.tensor(workspace_max, device=self.device)
        self.pos = torch.zeros(1, 3, device=self.device)
        self.quat = torch.tensor([[0.0, 0.0, 0.0, 1.0]], device=self.device)
        self.gripper = 1.0

    def reset(self, pos: torch.Tensor, quat: torch.Tensor) -> None:
        """Start from an end-effector pose (root frame, quaternion x, y, z, w), gripper open."""
        self.pos = pos.reshape(1, 3).to(self.device, torch.float32).clone()
        self.quat = quat.reshape(1, 4).to(self.device, torch.float32).clone()
        self.gripper = 1.0

    @property
    def action(self) -> torch.Tensor:
        """The current target as the task's action, shape ``(1, 8)``."""
        grip = torch.tensor([[self.gripper]], device=self.device)
        return torch.cat([self.pos, self.quat, grip], dim=-1)

    def apply(self, command: torch.Tensor) -> torch.Tensor:
        """Move the target by one delta command ``(7,)`` and return the new action ``(1, 8)``."""
        command = command.reshape(1, DELTA_DIM).to(self.device, torch.float32)
        pos, quat = apply_delta_pose(self.pos, self.quat, command[:, :6])
        self.pos = torch.clamp(pos, self.lo, self.hi)
        self.quat = quat / torch.linalg.vector_norm(quat, dim=-1, keepdim=True)
        self.gripper = _gripper(command[0, 6])
        return self.action

    def set_absolute(self, target: torch.Tensor) -> torch.Tensor:
        """Take an absolute target ``(8,)`` from an absolute device (XR) as is."""
        target = target.reshape(1, ACTION_DIM).to(self.device, torch.float32)
        self.pos, self.quat = target[:, :3].clone(), target[:, 3:7].clone()
        self.gripper = _gripper(target[0, 7])
        return self.action


def _gripper(value: torch.Tensor) -> float:
    """A command's gripper within [-1 closed, +1 open]."""
    return min(1.0, max(-1.0, float(value)))
