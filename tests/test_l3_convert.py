"""L3 converter end to end: layout, bit-exact values, sources, filters, workers, safety."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import refused_in_one_line
from l3_fixtures import CAMERA, CAMERAS, assert_same_dataset, make_l2_file, state_only_config

from l3 import layout
from l3.convert import UsageError, convert, main, pool_chunk
from l3.errors import InputError
from l3.validate import validate

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "config" / "lift_cube.yaml"


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> Path:
    """scripted (12 demos, demo_2 and demo_11 failed, numeric order matters), rl, legacy teleop, other."""
    d = tmp_path_factory.mktemp("l3_in")
    make_l2_file(d / "scripted_lift_cube.hdf5", 12, seed=1, failed=(2, 11), camera=True)
    make_l2_file(d / "rl_lift_cube.hdf5", 3, seed=2, failed=(0,), camera=True)
    make_l2_file(d / "teleop_lift_cube.hdf5", 2, seed=3, camera=True, legacy=True)
    make_l2_file(d / "other.hdf5", 1, seed=4, camera=True)
    return d


@pytest.fixture(scope="module")
def cam_config() -> Path:
    return CONFIG


@pytest.fixture(scope="module")
def converted(mixed, cam_config, tmp_path_factory) -> tuple[Path, object]:
    out = tmp_path_factory.mktemp("l3_out") / "ds"
    files = [
        str(mixed / n) for n in ("scripted_lift_cube.hdf5", "rl_lift_cube.hdf5", "teleop_lift_cube.hdf5", "other.hdf5")
    ]
    summary = convert(files, out, config=cam_config, log=lambda m: None)
    return out, summary


def _episodes(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / layout.EPISODES_PATH).read_text().splitlines()]


def test_layout_totals_and_sources(converted):
    root, summary = converted
    assert validate(root) == []
    info = json.loads((root / layout.INFO_PATH).read_text())
    eps = _episodes(root)
    # scripted 12-2 failed, rl 3-1, teleop 2, other 1
    assert [e["episode_index"] for e in eps] == list(range(15))
    assert [e["source"] for e in eps] == ["scripted"] * 10 + ["rl"] * 2 + ["teleop"] * 2 + ["unknown"]
    assert all(e["success"] for e in eps)
    # numeric demo order within a file, failed ones dropped without index gaps
    assert [e["demo"] for e in eps[:10]] == [f"demo_{i}" for i in (0, 1, 3, 4, 5, 6, 7, 8, 9, 10)]
    assert info["total_episodes"] == 15 and info["total_videos"] == 15 * len(CAMERAS)
    assert info["total_frames"] == sum(e["length"] for e in eps)
    assert info["features"]["action"]["names"] == ["x", "y", "z", "qx", "qy", "qz", "qw", "gripper"]
    assert len(info["features"]["observation.state"]["names"]) == 12
    assert summary.per_source["scripted"].failed_dropped == 2
    assert summary.per_source["rl"].kept == 2
    for name in ("episodes.jsonl", "tasks.jsonl", "episodes_stats.jsonl"):
        text = (root / layout.META / name).read_text()
        assert "\n\n" not in text and text.endswith("}\n")
    modality = json.loads((root / layout.MODALITY_PATH).read_text())
    # a 7-wide pose key carries no rotation_type (GR00T would convert all 7 columns as one rotation)
    assert modality["action"]["ee_pose"] == {"start": 0, "end": 7, "absolute": True}
    assert modality["state"]["joint_pos"] == {"start": 0, "end": 9, "absolute": True}
    assert modality["video"] == {c: {"original_key": f"observation.images.{c}"} for c in CAMERAS}
    stats = json.loads((root / layout.STATS_PATH).read_text())
    for key in ("observation.state", "action", "timestamp", "next.reward"):
        assert set(stats[key]) == {"mean", "std", "min", "max", "q01", "q99"}


def test_values_round_trip_bit_exact(converted):
    root, _ = converted
    for e in _episodes(root):
        t = pq.read_table(root / layout.data_path(e["episode_index"]))
        state = np.stack(t.column("observation.state").to_numpy(zero_copy_only=False))
        action = np.stack(t.column("action").to_numpy(zero_copy_only=False))
        with h5py.File(e["file"], "r") as f:
            g = f["data"][e["demo"]]
            want_s = np.concatenate([g["obs/joint_pos"][()], g["obs/object_position"][()]], axis=1)
            want_a = g["actions"][()]
            legacy = "format_version" not in f.attrs
        if legacy:  # WXYZ -> XYZW
            want_a = want_a[:, [0, 1, 2, 4, 5, 6, 3, 7]]
        assert state.dtype == np.float32 and action.dtype == np.float32
        assert state.tobytes() == want_s.tobytes()
        assert action.tobytes() == want_a.tobytes()
        ts = t.column("timestamp").to_numpy()
        assert ts.dtype == np.float32 and ts.tobytes() == (np.arange(e["length"]) / 50).astype(np.float32).tobytes()


def test_video_frames_decode(converted):
    import av

    root, _ = converted
    e = _episodes(root)[0]
    path = root / layout.video_path(0, layout.video_key(CAMERAS[0]))
    with av.open(str(path)) as c:
        frames = [f for f in c.decode(video=0)]
    assert len(frames) == e["length"]
    assert [round(float(f.time), 6) for f in frames] == [round(i / 50, 6) for i in range(e["length"])]
    with h5py.File(e["file"], "r") as f:
        src = f["data"][e["demo"]][CAMERA][3]
    got = frames[3].to_ndarray(format="rgb24").astype(int)
    assert np.abs(got - src).mean() < 12  # lossy, but the same picture


def test_include_failed_sources_max_and_override(mixed, cam_config, tmp_path):
    out = tmp_path / "ds"
    convert(
        [str(mixed / "*.hdf5")],
        out,
        config=cam_config,
        success_only=False,
        sources=["scripted", "teleop"],
        max_episodes=13,
        source_overrides=["teleop=rl_*"],
        log=lambda m: None,
    )
    eps = _episodes(out)
    assert len(eps) == 13
    assert [e["source"] for e in eps] == ["teleop"] * 3 + ["scripted"] * 10  # rl_* re-tagged; glob order
    tasks = [json.loads(line)["task"] for line in (out / layout.TASKS_PATH).read_text().splitlines()]
    assert tasks == ["Pick up the cube and lift it.", "valid", "invalid"]
    failed = [e for e in eps if not e["success"]]
    # episodes.jsonl lists the instruction only: a loader drawing one of its tasks as the language gets it
    assert failed and all(e["tasks"] == ["Pick up the cube and lift it."] for e in eps)
    t = pq.read_table(out / layout.data_path(failed[0]["episode_index"]))
    assert set(t.column("annotation.human.validity").to_pylist()) == {2}
    assert validate(out) == []


ONE_CPU = (
    "import os, sys; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); from l3.convert import main; "
    "sys.exit(main(sys.argv[1:]))"
)
"""Runs the converter on one CPU: an encoder that sizes its threads to the machine writes other bytes there."""


def test_output_bytes_are_the_same_for_any_workers_cpus_and_load(cam_config, tmp_path):
    # camera-sized frames: x264 runs a single thread on tiny ones whatever it is told
    files = [
        str(
            make_l2_file(
                tmp_path / "in" / f"scripted_{k}.hdf5", 2, seed=k, length=40, camera=True, frame_size=(224, 224)
            )
        )
        for k in range(2)
    ]
    runs = {"w1": [], "w2": ["--workers", "2"], "w1_again": [], "one_cpu": None}
    # Two processes burning both cores the whole time: x264's automatic frame threads gave different video
    # bytes from run to run on a loaded machine, and pick their number from the CPUs the process may use.
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        for name, extra in runs.items():
            args = [*files, "--config", str(cam_config), "-o", str(tmp_path / name), "-q"]
            cmd = (
                [sys.executable, "-c", ONE_CPU, *args]
                if extra is None
                else [sys.executable, "-m", "l3.convert", *args, *extra]
            )
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=600)
            assert proc.returncode == 0, proc.stderr[-2000:]
    finally:
        for p in burners:
            p.kill()
    for name in runs:
        assert assert_same_dataset(tmp_path / "w1", tmp_path / name, ".mp4"), name


def test_inferred_mapping_and_print_config(mixed, tmp_path, capsys):
    assert main([str(mixed / "rl_lift_cube.hdf5"), "--print-config"]) == 0
    text = capsys.readouterr().out
    assert (
        "obs/joint_pos" in text
        and f"{CAMERAS[0]}: {CAMERA}" in text
        and "quaternion: [3, 7]" in text
        and "rotation_type" not in text
    )
    cfg = tmp_path / "inferred.yaml"
    cfg.write_text(text)
    assert main([str(mixed / "rl_lift_cube.hdf5"), "--config", str(cfg), "-o", str(tmp_path / "a"), "-q"]) == 0
    assert main([str(mixed / "rl_lift_cube.hdf5"), "-o", str(tmp_path / "b"), "-q"]) == 0
    info = json.loads((tmp_path / "b" / layout.INFO_PATH).read_text())
    assert info["robot_type"] == "franka_panda" and f"observation.images.{CAMERAS[1]}" in info["features"]
    assert validate(tmp_path / "b") == []


def test_existing_output_is_protected(mixed, tmp_path, capsys):
    out = tmp_path / "ds"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    args = [str(mixed / "rl_lift_cube.hdf5"), "--config", str(CONFIG), "-o", str(out), "-q"]
    status, said = main(args), capsys.readouterr()
    refused_in_one_line(subprocess.CompletedProcess(args, status, said.out, said.err), str(out), "already exists")
    assert (out / "keep.txt").read_text() == "mine"
    assert main([*args, "--overwrite"]) == 0
    assert not (out / "keep.txt").exists() and validate(out) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]  # no temp/old folders left
    with pytest.raises(UsageError):
        convert([str(mixed / "rl_lift_cube.hdf5")], out, config=CONFIG)


@pytest.mark.parametrize("how", ["script", "module"])
def test_cli_entry_points(mixed, tmp_path, how):
    cmd = [sys.executable, "l3/convert.py"] if how == "script" else [sys.executable, "-m", "l3.convert"]
    out = tmp_path / "ds"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run(
        [*cmd, str(mixed / "rl_lift_cube.hdf5"), "--config", str(CONFIG), "-o", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "rl " in r.stderr and "total" in r.stderr  # summary table
    r = subprocess.run(
        [sys.executable, "-m", "l3.validate", str(out)], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0 and r.stdout.startswith("ok")


def _break_nan(path: Path, demo: str) -> None:
    with h5py.File(path, "a") as f:
        f[f"data/{demo}/obs/joint_vel"][3, 1] = np.nan  # an unmapped term: caught by the L2 checks


@pytest.mark.parametrize("max_episodes", [None, 4])
def test_skip_bad_renumbers_and_workers_identical(tmp_path, cam_config, max_episodes):
    """A bad episode is skipped before anything is numbered: later ones move down, same bytes for 1 or 2 workers."""
    src = make_l2_file(tmp_path / "in" / "scripted_a.hdf5", 6, seed=7, camera=True, failed=(5,))
    _break_nan(src, "demo_1")
    outs = {}
    for w in (1, 2):
        out = tmp_path / f"w{w}"
        s = convert(
            [str(src)],
            out,
            config=cam_config,
            workers=w,
            skip_bad=True,
            success_only=False,
            max_episodes=max_episodes,
            log=lambda m: None,
        )
        assert validate(out) == []
        assert len(s.skipped) == 1 and "/data/demo_1/obs/joint_vel" in s.skipped[0]
        outs[w] = out
    eps = _episodes(outs[1])
    want = ["demo_0", "demo_2", "demo_3", "demo_4", "demo_5"][: max_episodes or 5]
    assert [e["demo"] for e in eps] == want
    assert [e["episode_index"] for e in eps] == list(range(len(want)))
    offset = 0
    for e in eps:
        t = pq.read_table(outs[1] / layout.data_path(e["episode_index"]))
        assert set(t.column("episode_index").to_pylist()) == {e["episode_index"]}
        assert t.column("index").to_pylist() == list(range(offset, offset + e["length"]))
        offset += e["length"]
    tasks = [json.loads(line)["task"] for line in (outs[1] / layout.TASKS_PATH).read_text().splitlines()]
    assert tasks == ["Pick up the cube and lift it.", "valid"] + (["invalid"] if max_episodes is None else [])
    assert_same_dataset(outs[1], outs[2])


def test_state_only_workers_take_chunks_in_order(tmp_path):
    """State-only pool workers take several episodes at a time: the same bytes as one process, and a bad
    episode in the middle of a chunk is the one the error names (nothing left behind)."""
    cfg = state_only_config(tmp_path, CONFIG)
    src = [str(make_l2_file(tmp_path / "in" / f"scripted_{k}.hdf5", 12, seed=20 + k)) for k in range(2)]
    assert pool_chunk(24, 2, cameras=False) == 3 and pool_chunk(24, 2, cameras=True) == 1
    outs = {w: tmp_path / f"w{w}" for w in (1, 2)}
    for w, out in outs.items():
        assert convert(src, out, config=cfg, workers=w, log=lambda m: None).episodes == 24
    assert len(assert_same_dataset(outs[1], outs[2], ".parquet")) == 24
    _break_nan(Path(src[1]), "demo_4")  # episode 16: the second of its chunk of 3
    _break_nan(Path(src[1]), "demo_9")
    for w in (1, 2):
        with pytest.raises(InputError, match=r"scripted_1\.hdf5:/data/demo_4/obs/joint_vel"):
            convert(src, tmp_path / f"bad{w}", config=cfg, workers=w, log=lambda m: None)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["in", "w1", "w2", cfg.name])  # no temp folders


@pytest.mark.parametrize(
    "bad_demo, tasks_left, validity",
    [
        ("demo_0", ["valid"], 1),  # the only failed episode is bad: "invalid" is not listed
        ("demo_1", ["invalid"], 1),  # the only successful one is bad: "invalid" moves from 2 to 1
    ],
)
def test_skip_bad_retasks(tmp_path, bad_demo, tasks_left, validity):
    failed = (0,) if bad_demo == "demo_0" else (0, 2, 3)
    src = make_l2_file(tmp_path / "scripted_a.hdf5", 4, seed=8, failed=failed, camera=True)
    _break_nan(src, bad_demo)
    out = tmp_path / "ds"
    convert([str(src)], out, config=CONFIG, success_only=False, skip_bad=True, log=lambda m: None)
    assert validate(out) == []
    tasks = [json.loads(line)["task"] for line in (out / layout.TASKS_PATH).read_text().splitlines()]
    assert tasks == ["Pick up the cube and lift it.", *tasks_left]
    ep_stats = [json.loads(line) for line in (out / layout.EPISODES_STATS_PATH).read_text().splitlines()]
    for e, es in zip(_episodes(out), ep_stats, strict=True):
        t = pq.read_table(out / layout.data_path(e["episode_index"]))
        assert set(t.column("annotation.human.validity").to_pylist()) == {validity}
        assert es["stats"]["annotation.human.validity"]["max"] == [validity]
        assert es["stats"]["episode_index"]["min"] == [e["episode_index"]]


def test_fast_validation_catches_footer_problems(converted, tmp_path):
    import shutil

    import pyarrow as pa

    root, _ = converted
    copy = tmp_path / "ds"
    shutil.copytree(root, copy)
    assert validate(copy, deep=False) == []
    p = copy / layout.data_path(2)
    t = pq.read_table(p)
    t = t.set_column(t.column_names.index("index"), "index", pa.array(np.arange(t.num_rows) + 5, pa.int64()))
    t = t.set_column(t.column_names.index("task_index"), "task_index", pa.array([9] * t.num_rows, pa.int64()))
    pq.write_table(t.slice(1), p)
    msg = "\n".join(str(v) for v in validate(copy, deep=False))
    assert "rows but episodes.jsonl length" in msg
    pq.write_table(t, p)
    msg = "\n".join(str(v) for v in validate(copy, deep=False))
    assert "index must run" in msg and "task_index: indices [9] not in tasks.jsonl" in msg
    # a schema unlike the other episodes' (the schema checks run once per distinct schema)
    p1 = copy / layout.data_path(1)
    t1 = pq.read_table(p1)
    col = t1.column_names.index("observation.state")
    pq.write_table(t1.set_column(col, "observation.state", t1.column(col).cast(pa.list_(pa.float64()))), p1)
    msg = "\n".join(str(v) for v in validate(copy, deep=False))
    assert "episode_000001.parquet: observation.state: values are double, expected float32" in msg
    assert "episode_000000.parquet" not in msg


# --------------------------------------------------------------------------- fps, filters, reproducibility
def _rate_file(path: Path, dt: float | None, decimation: int = 4, seed: int = 0) -> Path:
    from l3_fixtures import make_demo, write_l2

    rng = np.random.default_rng(seed)
    sim_args = None if dt is None else {"dt": dt, "decimation": decimation}
    return write_l2(path, [make_demo(rng, 10 + i) for i in range(2)], sim_args=sim_args)


def _state_config(tmp: Path) -> Path:
    from l3_fixtures import state_only_config

    return state_only_config(tmp, CONFIG)


def test_fps_comes_from_the_files_sim_args(tmp_path):
    src = _rate_file(tmp_path / "scripted_a.hdf5", dt=0.005, decimation=10)  # 20 Hz
    summary = convert([str(src)], tmp_path / "ds", config=_state_config(tmp_path), log=lambda m: None)
    info = json.loads((tmp_path / "ds" / layout.INFO_PATH).read_text())
    assert info["fps"] == 20 and summary.notices == []
    ts = pq.read_table(tmp_path / "ds" / layout.data_path(0)).column("timestamp").to_numpy()
    assert ts.tobytes() == (np.arange(10) / 20).astype(np.float32).tobytes()


def test_inputs_at_different_rates_are_refused_unless_the_config_sets_fps(tmp_path, capsys):
    a = _rate_file(tmp_path / "scripted_a.hdf5", dt=0.005)  # 50 Hz
    b = _rate_file(tmp_path / "teleop_b.hdf5", dt=0.005, decimation=10)  # 20 Hz
    cfg = _state_config(tmp_path)
    assert main([str(a), str(b), "--config", str(cfg), "-o", str(tmp_path / "o"), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: inputs recorded at different rates cannot share one dataset: ")
    assert f"{a} at 50 Hz" in err and f"{b} at 20 Hz" in err and "set fps: N" in err and "\n" not in err
    assert not (tmp_path / "o").exists()
    # a config that sets fps relabels, with a notice for the file it contradicts
    doc = cfg.read_text() + "fps: 50\n"
    cfg.write_text(doc)
    summary = convert([str(a), str(b)], tmp_path / "ds", config=cfg, log=lambda m: None)
    assert summary.notices == [
        f"notice: {b}: recorded at 20 Hz, written at fps 50 from the config (frames relabelled, not resampled)"
    ]
    # a file that does not say: the default, with a notice
    c = _rate_file(tmp_path / "rl_c.hdf5", dt=None)
    summary = convert([str(c)], tmp_path / "ds2", config=_state_config(tmp_path / "ds"), log=lambda m: None)
    assert summary.notices == ["notice: no input states its rate: fps 50 (set fps: in the config)"]


def test_when_filters_leave_nothing_the_message_says_what_was_dropped_and_how_to_keep_it(tmp_path, capsys):
    a = make_l2_file(tmp_path / "scripted_a.hdf5", 3, failed=(0, 1, 2))
    b = make_l2_file(tmp_path / "teleop_b.hdf5", 2, seed=1)
    assert main([str(a), "-o", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: no episodes to convert: read 3 episode(s) in 1 file(s); 3 dropped as failed "
        "(--include-failed keeps them)"
    )
    assert main([str(a), str(b), "--sources", "scripted", "-o", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: no episodes to convert: read 3 episode(s) in 1 file(s); 3 dropped as failed "
        "(--include-failed keeps them); left out by --sources: teleop (2 episode(s))"
    )
    assert not (tmp_path / "o").exists()


def test_each_demo_instruction_becomes_its_episode_task(tmp_path):
    """A demo's ``instruction`` attribute (``presets=variety`` names the target's color) is its episode's task:
    tasks.jsonl lists each distinct instruction once (then the validity labels), every frame's task annotation
    points at its own episode's, and episodes.jsonl lists the instruction alone. A demo without one gets the
    config's task; an empty one is refused in one line."""
    src = make_l2_file(tmp_path / "scripted_lift_cube.hdf5", 4, seed=3, failed=(2,), camera=True)
    said = ["Lift the blue cube.", "Pick up the red cube and lift it.", "Lift the blue cube.", None]
    with h5py.File(src, "a") as f:
        for k, text in enumerate(said):
            if text is not None:
                f[f"data/demo_{k}"].attrs["instruction"] = text
    out = tmp_path / "ds"
    convert([str(src)], out, config=CONFIG, success_only=False, log=lambda m: None)
    assert validate(out) == []
    tasks = [json.loads(line)["task"] for line in (out / layout.TASKS_PATH).read_text().splitlines()]
    config_task = "Pick up the cube and lift it."
    assert tasks == ["Lift the blue cube.", "Pick up the red cube and lift it.", config_task, "valid", "invalid"]
    for e, text in zip(_episodes(out), said, strict=True):
        want = text or config_task
        assert e["tasks"] == [want]
        t = pq.read_table(out / layout.data_path(e["episode_index"]))
        assert set(t.column("annotation.human.action.task_description").to_pylist()) == {tasks.index(want)}
        assert set(t.column("annotation.human.validity").to_pylist()) == {
            tasks.index("valid" if e["success"] else "invalid")
        }

    with h5py.File(src, "a") as f:
        f["data/demo_1"].attrs["instruction"] = "  "
    bad = subprocess.run(
        [sys.executable, "l3/convert.py", str(src), "--config", str(CONFIG), "-o", str(tmp_path / "bad")],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1] == (
        f"error: {src}:/data/demo_1.attrs[instruction]: must be non-empty UTF-8 text"
    ), bad.stderr
