"""l3.validate catches what GR00T / LeRobot loaders trip on; mapping and stats units."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from l3_fixtures import CAMERAS, make_l2_file

from l3 import layout, stats
from l3.config_file import load_mapping
from l3.convert import convert
from l3.errors import ConfigError
from l3.mapping import dump_mapping, mapping_from_dict, mapping_to_dict
from l3.validate import main as validate_main
from l3.validate import validate

CONFIG = Path(__file__).resolve().parent.parent / "config" / "lift_cube.yaml"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("val")
    f = make_l2_file(d / "scripted_x.hdf5", 3, camera=True)
    out = d / "ds"
    convert([str(f)], out, config=CONFIG)
    return out


@pytest.fixture
def copy(dataset, tmp_path) -> Path:
    dst = tmp_path / "ds"
    shutil.copytree(dataset, dst)
    return dst


def _edit_json(p: Path, fn) -> None:
    d = json.loads(p.read_text())
    fn(d)
    p.write_text(json.dumps(d))


def _messages(root: Path) -> str:
    return "\n".join(str(v) for v in validate(root))


def test_clean_dataset_passes(dataset, capsys):
    assert validate(dataset) == []
    assert validate_main([str(dataset)]) == 0
    assert capsys.readouterr().out.startswith("ok")


def test_blank_line_in_jsonl(copy, capsys):
    p = copy / layout.EPISODES_PATH
    p.write_text(p.read_text() + "\n")
    assert "meta/episodes.jsonl:4: blank line" in _messages(copy)
    assert validate_main([str(copy)]) == 1


def test_index_gap_and_totals(copy):
    lines = (copy / layout.EPISODES_PATH).read_text().splitlines()
    e = json.loads(lines[1])
    e["episode_index"] = 5
    lines[1] = json.dumps(e)
    (copy / layout.EPISODES_PATH).write_text("\n".join(lines) + "\n")
    _edit_json(copy / layout.INFO_PATH, lambda d: d.update(total_frames=1))
    msg = _messages(copy)
    assert "episode_index 5 != 1" in msg and "total_frames is 1" in msg


def test_missing_names_and_modality(copy):
    _edit_json(copy / layout.INFO_PATH, lambda d: d["features"]["action"].pop("names"))
    _edit_json(copy / layout.MODALITY_PATH, lambda d: (d.pop("video"), d["action"]["gripper"].update(end=9)))
    msg = _messages(copy)
    assert "features.action.names" in msg
    assert "missing block 'video'" in msg and "action.gripper: bad slice" in msg


def test_parquet_rows_tasks_and_timestamps(copy):
    p = copy / layout.data_path(1)
    t = pq.read_table(p)
    t = t.set_column(t.column_names.index("task_index"), "task_index", pa.array([7] * t.num_rows, pa.int64()))
    ts = t.column("timestamp").to_numpy().copy()
    ts[3] += 0.001
    t = t.set_column(t.column_names.index("timestamp"), "timestamp", pa.array(ts))
    pq.write_table(t, p)
    msg = _messages(copy)
    assert "task_index: indices [7] not in tasks.jsonl" in msg and "timestamp must be float32" in msg


def test_video_frame_count(copy):
    src = copy / layout.video_path(0, layout.video_key(CAMERAS[0]))
    shutil.copy(src, copy / layout.video_path(1, layout.video_key(CAMERAS[0])))
    assert "13 rows" in _messages(copy)  # episode 1 has 13 rows, the copied video 12 frames


def test_stats_need_six_values(copy):
    _edit_json(copy / layout.STATS_PATH, lambda d: d["action"].pop("q01"))
    assert "action: needs all of" in _messages(copy)


# --------------------------------------------------------------------------- mapping


def test_mapping_round_trip_and_errors(tmp_path):
    m = load_mapping(CONFIG)
    assert mapping_from_dict(mapping_to_dict(m)) == m
    p = tmp_path / "m.yaml"
    p.write_text(dump_mapping(m, "header"))
    assert load_mapping(p) == m
    ee = m.action[0]
    assert (ee.key, ee.start, ee.end, ee.rotation_type, ee.absolute, ee.quaternion) == (
        "ee_pose",
        0,
        7,
        None,
        True,
        (3, 7),
    )
    with pytest.raises(ConfigError, match="rotation_type"):
        mapping_from_dict({"state": {"a": "obs/a"}, "action": {"b": {"from": "actions", "rotation_type": "euler"}}})
    with pytest.raises(ConfigError, match="unknown key"):
        mapping_from_dict({"state": {"a": "obs/a"}, "action": {"b": "actions"}, "typo": 1})
    with pytest.raises(ConfigError, match="invalid camera key"):
        mapping_from_dict({"state": {"a": "obs/a"}, "action": {"b": "actions"}, "cameras": {"../x": "obs/c"}})


# --------------------------------------------------------------------------- stats


def test_stats_merge_and_quantiles():
    rng = np.random.default_rng(0)
    parts = [rng.normal(size=(n, 3)) * [1, 10, 0] for n in (5, 50, 500)]
    x = np.concatenate(parts)
    m = stats.Moments.of(parts[0])
    for p in parts[1:]:
        m = m.merge(stats.Moments.of(p))
    assert np.allclose(m.mean, x.mean(0)) and np.allclose(m.std, x.std(0))
    lo, hi = x.min(0), x.max(0)
    hist = sum(stats.histogram(p, lo, hi) for p in parts)
    for q in (0.01, 0.99):
        got = stats.quantile(hist, lo, hi, q, lo, hi)
        assert np.all(np.abs(got - np.quantile(x, q, axis=0)) <= (hi - lo) / stats.BINS + 1e-12)


@pytest.mark.parametrize("kind", ["drift_both_ways", "drift_down", "constant_then_spread"])
def test_streaming_histogram_quantiles(kind):
    """Rows seen once with no known range: q01/q99 within (max - min) / BINS of np.quantile."""
    rng = np.random.default_rng(3)
    parts = []
    for i in range(40):
        n = int(rng.integers(1, 300))
        if kind == "drift_both_ways":
            p = rng.normal(loc=i * 0.3 * (-1) ** i, scale=0.1 + i * 0.05, size=(n, 3))
        elif kind == "drift_down":
            p = np.cumsum(rng.normal(size=(n, 3)), 0) - 5 * i
        else:
            p = np.concatenate(
                [
                    np.full((n, 1), 3.0),
                    np.full((n, 1), float(i > 20)),
                    rng.exponential(size=(n, 1)) * 10.0 ** (i % 5 - 2),
                ],
                1,
            )
        parts.append(p.astype(np.float32))
    for flush_rows, known in ((1, False), (500, False), (1 << 16, False), (500, True)):
        h = stats.StreamingHistogram(flush_rows=flush_rows)
        for p in parts:
            h.add(p, stats.Moments.of(p) if known else None)  # the writer passes each episode's moments
        x = np.concatenate(parts).astype(np.float64)
        h.flush()
        assert np.allclose(h.moments.mean, x.mean(0)) and np.allclose(h.moments.std, x.std(0))
        assert (h.moments.min == x.min(0)).all() and (h.moments.max == x.max(0)).all()
        lo, hi = x.min(0), x.max(0)
        for q in (0.01, 0.99):
            err = np.abs(h.quantile(q, lo, hi) - np.quantile(x, q, axis=0))
            assert np.all(err <= (hi - lo) / stats.BINS + 1e-12), (flush_rows, q, err)
        assert (h.counts.sum(1) == len(x)).all()
