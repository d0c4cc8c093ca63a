"""Datasets converted from real-robot inputs (platform export tar.gz, ALOHA, mixed sim + platform) load in LeRobot.

Uses the LeRobot venvs of scripts/setup_lerobot.sh and the probe of tests/l3_lerobot_probe.py
(see test_l3_lerobot.py); a venv that cannot be built is a failure, never a skip.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from conftest import lerobot_python, run_probe
from l3_fixtures import make_demo, write_l2
from l3_real_fixtures import PLATFORM_CAMERAS, SIZE, make_aloha_file, make_platform_export, make_tar_gz, render

from l3 import layout
from l3.convert import convert

pytestmark = pytest.mark.lerobot

REPO = Path(__file__).resolve().parent.parent


def _platform(d: Path) -> Path:
    files = make_platform_export(d / "chunks", [[10, 11], [12]], attrs_bytes=True, rows="void", meta="agibot")
    out = d / "platform_ds"
    convert(
        [str(make_tar_gz(d / "export.tar.gz", files))],
        out,
        config=REPO / "config/platform_export.yaml",
        log=lambda m: None,
    )
    return out


def _aloha(d: Path) -> Path:
    files = [
        make_aloha_file(d / "aloha/episode_0.hdf5", 10, seed=1),
        make_aloha_file(d / "aloha/episode_1.hdf5", 11, seed=2, compress=True),
    ]
    out = d / "aloha_ds"
    convert([str(f) for f in files], out, config=REPO / "config/aloha_bimanual.yaml", log=lambda m: None)
    return out


def _mixed(d: Path, to: Callable = convert) -> Path:
    rng = np.random.default_rng(3)
    demos = [make_demo(rng, T) for T in (9, 10)]
    for demo in demos:
        demo["obs"]["table_cam"] = np.stack([render(t, *SIZE, 0) for t in range(len(demo["actions"]))])
    sim = write_l2(d / "scripted_lift_cube.hdf5", demos)
    real = make_platform_export(d / "real", [[10, 11]], cameras=PLATFORM_CAMERAS[:1])
    out = d / "mixed_ds"
    to([str(sim), *map(str, real)], out, config=REPO / "config/mixed_sim_platform.yaml", log=lambda m: None)
    return out


@pytest.mark.parametrize("make", [_platform, _aloha, _mixed], ids=["platform_tar_gz", "aloha", "mixed"])
def test_real_robot_dataset_loads_in_lerobot_v21(make, tmp_path):
    root = make(tmp_path)
    info = json.loads((root / layout.INFO_PATH).read_text())
    got = run_probe(lerobot_python("v21"), "load", root, tmp_path)
    assert got["episodes"] == info["total_episodes"]
    assert got["frames"] == got["frames_read"] == info["total_frames"]
    tasks = [json.loads(line)["task"] for line in (root / layout.TASKS_PATH).read_text().splitlines()]
    assert set(got["tasks"]) <= set(tasks) and got["tasks"]


def test_mixed_sim_and_real_v30_loads_in_lerobot_06(tmp_path):
    """Sim and real-robot episodes carry different fields (demo/seed vs chunk/score/task_zh): in v3.0 each is one
    episode-level column, null where an episode lacks it, and lerobot 0.6.1 reads every frame."""
    root = _mixed(tmp_path / "in", to=partial(convert, codebase_version="v3.0"))
    got = run_probe(lerobot_python("v30"), "load_v30", root, tmp_path, str(tmp_path / "frames.npz"))
    assert got["frames"] == got["frames_read"] == 40
    assert [e["source"] for e in got["episodes"]] == ["scripted", "scripted", "platform", "platform"]
    assert [e["demo"] for e in got["episodes"]] == ["demo_0", "demo_1", None, None]
    assert [e["task_zh"] is None for e in got["episodes"]] == [True, True, False, False]
    assert got["by_source"]["platform"]["episodes"] == 2
