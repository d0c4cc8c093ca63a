"""Real-robot inputs: platform exports (chunk files, tar.gz, encoding variants), ALOHA files, mixed runs, bad inputs."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import av
import h5py
import numpy as np
import pyarrow.parquet as pq
import pytest
from l3_fixtures import make_demo, write_l2
from l3_real_fixtures import (
    ACTION_NAMES,
    PLATFORM_CAMERAS,
    SIZE,
    STATE_NAMES,
    TASKS,
    decode_jpeg,
    make_aloha_file,
    make_platform_chunk,
    make_platform_export,
    make_tar_gz,
    render,
)

from l3 import layout
from l3.convert import convert, main
from l3.errors import ConfigError
from l3.readers.jpeg import row_bytes
from l3.validate import validate

REPO = Path(__file__).resolve().parent.parent
PLATFORM_CFG = REPO / "config" / "platform_export.yaml"
ALOHA_CFG = REPO / "config" / "aloha_bimanual.yaml"
MIXED_CFG = REPO / "config" / "mixed_sim_platform.yaml"
MIN_PSNR = 35.0
QUIET = dict(log=lambda m: None)


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


def decode_video(path: Path) -> np.ndarray:
    with av.open(str(path)) as c:
        return np.stack([f.to_ndarray(format="rgb24") for f in c.decode(video=0)])


def episodes(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / layout.EPISODES_PATH).read_text().splitlines()]


def parquet(root: Path, i: int) -> dict:
    t = pq.read_table(root / layout.data_path(i)).to_pydict()
    return {k: np.asarray(v) for k, v in t.items()}


def check_video(root: Path, i: int, cam: str, source_frames: list[np.ndarray]) -> float:
    """Frame count == rows and PSNR against the source frames; returns the lowest PSNR."""
    got = decode_video(root / layout.video_path(i, layout.video_key(cam)))
    assert len(got) == len(source_frames)
    worst = min(psnr(g, s) for g, s in zip(got, source_frames, strict=True))
    assert worst >= MIN_PSNR, (cam, i, worst)
    return worst


# --------------------------------------------------------------------------- platform exports


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> list[Path]:
    """Two chunks, continuous numbering: chunk_001 = episode_001, episode_002; chunk_002 = episode_003."""
    d = tmp_path_factory.mktemp("platform")
    return make_platform_export(d, [[14, 15]], scores=[0.9, 0.2]) + [
        make_platform_chunk(d / "chunk_002.hdf5", 3, [16], seed=2, scores=[0.6])
    ]


@pytest.fixture(scope="module")
def converted(export, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("platform_out") / "ds"
    convert([str(p) for p in export], out, config=PLATFORM_CFG, **QUIET)
    return out


def test_platform_export_every_episode_bit_exact(export, converted):
    root = converted
    assert validate(root) == []
    eps = episodes(root)
    assert [(e["chunk"], e["episode"]) for e in eps] == [
        ("chunk_001.hdf5", "episode_001"),
        ("chunk_001.hdf5", "episode_002"),
        ("chunk_002.hdf5", "episode_003"),
    ]
    assert {e["source"] for e in eps} == {"platform"} and all(e["format"] == "platform" for e in eps)
    assert [e["score"] for e in eps] == [0.9, 0.2, 0.6]
    info = json.loads((root / layout.INFO_PATH).read_text())
    assert info["fps"] == 30 and info["total_videos"] == 9
    # joint names come from /meta
    assert info["features"]["observation.state"]["names"] == STATE_NAMES + ["right_gripper", "left_gripper"]
    assert info["features"]["action"]["names"] == ACTION_NAMES
    tasks = [json.loads(line)["task"] for line in (root / layout.TASKS_PATH).read_text().splitlines()]
    modality = json.loads((root / layout.MODALITY_PATH).read_text())
    assert modality["state"]["gripper"] == {"start": 14, "end": 16, "absolute": True}
    assert sorted(modality["video"]) == sorted(PLATFORM_CAMERAS)
    for i, e in enumerate(eps):
        with h5py.File(export[0].parent / e["chunk"], "r") as f:
            g = f[f"data/{e['episode']}"]
            task, task_zh = g.attrs["task"], g.attrs["task_zh"]
            assert e["task_zh"] == task_zh and (task, task_zh) in TASKS
            cols = parquet(root, i)
            T = len(cols["frame_index"])
            assert T == e["length"] == g["action"].shape[0]
            want_state = np.concatenate([g["observation.state"][()], g["observation.gripper"][()]], axis=1)
            assert np.array_equal(np.stack(cols["observation.state"]), want_state)
            assert np.array_equal(np.stack(cols["action"]), g["action"][()])
            assert tasks[cols["annotation.human.action.task_description"][0]] == task == e["tasks"][0]
            assert (cols["task_index"] == tasks.index(task)).all()
            for cam in PLATFORM_CAMERAS:
                ds = g[f"observation.images.{cam}"]
                check_video(root, i, cam, [decode_jpeg(row_bytes(r)) for r in ds[()]])


def test_platform_tar_gz_and_encoding_variants(tmp_path):
    """bytes attrs, fixed-size np.void JPEG rows, float64, AgiBot /meta, unpadded episode names; read from tar.gz."""
    d = tmp_path / "raw"
    kw = dict(attrs_bytes=True, rows="void", dtype=np.float64, meta="agibot", cameras=PLATFORM_CAMERAS[:2])
    files = [
        make_platform_chunk(d / "chunk_1.hdf5", 9, [12, 13], seed=5, episode_names=["episode_10", "episode_9"], **kw),
        make_platform_chunk(d / "chunk_2.hdf5", 11, [14], seed=6, **kw),
    ]
    archive = make_tar_gz(tmp_path / "export.tar.gz", files)  # members stored chunk_2 first
    with tarfile.open(archive) as tf:
        assert tf.getnames()[0].endswith("chunk_2.hdf5")
    out = tmp_path / "ds"
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(PLATFORM_CFG.read_text().replace("  cam_right_wrist: observation.images.cam_right_wrist\n", ""))
    summary = convert([str(archive)], out, config=cfg, **QUIET)
    assert validate(out) == []
    eps = episodes(out)
    assert [(e["chunk"], e["episode"]) for e in eps] == [
        ("chunk_1.hdf5", "episode_9"),
        ("chunk_1.hdf5", "episode_10"),
        ("chunk_2.hdf5", "episode_011"),
    ]
    assert {e["source"] for e in eps} == {"agibot_g1"} and set(summary.per_source) == {"agibot_g1"}
    assert json.loads(eps[0]["camera_calibration"]["cam_high"]["intrinsic"])["fx"] == 300.0
    for i, e in enumerate(eps):
        with h5py.File(d / e["chunk"], "r") as f:
            g = f[f"data/{e['episode']}"]
            assert g["action"].dtype == np.float64
            assert e["task_zh"] == g.attrs["task_zh"].decode() and e["tasks"][0] == g.attrs["task"].decode()
            cols = parquet(out, i)
            assert np.array_equal(np.stack(cols["action"]), g["action"][()].astype(np.float32))
            want = np.concatenate([g["observation.state"][()], g["observation.gripper"][()]], axis=1)
            assert np.array_equal(np.stack(cols["observation.state"]), want.astype(np.float32))
            for cam in PLATFORM_CAMERAS[:2]:
                rows = g[f"observation.images.{cam}"][()]
                assert isinstance(rows[0], np.void)
                check_video(out, i, cam, [decode_jpeg(row_bytes(r)) for r in rows])


def test_min_score_filter(export, tmp_path):
    out = tmp_path / "ds"
    summary = convert([str(p) for p in export], out, config=PLATFORM_CFG, min_score=0.5, **QUIET)
    assert [e["score"] for e in episodes(out)] == [0.9, 0.6]
    assert any("dropped 1 episode" in n for n in summary.notices)


# --------------------------------------------------------------------------- ALOHA


def test_aloha_raw_and_compressed(tmp_path):
    raw = make_aloha_file(tmp_path / "in" / "episode_0.hdf5", 18, seed=1)
    comp = make_aloha_file(tmp_path / "in" / "episode_1.hdf5", 19, seed=2, compress=True)
    out = tmp_path / "ds"
    assert main([str(raw), str(comp), "-c", str(ALOHA_CFG), "-o", str(out), "-q"]) == 0
    assert validate(out) == []
    info = json.loads((out / layout.INFO_PATH).read_text())
    assert info["fps"] == 50 and info["features"]["observation.state"]["shape"] == [14]
    eps = episodes(out)
    assert [e["source"] for e in eps] == ["aloha", "aloha"]
    for i, p in enumerate((raw, comp)):
        with h5py.File(p, "r") as f:
            cols = parquet(out, i)
            assert np.array_equal(np.stack(cols["observation.state"]), f["observations/qpos"][()])
            assert np.array_equal(np.stack(cols["action"]), f["action"][()])
            for k, cam in enumerate(PLATFORM_CAMERAS):
                ds = f[f"observations/images/{cam}"][()]
                if p == comp:
                    n = f["compress_len"][k].astype(int)
                    src = [decode_jpeg(r[:m].tobytes()) for r, m in zip(ds, n, strict=True)]
                else:
                    src = list(ds)
                check_video(out, i, cam, src)


def test_aloha_fps_is_configurable(tmp_path):
    ep = make_aloha_file(tmp_path / "ep.hdf5", 10, cameras=("cam_high",))
    cfg = tmp_path / "a.yaml"
    cfg.write_text(
        ALOHA_CFG.read_text()
        .replace("fps: 50", "fps: 30")
        .replace(
            "  cam_left_wrist: observations/images/cam_left_wrist\n"
            "  cam_right_wrist: observations/images/cam_right_wrist\n",
            "",
        )
    )
    convert([str(ep)], tmp_path / "ds", config=cfg, **QUIET)
    assert json.loads((tmp_path / "ds" / layout.INFO_PATH).read_text())["fps"] == 30


# --------------------------------------------------------------------------- mixed sim + real


@pytest.fixture(scope="module")
def sim_and_real(tmp_path_factory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("mixed")
    rng = np.random.default_rng(7)
    demos = [make_demo(rng, T) for T in (11, 12)]
    for i, demo in enumerate(demos):  # sim camera at the platform's frame size
        demo["obs"]["table_cam"] = np.stack([render(t + i, *SIZE, 1) for t in range(len(demo["actions"]))])
    sim = write_l2(d / "scripted_lift_cube.hdf5", demos)
    real = make_platform_chunk(d / "real" / "chunk_001.hdf5", 1, [13, 14], seed=8)
    return sim, real


def test_mixed_refuses_without_reconciling_config(sim_and_real, tmp_path, capsys):
    sim, real = sim_and_real
    with pytest.raises(ConfigError) as e:  # the sim-only config has no 'inputs: {platform: ...}' section
        convert([str(sim), str(real)], tmp_path / "ds", config=REPO / "config/lift_cube.yaml", **QUIET)
    msg = str(e.value)
    assert str(sim) in msg and str(real) in msg and "inputs:" in msg
    # no config: inferred per format, widths differ -> one line, exit 2, nothing written
    assert main([str(sim), str(real), "-o", str(tmp_path / "ds2")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: inputs with different state layouts")
    assert "state width 28" in err and "state width 16" in err, err
    assert not (tmp_path / "ds").exists() and not (tmp_path / "ds2").exists()


def test_mixed_with_config_one_dataset(sim_and_real, tmp_path):
    sim, real = sim_and_real
    out = tmp_path / "ds"
    convert([str(sim), str(real)], out, config=MIXED_CFG, **QUIET)
    assert validate(out) == []
    eps = episodes(out)
    assert [e["source"] for e in eps] == ["scripted", "scripted", "platform", "platform"]
    info = json.loads((out / layout.INFO_PATH).read_text())
    assert info["features"]["observation.state"]["shape"] == [28] and info["features"]["action"]["shape"] == [24]
    assert info["features"]["observation.state"]["names"][12:26] == STATE_NAMES  # names from the platform /meta
    with h5py.File(sim, "r") as f:
        cols = parquet(out, 0)
        s = np.stack(cols["observation.state"])
        assert np.array_equal(s[:, :9], f["data/demo_0/obs/joint_pos"][()]) and not s[:, 12:].any()
        a = np.stack(cols["action"])
        assert np.array_equal(a[:, :8], f["data/demo_0/actions"][()]) and not a[:, 8:].any()
    with h5py.File(real, "r") as f:
        cols = parquet(out, 3)
        g = f["data/episode_002"]
        s = np.stack(cols["observation.state"])
        assert not s[:, :12].any() and np.array_equal(s[:, 12:26], g["observation.state"][()])
        assert np.array_equal(s[:, 26:], g["observation.gripper"][()])
        a = np.stack(cols["action"])
        assert not a[:, :8].any() and np.array_equal(a[:, 8:], g["action"][()])
        check_video(out, 3, "front", [decode_jpeg(row_bytes(r)) for r in g["observation.images.cam_high"][()]])


# --------------------------------------------------------------------------- bad inputs


def _bad_jpeg(p: Path) -> str:
    with h5py.File(p, "a") as f:
        f["data/episode_002/observation.images.cam_left_wrist"][3] = np.frombuffer(b"\xff\xd8garbage" * 10, np.uint8)
    return "/data/episode_002/observation.images.cam_left_wrist: camera cam_left_wrist, frame 3: JPEG does not decode"


def _short_camera(p: Path) -> str:
    with h5py.File(p, "a") as f:
        g = f["data/episode_001"]
        rows = g["observation.images.cam_high"][()]
        del g["observation.images.cam_high"]
        ds = g.create_dataset("observation.images.cam_high", (len(rows) - 1,), dtype=h5py.vlen_dtype(np.uint8))
        for i in range(len(rows) - 1):
            ds[i] = rows[i]
    return "/data/episode_001/observation.images.cam_high: 13 frames but the episode has 14 rows (action)"


def _unsafe_camera(p: Path) -> str:
    with h5py.File(p, "a") as f:
        g = f["data/episode_002"]
        g["observation.images..."] = g["observation.images.cam_high"][()]
    return "/data/episode_002/observation.images...: unsafe camera name '..'"


def _unknown_layout(p: Path) -> str:
    with h5py.File(p, "w") as f:
        f["foo/bar"] = np.zeros(3)
    return "/: unknown layout"


BAD = {
    "bad_jpeg": _bad_jpeg,
    "short_camera": _short_camera,
    "unsafe_camera": _unsafe_camera,
    "unknown_layout": _unknown_layout,
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_platform_input(case, tmp_path, capsys):
    good = make_platform_chunk(tmp_path / "in" / "chunk_001.hdf5", 1, [14, 14], seed=3)
    bad = make_platform_chunk(tmp_path / "in" / "chunk_002.hdf5", 1, [14, 14], seed=4)
    expected = BAD[case](bad)
    out = tmp_path / "out" / "ds"
    rc = main([str(good), str(bad), "-c", str(PLATFORM_CFG), "-o", str(out), "-q"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"error: {bad}:{expected}"), err
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


def test_unsafe_camera_key_in_config(tmp_path, capsys):
    good = make_platform_chunk(tmp_path / "chunk_001.hdf5", 1, [5], seed=3, cameras=("cam_high",))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "fps: 30\nstate: {s: observation.state}\naction: {a: action}\ncameras: {'../x': observation.images.cam_high}\n"
    )
    assert main([str(good), "-c", str(cfg), "-o", str(tmp_path / "o")]) == 2
    assert "invalid camera key '../x'" in capsys.readouterr().err


def test_task_text_that_is_not_utf8_is_one_line_error(tmp_path, capsys):
    """h5py reads invalid UTF-8 in a variable-length string as lone surrogates: reported as bad input,
    not a UnicodeEncodeError when the task is written (found by bench/fuzz_inputs.py)."""
    chunk = make_platform_chunk(tmp_path / "in" / "chunk_1.hdf5", 3, [5])
    with h5py.File(chunk, "a") as f:
        f["data/episode_003"].attrs.create("task", b"pick \xe6\x80 up", dtype=h5py.string_dtype("utf-8"))
        assert "\udce6" in f["data/episode_003"].attrs["task"]
    out = tmp_path / "ds"
    assert main([str(chunk), "--config", str(PLATFORM_CFG), "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {chunk}:/data/episode_003: task attribute is not UTF-8"), err
    assert not out.exists()
