"""Isaac Lab Mimic's ``DataGenerator`` with one policy of ours, for tasks that ask for it: a later subtask's segment
is joined where it passes nearest the end effector.

Mimic moves each subtask's source segment with its object and interpolates from where the last one ended to the
segment's first pose. A stacking segment starts where its source carried the held cube from, relative to the cube
to stack on; in another scene that start can lie past the target, and the arm carries the cube there and back. The
SO-101's jaw loses the cube at such a reversal. Joined at its waypoint nearest the end effector (before the
segment's first gripper change, so no grasp or release is skipped), the segment continues from the arm's side.
"""

from __future__ import annotations

import torch
from isaaclab_mimic.datagen import DataGenerator


class JoiningDataGenerator(DataGenerator):
    """``DataGenerator`` whose subtask segments after the first start at their waypoint nearest the end effector
    where the env cfg sets ``join_segments_at_nearest``."""

    def generate_eef_subtask_trajectory(self, env_id: int, eef_name: str, subtask_ind: int, *args, **kwargs):
        trajectory = super().generate_eef_subtask_trajectory(env_id, eef_name, subtask_ind, *args, **kwargs)
        if subtask_ind == 0 or not getattr(self.env_cfg, "join_segments_at_nearest", False):
            return trajectory
        sequence = trajectory.waypoint_sequences[0]
        first = nearest_waypoint(sequence.sequence, self.env.get_robot_eef_pose(eef_name, env_ids=[env_id])[0])
        sequence.sequence = sequence.sequence[first:]
        return trajectory


def nearest_waypoint(waypoints: list, eef_pose: torch.Tensor) -> int:
    """Index of the waypoint whose position is nearest ``eef_pose``'s (4x4), among those before the gripper action
    first changes."""
    gripper = torch.stack([w.gripper_action.flatten() for w in waypoints])
    changed = (gripper != gripper[:1]).any(dim=-1).nonzero()
    end = int(changed[0]) if len(changed) else len(waypoints)
    positions = torch.stack([w.pose[:3, 3] for w in waypoints[: max(end, 1)]])
    return int(torch.linalg.vector_norm(positions - eef_pose[:3, 3], dim=-1).argmin())
