"""Malformed inputs stop the converter with one line naming the file and HDF5 path (exit 2)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from l3_fixtures import CAMERA, CAMERAS, make_l2_file

from l3.convert import main

CONFIG = Path(__file__).resolve().parent.parent / "config" / "lift_cube.yaml"
CONVERT = CONFIG.parents[1] / "l3" / "convert.py"


def _truncated(p: Path) -> None:
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])


def _corrupt(p: Path) -> None:
    p.write_bytes(b"this is not an HDF5 file" * 100)


def _edit(fn):
    def apply(p: Path) -> None:
        with h5py.File(p, "a") as f:
            fn(f)

    return apply


def _short_obs(f: h5py.File) -> None:
    g = f["data/demo_1/obs"]
    a = g["joint_vel"][()]
    del g["joint_vel"]
    g["joint_vel"] = a[:-1]


def _nan(f: h5py.File) -> None:
    f["data/demo_1/obs/joint_pos"][4, 2] = np.nan


def _float_camera(f: h5py.File) -> None:
    g = f["data/demo_0/obs"]
    a = g[CAMERAS[0]][()]
    del g[CAMERAS[0]]
    g[CAMERAS[0]] = a.astype(np.float32)


def _episodes_layout(f: h5py.File) -> None:
    f.move("data", "episodes")


def _no_demos(f: h5py.File) -> None:
    for k in list(f["data"]):
        del f["data"][k]


CASES = {
    "truncated": (_truncated, "/", "truncated or corrupt"),
    "corrupt": (_corrupt, "/", "truncated or corrupt"),
    "empty": (lambda p: p.write_bytes(b""), "/", "empty file"),
    "no_demos": (_edit(_no_demos), "/data", "no demo_<i> episodes"),
    "missing_num_samples": (
        _edit(lambda f: f["data/demo_1"].attrs.__delitem__("num_samples")),
        "/data/demo_1",
        "missing attribute num_samples",
    ),
    "obs_length": (_edit(_short_obs), "/data/demo_1/obs/joint_vel", "12 rows but num_samples is 13 (actions has 13)"),
    "nan": (_edit(_nan), "/data/demo_1/obs/joint_pos", "NaN at row 4, column 2"),
    "missing_term": (
        _edit(lambda f: f["data/demo_0/obs"].__delitem__("object_position")),
        "/data/demo_0/obs/object_position",
        "missing mapped term",
    ),
    "camera_dtype": (_edit(_float_camera), f"/data/demo_0/{CAMERA}", "camera term must be (T, H, W, 3) uint8"),
    "episodes_layout": (_edit(_episodes_layout), "/episodes", "abandoned 'episodes/<i>' layout"),
}


@pytest.fixture(scope="module")
def cfg() -> Path:
    return CONFIG


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_one_line_error(case, cfg, tmp_path, capsys):
    breaker, h5path, message = CASES[case]
    good = make_l2_file(tmp_path / "in" / "scripted_a.hdf5", 2, camera=True)
    bad = make_l2_file(tmp_path / "in" / "teleop_b.hdf5", 3, seed=1, camera=True)
    breaker(bad)
    out = tmp_path / "out" / "ds"
    rc = main([str(good), str(bad), "--config", str(cfg), "-o", str(out), "-q"])
    err = capsys.readouterr().err
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"error: {bad}:{h5path}: "), lines[0]
    assert message in lines[0], lines[0]
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []  # nothing left behind

    # --skip-bad: the rest is converted and the bad file/episode is listed in the summary
    rc = main([str(good), str(bad), "--config", str(cfg), "-o", str(out), "--skip-bad"])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert f"skipped (bad input): {bad}:{h5path}: " in err
    assert sorted(p.name for p in out.parent.iterdir()) == ["ds"]


def test_missing_input_and_bad_config(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:  # refused as the command line is parsed
        main([str(tmp_path / "nope.hdf5"), "-o", str(tmp_path / "o")])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == (
        f"python l3/convert.py: error: argument INPUT: {tmp_path / 'nope.hdf5'}: no such file or folder (see --help)\n"
    )
    good = make_l2_file(tmp_path / "scripted_a.hdf5", 1)
    bad_cfg = tmp_path / "bad.yaml"
    bad_cfg.write_text("state: {joint_pos: {from: obs/joint_pos, slice: [0, 99]}}\naction: {a: actions}\n")
    assert main([str(good), "--config", str(bad_cfg), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"error: {good}:/data/demo_0: does not fit the mapping: state.joint_pos: slice [0, 99] "
        "exceeds the 9 columns of obs/joint_pos"
    ), err
    assert not (tmp_path / "o").exists()


def test_camera_missing_from_config_source(tmp_path, capsys):
    """A config naming a camera the file does not have: missing mapped term at the first episode."""
    good = make_l2_file(tmp_path / "scripted_a.hdf5", 1)  # no camera
    assert main([str(good), "--config", str(CONFIG), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"error: {good}:/data/demo_0/{CAMERA}: missing mapped term"


def test_control_characters_in_names_stay_on_one_line():
    """A corrupt file's names may hold line breaks or other control characters (seen in the fuzz campaign:
    a flipped byte made a camera name ``cam_left_wrH\\x1et``); messages escape them."""
    from l2.format.validate import Violation
    from l3.errors import InputError

    error = str(InputError("a.hdf5", "/data/cam\x1ex", "name 'cam\nx'"))
    assert error == "a.hdf5:/data/cam\\x1ex: name 'cam\\nx'", error
    violation = str(Violation("a.hdf5", "/d\r", "m"))
    assert violation == "a.hdf5:/d\\r: m" and len(violation.splitlines()) == 1, violation


def test_v30_without_lerobot_venv(tmp_path, capsys, monkeypatch):
    """--codebase-version v3.0 without LeRobot's venv: one line saying how to build it, exit 2, before any work;
    an existing output is refused the same way (nothing needed to see that)."""
    monkeypatch.setenv("L2L3_CACHE", str(tmp_path / "empty_cache"))  # where scripts/setup_lerobot.sh looks
    monkeypatch.delenv("L3_LEROBOT_PYTHON", raising=False)
    good = make_l2_file(tmp_path / "in" / "scripted_a.hdf5", 1)
    out = tmp_path / "out" / "ds"
    assert main([str(good), "--codebase-version", "v3.0", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bash" in err and "setup_lerobot.sh v30" in err, err
    assert not out.parent.exists() and not (tmp_path / "empty_cache" / "venvs").exists()  # nothing built or written
    cli = subprocess.run(
        [sys.executable, str(CONVERT), str(good), "--codebase-version", "v3.0", "-o", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(CONVERT.parents[1])},
    )
    assert (cli.returncode, cli.stderr) == (2, err), cli.stderr  # the same from the command line

    monkeypatch.setenv("L3_LEROBOT_PYTHON", "/nonexistent/python")
    out.mkdir(parents=True)
    assert main([str(good), "--codebase-version", "v3.0", "-o", str(out)]) == 2
    assert capsys.readouterr().err == f"error: output {out} already exists (use --overwrite to replace it)\n"
    assert list(out.parent.iterdir()) == [out]
