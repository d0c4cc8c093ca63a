"""The join of a later Mimic segment (``l2/mimic/generator.py``): at its waypoint nearest the end effector, never past
the segment's first gripper change (a grasp or release is never skipped)."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("isaaclab_mimic")

from isaaclab_mimic.datagen.waypoint import Waypoint  # noqa: E402

from l2.mimic.generator import nearest_waypoint  # noqa: E402


def _pose(x: float, y: float, z: float) -> torch.Tensor:
    pose = torch.eye(4)
    pose[:3, 3] = torch.tensor([x, y, z])
    return pose


def _segment(points, grippers):
    return [Waypoint(_pose(*p), torch.tensor([g])) for p, g in zip(points, grippers, strict=True)]


def test_joins_at_the_nearest_waypoint_of_a_carry():
    # a carry from 20 cm past the target back over it, then a lowering and a release
    carry = [(0.30 - 0.02 * i, 0.0, 0.12) for i in range(10)]
    segment = _segment([*carry, (0.12, 0.0, 0.08), (0.12, 0.0, 0.08)], [-1.0] * 11 + [1.0])
    assert nearest_waypoint(segment, _pose(0.203, 0.01, 0.12)) == 5  # (0.20, 0, 0.12)
    assert nearest_waypoint(segment, _pose(0.35, 0.0, 0.12)) == 0


def test_never_joins_past_the_first_gripper_change():
    points = [(0.2, 0.0, 0.12), (0.2, 0.0, 0.05), (0.2, 0.0, 0.03), (0.2, 0.0, 0.12)]
    segment = _segment(points, [1.0, 1.0, -1.0, -1.0])  # the jaw closes at the third waypoint
    assert nearest_waypoint(segment, _pose(0.2, 0.0, 0.11)) == 0  # the last waypoint is nearer, but after the grasp
    assert nearest_waypoint(segment, _pose(0.2, 0.0, 0.02)) == 1
