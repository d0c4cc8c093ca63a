"""Our output loads in LeRobot's own LeRobotDataset: v2.1 in lerobot 0.3.3, v3.0 (``--codebase-version v3.0``,
LeRobot's own converter) in lerobot 0.6.1, every frame read and compared with the v2.1 output of the same inputs.

Each LeRobot version runs in its own venv built (once, cached outside the repo) by
scripts/setup_lerobot.sh; a venv that cannot be built is a test failure, never a skip.
The first build downloads torch (several GB) and takes minutes.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import lerobot_python, run_probe
from l3_fixtures import CAMERAS, make_l2_file
from test_l3_card import assert_card, split_card

from l3 import card, layout, v30
from l3.convert import convert
from l3.video import decode

pytestmark = pytest.mark.lerobot

REPO = Path(__file__).resolve().parent.parent
CONVERT = [sys.executable, str(REPO / "l3/convert.py")]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> list[str]:
    d = tmp_path_factory.mktemp("lr_in")
    return [
        str(make_l2_file(d / "scripted_lift_cube.hdf5", 3, seed=1, failed=(1,), camera=True)),
        str(make_l2_file(d / "rl_lift_cube.hdf5", 2, seed=2, camera=True)),
        str(make_l2_file(d / "teleop_lift_cube.hdf5", 1, seed=3, camera=True, legacy=True)),
    ]


@pytest.fixture(scope="module")
def dataset(inputs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("lr") / "ds"
    convert(inputs, out, config=REPO / "config/lift_cube.yaml", success_only=False, log=lambda m: None)
    return out


def _v30_args(inputs: list[str], out: Path) -> list[str]:
    config = str(REPO / "config/lift_cube.yaml")
    return [*inputs, "--config", config, "--include-failed", "--codebase-version", "v3.0", "--output", str(out), "-q"]


@pytest.fixture(scope="module")
def dataset_v30(inputs, tmp_path_factory) -> Path:
    """The same inputs through the CLI with --codebase-version v3.0 (LeRobot's venv found by the tool itself)."""
    lerobot_python("v30")  # build it once if missing (the converter never builds it)
    out = tmp_path_factory.mktemp("lr30") / "ds30"
    r = subprocess.run(
        [*CONVERT, *_v30_args(inputs, out)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=900,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "LeRobot v3.0, 6 episodes" in r.stdout
    assert sorted(p.name for p in out.parent.iterdir()) == ["ds30"]  # no staging folder left
    return out


def test_loads_in_lerobot_v21(dataset, tmp_path):
    info = json.loads((dataset / layout.INFO_PATH).read_text())
    got = run_probe(lerobot_python("v21"), "load", dataset, tmp_path)
    assert got["episodes"] == info["total_episodes"] == 6
    assert got["frames"] == got["frames_read"] == info["total_frames"]
    assert got["cameras"] == [f"observation.images.{c}" for c in CAMERAS]
    assert got["tasks"] == ["Pick up the cube and lift it."]


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_v30_loads_in_lerobot_06(dataset, dataset_v30, tmp_path):
    """lerobot 0.6.1 reads every frame of the v3.0 output; episodes (with their source tags), tasks, per-frame
    values and video frames are those of the v2.1 output of the same inputs."""
    npz = tmp_path / "frames.npz"
    got = run_probe(lerobot_python("v30"), "load_v30", dataset_v30, tmp_path, str(npz))
    info = json.loads((dataset / layout.INFO_PATH).read_text())
    assert got["lerobot"].startswith("0.6.")
    assert got["frames"] == got["frames_read"] == info["total_frames"] == 76
    assert got["cameras"] == [f"observation.images.{c}" for c in CAMERAS]

    # episodes: every episodes.jsonl field, as LeRobot exposes them (ds.meta.episodes)
    want = _jsonl(dataset / layout.EPISODES_PATH)
    assert [{k: e[k] for k in w} for e, w in zip(got["episodes"], want, strict=True)] == want
    assert [e["source"] for e in got["episodes"]] == ["scripted", "scripted", "scripted", "rl", "rl", "teleop"]
    assert [e["success"] for e in got["episodes"]] == [True, False, True, True, True, True]
    # and LeRobot selects episodes by them
    per_source = {s: sum(e["length"] for e in want if e["source"] == s) for s in ("rl", "scripted", "teleop")}
    assert got["by_source"] == {
        s: {"episodes": sum(e["source"] == s for e in want), "frames": n, "sources": [s]} for s, n in per_source.items()
    }

    # every frame: the v2.1 parquet rows, task text, and the decoded video frames of the v2.1 MP4s
    arrays = np.load(npz)
    table = pa.concat_tables(pq.read_table(dataset / layout.data_path(e["episode_index"])) for e in want)
    for col in table.column_names:
        v21 = np.array(table[col].to_pylist())
        assert np.array_equal(arrays[col].reshape(v21.shape), v21), col
    tasks = [t["task"] for t in _jsonl(dataset / layout.TASKS_PATH)]
    assert list(arrays["task"]) == [tasks[k] for k in table["task_index"].to_pylist()]
    for cam in CAMERAS:
        key = layout.video_key(cam)
        frames = np.concatenate(
            [np.stack(list(decode(dataset / layout.video_path(e["episode_index"], key)))) for e in want]
        )
        lerobot = np.round(arrays[key].transpose(0, 2, 3, 1) * 255)
        assert lerobot.shape == frames.shape
        assert np.abs(lerobot - frames).max() <= 2, cam  # same stream, another FFmpeg's RGB conversion

    # meta: stats with our q01/q99, modality.json as in v2.1
    for k in ("observation.state", "action"):
        assert {"mean", "std", "min", "max", "q01", "q99"} <= set(got["stats"][k])
    stats, stats21 = (json.loads((d / layout.STATS_PATH).read_text()) for d in (dataset_v30, dataset))
    assert stats["action"]["q01"] == stats21["action"]["q01"]
    assert (dataset_v30 / layout.MODALITY_PATH).read_text() == (dataset / layout.MODALITY_PATH).read_text()


def test_v30_card_states_what_the_v21_output_holds(inputs, dataset, dataset_v30):
    """The v3.0 output's card (written after LeRobot's converter, which leaves none) names its own parquet files and
    the tasks, sources and successes of the v2.1 output of the same inputs, and the command as typed."""
    tasks = [t["task"] for t in _jsonl(dataset / layout.TASKS_PATH)]
    command = f"python l3/convert.py {shlex.join(_v30_args(inputs, dataset_v30))}"
    front, body = assert_card(dataset_v30, tasks, _jsonl(dataset / layout.EPISODES_PATH), command)
    assert front["license"] == card.DEFAULT_LICENSE and "A LeRobot v3.0 dataset" in body
    assert card.without_commands(body) == card.without_commands(split_card(dataset)[1]).replace("v2.1", "v3.0")


def test_v30_check_catches_a_changed_source(dataset, dataset_v30, tmp_path):
    """l3.v30.check, run on every conversion, finds a source tag that differs from the v2.1 episodes."""
    fields = tmp_path / "fields.jsonl"
    fields.write_text(
        "".join(
            json.dumps({k: v for k, v in e.items() if k not in v30.LEROBOT_EPISODE_KEYS}) + "\n"
            for e in _jsonl(dataset / layout.EPISODES_PATH)
        )
    )
    assert v30.check(dataset_v30, dataset, fields) == []
    bad = tmp_path / "bad"
    shutil.copytree(dataset_v30, bad)
    path = next((bad / v30.EPISODES_V30).glob("*/*.parquet"))
    t = pq.read_table(path)
    sources = t["source"].to_pylist()
    sources[5] = "scripted"
    pq.write_table(t.set_column(t.schema.get_field_index("source"), "source", pa.array(sources)), path)
    assert v30.check(bad, dataset, fields) == [
        f"{v30.EPISODES_V30}: episode 5 source 'scripted', episodes.jsonl has 'teleop'"
    ]


def test_v30_converter_failure_leaves_nothing(inputs, tmp_path):
    """A python whose lerobot has no v3.0 converter (lerobot 0.3.3): exit 1 with LeRobot's reason, nothing left."""
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO), v30.PYTHON_ENV: lerobot_python("v21")}
    r = subprocess.run(
        [*CONVERT, *inputs, "--codebase-version", "v3.0", "-o", str(out), "-q"],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "\nerror: LeRobot's v2.1 -> v3.0 converter" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert "lerobot 0.3.3" in r.stderr and "has no v2.1 -> v3.0 converter" in r.stderr
    assert list(tmp_path.iterdir()) == []
