"""A runner's default ``--output`` names its source and the task it records (``data/demos/<source>_<task>.hdf5``),
so recording another task without ``--output`` never lands in, or appends to, the lift's file."""

from __future__ import annotations

import pytest

pytest.importorskip("isaaclab")

from l2.recording.cli import demo_name  # noqa: E402


@pytest.mark.parametrize(
    ("module", "argv", "expected"),
    [
        ("l2.scripted.run", [], "data/demos/scripted_lift_cube.hdf5"),
        ("l2.scripted.run", ["--task", "L2-Stack-Cube-SO101-Scripted-v0"], "data/demos/scripted_stack_cube_so101.hdf5"),
        ("l2.mimic.run", ["--input", "README.md"], "data/demos/mimic_lift_cube.hdf5"),
        (
            "l2.mimic.run",
            ["--input", "README.md", "--task", "L2-Stack-Cube-SO101-Mimic-v0"],
            "data/demos/mimic_stack_cube_so101.hdf5",
        ),
        ("l2.rl.rollout", [], "data/demos/rl_lift_cube.hdf5"),
        ("l2.rl.rollout", ["--task", "L2-Stack-Cube-SO101-RL-v0"], "data/demos/rl_stack_cube_so101.hdf5"),
        ("l2.teleop.run", ["--task", "L2-Lift-Cube-SO101-JointPos-Teleop"], "data/demos/teleop_lift_cube_so101.hdf5"),
        ("l2.scripted.run", ["--output", "x/y.hdf5"], "x/y.hdf5"),
    ],
)
def test_default_output_names_source_and_task(module, argv, expected):
    import importlib

    assert importlib.import_module(module).parse_args(argv).output == expected


def test_demo_name_of_an_unregistered_id_is_sanitized():
    assert demo_name("Isaac-Stack-Cube-Franka-IK-Rel-v0") == "stack_cube_franka"
    assert demo_name("My.Task/../Pick-Joint-v2") == "my_task_pick"
