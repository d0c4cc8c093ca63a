"""Our output loads in LeRobot's own LeRobotDataset and converts with LeRobot's v2.1 -> v3.0 converter.

Each LeRobot version runs in its own venv built (once, cached outside the repo) by
scripts/setup_lerobot.sh; a venv that cannot be built is a test failure, never a skip.
The first build downloads torch (several GB) and takes minutes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import lerobot_python, run_probe
from l3_fixtures import CAMERAS, make_l2_file

from l3 import layout
from l3.convert import convert

pytestmark = pytest.mark.lerobot

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("lr")
    files = [make_l2_file(d / "scripted_lift_cube.hdf5", 3, seed=1, failed=(1,), camera=True),
             make_l2_file(d / "rl_lift_cube.hdf5", 2, seed=2, camera=True),
             make_l2_file(d / "teleop_lift_cube.hdf5", 1, seed=3, camera=True, legacy=True)]
    out = d / "ds"
    convert([str(f) for f in files], out, config=REPO / "config/lift_cube.yaml",
            success_only=False, log=lambda m: None)
    return out


def test_loads_in_lerobot_v21(dataset, tmp_path):
    info = json.loads((dataset / layout.INFO_PATH).read_text())
    got = run_probe(lerobot_python("v21"), "load", dataset, tmp_path)
    assert got["episodes"] == info["total_episodes"] == 6
    assert got["frames"] == got["frames_read"] == info["total_frames"]
    assert got["cameras"] == [f"observation.images.{c}" for c in CAMERAS]
    assert got["tasks"] == ["Pick up the cube and lift it."]


def test_converts_to_lerobot_v30(dataset, tmp_path):
    info = json.loads((dataset / layout.INFO_PATH).read_text())
    got = run_probe(lerobot_python("v30"), "v30", dataset, tmp_path)
    assert got["codebase_version"] == "v3.0"
    assert got["frames_read"] == info["total_frames"]
