"""Inspection reports (python -m l2.tools.inspect_demos / l3.inspect_dataset), opened in headless Chromium.

The reports are made by the real CLIs from small L2 files with cameras and from an L3 dataset that the
real converter wrote from them; Chromium (installed by scripts/setup.sh) must load every embedded image,
and a screenshot of each page must not be blank.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from browser import images_loaded, screenshot
from conftest import refused_in_one_line
from l3_fixtures import CAMERAS, make_l2_file
from PIL import Image

from l2.tools.report import ValueSample
from l3 import layout
from l3.convert import convert

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "config" / "lift_cube.yaml"


def run(module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, cwd=REPO, timeout=300)


def blank(png: Path) -> bool:
    """Whether a screenshot is (nearly) one colour: too few non-white pixels or hardly any variation."""
    a = np.asarray(Image.open(png).convert("RGB"), dtype=np.float32)
    ink = (a.min(axis=2) < 235).mean()  # share of pixels that are not white-ish
    colourful = (a.max(axis=2) - a.min(axis=2) > 60).mean()  # plot lines, bars, camera frames
    return a.std() < 10 or ink < 0.03 or colourful < 0.002


@pytest.fixture(scope="module")
def l2_files(tmp_path_factory) -> list[Path]:
    d = tmp_path_factory.mktemp("inspect_l2")
    return [
        make_l2_file(d / "scripted_lift_cube.hdf5", 5, seed=1, failed=(3,), camera=True),
        make_l2_file(d / "rl_lift_cube.hdf5", 3, seed=2, length=20, camera=True),
    ]


@pytest.fixture(scope="module")
def l3_dataset(l2_files, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("inspect_l3") / "ds"
    convert([str(f) for f in l2_files], out, config=CONFIG, success_only=False, log=lambda m: None)
    return out


def check_in_browser(page: Path, images: int) -> None:
    """Chromium decodes all ``images`` images of the page, and its screenshot is not blank."""
    assert images_loaded(page) == (images, images)
    png = screenshot(page, page.with_suffix(".png"), (1000, 1400))
    assert not blank(png), f"blank screenshot: {png}"


def test_l2_report_opens_in_chromium(l2_files, tmp_path):
    out = tmp_path / "l2.html"
    r = run("l2.tools.inspect_demos", *map(str, l2_files), "--output", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"{out}: 8 episodes (") and "2 frame strips" in r.stdout
    text = out.read_text()
    assert "src='http" not in text and "<link" not in text  # self-contained
    # counts, state and action trajectories, action histograms, top-down, one strip per file
    assert text.count("<img ") == 7
    assert "<td>scripted</td><td class='n'>5</td><td class='n'>4</td><td class='n'>1</td>" in text
    strip_titles = re.findall(r"<h3>([^<]*)</h3>", text)
    assert [html.unescape(t).split(":")[0] for t in strip_titles] == [
        "scripted_lift_cube.hdf5 demo_0 (12 frames)",
        "rl_lift_cube.hdf5 demo_0 (20 frames)",
    ]
    assert all(", ".join(CAMERAS) in t for t in strip_titles)
    check_in_browser(out, 7)


def test_l2_traces_are_named_from_the_schema(l2_files):
    from l2.tools.inspect_demos import build

    b = build([str(f) for f in l2_files], traced=3, progress=False)
    assert [e.label for e in b.trajectories] == [
        "scripted_lift_cube.hdf5 demo_0",
        "scripted_lift_cube.hdf5 demo_4",
        "rl_lift_cube.hdf5 demo_0",
    ]
    assert list(b.trajectories[0].action) == ["x", "y", "z", "qx", "qy", "qz", "qw", "gripper"]
    assert "obs/actions" not in b.trajectories[0].state and "actions[0]" not in b.trajectories[0].state
    assert {"joint_pos[8]", "object_position[0]", "target_object_position[6]"} <= set(b.trajectories[0].state)
    assert len(b.cubes) == 8 and len(b.paths) == 8
    assert sum(s.seen for s in b.samples.values()) == 8 * (5 * 12 + 10 + 3 * 20 + 3)  # every action value


def test_l3_report_opens_in_chromium(l3_dataset, tmp_path):
    out = tmp_path / "l3.html"
    r = run("l3.inspect_dataset", str(l3_dataset), "--output", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"{out}: 8 episodes (") and "2 frame strips" in r.stdout
    text = out.read_text()
    assert text.count("<img ") == 7
    for section in ("Per-source breakdown", "modality.json", "stats.json", "tasks.jsonl"):
        assert f"<h2>{section}" in text
    assert "<td>rl</td><td class='n'>3</td><td class='n'>3</td><td class='n'>0</td>" in text
    assert "<td>scripted</td><td class='n'>5</td><td class='n'>4</td><td class='n'>1</td>" in text
    assert "<td>object_position</td><td class='n'>9</td><td class='n'>12</td><td>object_x, object_y, object_z" in text
    assert "<td>observation.state</td><td>panda_joint1</td>" in text  # stats.json rows named per dimension
    assert "<th>l3.validate --fast</th><td>ok</td>" in text
    # the fixture's frames are what yuv420p caps, so its videos are yuv444p, which browsers do not play: the report
    # shows frame strips (PNG) decoded with PyAV, never the videos themselves
    info = json.loads((l3_dataset / layout.INFO_PATH).read_text())
    assert {f["info"]["video.pix_fmt"] for f in info["features"].values() if f["dtype"] == "video"} == {"yuv444p"}
    assert "<video" not in text
    check_in_browser(out, 7)


def test_l3_report_without_isaaclab(l3_dataset, tmp_path):
    """l3.inspect_dataset imports nothing of Isaac Lab (L3 runs without the [sim] extra)."""
    out = tmp_path / "r.html"
    code = (
        "import sys; from l3.inspect_dataset import main; rc = main([sys.argv[1], '-o', sys.argv[2], '--quiet']); "
        "bad = [m for m in sys.modules if m.startswith(('isaaclab', 'isaacsim', 'torch', 'warp'))]; "
        "assert not bad, bad; sys.exit(rc)"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, str(l3_dataset), str(out)], capture_output=True, text=True, cwd=REPO, timeout=300
    )
    assert r.returncode == 0, r.stderr


def test_bad_inputs_one_line_exit_2_no_output(l2_files, l3_dataset, tmp_path):
    out = tmp_path / "r.html"
    not_l2 = tmp_path / "x.hdf5"
    import h5py

    with h5py.File(not_l2, "w") as f:
        f.create_group("episodes")
    for module, arg, want in (
        ("l2.tools.inspect_demos", str(not_l2), f"{not_l2}:/data: missing"),
        ("l2.tools.inspect_demos", str(tmp_path / "nope.hdf5"), "no such file"),
        ("l3.inspect_dataset", str(l2_files[0].parent), "meta/info.json: missing"),
    ):
        refused_in_one_line(run(module, arg, "--output", str(out)), want)
        assert not out.exists()
    import shutil

    from l3 import layout

    broken = tmp_path / "broken"
    shutil.copytree(l3_dataset, broken)
    (broken / layout.data_path(5)).write_bytes(b"PAR1 not a parquet")
    video = broken / layout.video_path(0, layout.video_key(CAMERAS[1]))
    video.unlink()
    for want in (f"{broken / layout.data_path(5)}: cannot read", f"{video}: missing"):
        refused_in_one_line(
            run("l3.inspect_dataset", str(broken), "--output", str(out), "--no-validate", "--quiet"), want
        )
        assert not out.exists()
        shutil.copy(l3_dataset / layout.data_path(5), broken / layout.data_path(5))  # then only the MP4 is bad
    out.write_text("mine")
    refused_in_one_line(run("l3.inspect_dataset", str(l3_dataset), "--output", str(out)), str(out), "exists")
    assert out.read_text() == "mine"
    assert run("l3.inspect_dataset", str(l3_dataset), "--output", str(out), "--overwrite", "--quiet").returncode == 0
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_browser_checks_can_fail(tmp_path):
    """The image probe counts an image that does not decode, and a white page is blank."""
    page = tmp_path / "p.html"
    page.write_text(
        "<!DOCTYPE html><html><body><p>x</p><img src='data:image/png;base64,AAAA'>"
        "<img src='data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7'>"
        "</body></html>"
    )
    assert images_loaded(page) == (2, 1)
    assert blank(screenshot(page, tmp_path / "p.png", (400, 300)))


def test_value_sample_is_bounded_and_uniform():
    s = ValueSample(1000, np.random.default_rng(0))
    for k in range(100):
        s.add(np.arange(k * 500, (k + 1) * 500, dtype=np.float32))
    assert s.seen == 50_000 and len(s.values) == 1000 and len(np.unique(s.values)) == 1000
    counts = np.histogram(s.values, bins=10, range=(0, 50_000))[0]
    assert counts.min() > 60 and counts.max() < 140  # ~100 per tenth of the stream, early or late


def test_frame_strip_tiles_the_recorded_frames(l2_files):
    """l2.tools.frame_strip (which l2.tools.inspect_demos embeds): evenly spaced frames, first and last, one row per
    camera."""
    import h5py

    from l2.tools.frame_strip import GAP, frame_strip

    strip = frame_strip(l2_files[1], demo=2, frames=3)
    with h5py.File(l2_files[1]) as f:
        table, wrist = f["data/demo_2/obs/table_cam"][()], f["data/demo_2/obs/wrist_cam"][()]
    T, h, w, _ = table.shape
    assert strip.shape == (2 * h + GAP, 3 * w + 2 * GAP, 3)
    assert np.array_equal(strip[:h, :w], table[0]) and np.array_equal(strip[:h, -w:], table[T - 1])
    assert np.array_equal(strip[h + GAP :, w + GAP : 2 * w + GAP], wrist[round((T - 1) / 2)])
    assert (strip[h : h + GAP] == 255).all()


def test_first_frames_grid_shows_each_demos_start(l2_files):
    """``--first-frames N``: the first table-camera frame of the first N demos, four to a row."""
    import h5py

    from l2.tools.frame_strip import GAP, first_frames, main

    with h5py.File(l2_files[1]) as f:
        starts = [f[f"data/demo_{k}/obs/table_cam"][0] for k in range(len(f["data"]))]
    n = min(5, len(starts))
    grid = first_frames(l2_files[1], n)
    h, w, _ = starts[0].shape
    rows = -(-n // 4)
    assert grid.shape == (rows * h + (rows - 1) * GAP, min(n, 4) * w + (min(n, 4) - 1) * GAP, 3)
    assert np.array_equal(grid[:h, :w], starts[0])
    if n > 4:
        assert np.array_equal(grid[h + GAP :, :w], starts[4])
    assert main([str(l2_files[1]), "--first-frames", "9", "--cameras", "no_such_cam", "-o", "x.png"]) == 2
