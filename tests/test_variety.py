"""``presets=variety``: three palette cubes, the target named by a per-episode instruction, the scene drawn anew
each episode; the instruction and the drawn values travel with each demo into replay and the GR00T dataset."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys

import h5py
import numpy as np
import pytest
from conftest import REPO, run_scripted

from l2.format.validate import validate_file
from l2.lift import variety

SMALL_CAMERAS = (
    "env.scene.table_cam.width=96",
    "env.scene.table_cam.height=96",
    "env.scene.wrist_cam.width=64",
    "env.scene.wrist_cam.height=64",
)


def test_layouts_keep_the_cubes_apart_and_in_the_area():
    import torch

    torch.manual_seed(0)
    for _ in range(200):
        xy = np.array(variety._layout())
        assert all(np.linalg.norm(a - b) >= variety.MIN_CUBE_GAP for a, b in itertools.combinations(xy, 2))
        assert ((xy[:, 0] >= 0.40) & (xy[:, 0] <= 0.60) & (np.abs(xy[:, 1]) <= 0.15)).all()


def _lifts_the_named_cube(demo: h5py.Group) -> None:
    """The demo's instruction names its target's color, the target wears that color, and the target (not a
    distractor) was lifted."""
    text, scene = demo.attrs["instruction"], json.loads(demo.attrs["scene"])
    target = scene["target_color"]
    assert f"{target} cube" in text and target not in scene["distractor_colors"]
    assert np.abs(np.subtract(scene["colors"]["object"], variety.PALETTE[target])).max() <= variety.COLOR_JITTER
    cube = demo["obs/object_position"][()]
    others = demo["obs/distractor_positions"][()].reshape(len(cube), 2, 3)
    assert cube[:, 2].max() - cube[0, 2] > 0.05, f"{demo.name}: the {target} cube was not lifted"
    assert np.abs(others[:, :, 2] - others[:1, :, 2]).max() < 0.02, f"{demo.name}: a distractor moved up"


def _collect_valid(out, *command: str) -> None:
    """Run a collector (``python *command``) on the variety scene without cameras into ``out``: it must succeed and
    write a valid file."""
    proc = subprocess.run(
        [sys.executable, *command, "--output", str(out), "presets=variety,no_cameras"],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert validate_file(out).ok


@pytest.fixture(scope="module")
def variety_demos(tmp_path_factory):
    out = tmp_path_factory.mktemp("variety") / "scripted_lift_cube.hdf5"
    # In one process: the replay test below puts each demo back in the env slot it was recorded in, where the
    # frames reproduce exactly (a 2-process collection's demos come from other slots: docs/replay.md).
    proc = run_scripted(
        "--num_envs",
        "3",
        "--num_demos",
        "6",
        "--workers",
        "1",
        "--seed",
        "5",
        "--output",
        str(out),
        "presets=variety",
        *SMALL_CAMERAS,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


@pytest.mark.sim
def test_scripted_demos_lift_the_cube_their_instruction_names(variety_demos):
    report = validate_file(variety_demos)
    assert report.ok and report.episodes == 6, [str(v) for v in report.violations]
    with h5py.File(variety_demos) as f:
        demos = [f["data"][f"demo_{i}"] for i in range(6)]
        instructions = [d.attrs["instruction"] for d in demos]
        first = [d["obs/table_cam"][0] for d in demos]
        for d in demos:
            _lifts_the_named_cube(d)
    assert len(set(instructions)) >= 2
    assert all(not np.array_equal(a, b) for a, b in itertools.combinations(first, 2))


@pytest.mark.sim
def test_variety_demos_replay_to_success_and_to_their_images(variety_demos):
    """Each demo is put back in its own scene (colors, mat, shade, camera pose): the replay lifts the cube again and
    renders frames that match the recorded ones (PSNR >= 40 dB; a scene drawn anew would differ everywhere)."""
    proc = subprocess.run(
        [sys.executable, "-m", "l2.replay", str(variety_demos), "--num_envs", "3", "--images"],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert re.search(r"reproduced\s+6/6 recorded successes", proc.stdout), proc.stdout[-2000:]
    for camera in ("table_cam", "wrist_cam"):
        lowest = re.search(rf"{camera} PSNR\s+lowest frame ([\d.]+) dB", proc.stdout)
        assert lowest and float(lowest.group(1)) >= 40.0, proc.stdout[-2000:]


@pytest.mark.sim
def test_variety_demos_give_the_dataset_one_task_per_instruction(variety_demos, tmp_path):
    from l3 import layout
    from l3.convert import convert

    out = tmp_path / "ds"
    convert([str(variety_demos)], out, config=REPO / "config" / "lift_cube.yaml", log=lambda m: None)
    tasks = [json.loads(line)["task"] for line in (out / layout.TASKS_PATH).read_text().splitlines()]
    episodes = [json.loads(line) for line in (out / layout.EPISODES_PATH).read_text().splitlines()]
    with h5py.File(variety_demos) as f:
        said = [f["data"][f"demo_{i}"].attrs["instruction"] for i in range(6)]
    assert tasks == [*dict.fromkeys(said), "valid"]
    assert [e["tasks"] for e in episodes] == [[s] for s in said]


@pytest.mark.sim
def test_mimic_generates_variety_demos_that_lift_what_they_name(tmp_path):
    """Mimic generates each demo in a scene drawn anew (the target is the scene's object, whatever its color):
    every generated demo names the cube it lifts."""
    src = tmp_path / "scripted_lift_cube.hdf5"
    made = run_scripted("--num_envs", "1", "--num_demos", "1", "--output", str(src), "presets=variety,no_cameras")
    assert made.returncode == 0, made.stderr[-2000:]
    out = tmp_path / "mimic_lift_cube.hdf5"
    _collect_valid(out, "-m", "l2.mimic", "--input", str(src), "--num_demos", "3", "--num_envs", "2")
    with h5py.File(out) as f:
        demos = [f["data"][n] for n in sorted(f["data"])]
        assert len(demos) == 3
        for d in demos:
            _lifts_the_named_cube(d)


@pytest.mark.sim
def test_the_shipped_variety_trace_replays_its_teleop_demo(tmp_path):
    """A device trace records the presets of the session that made it: ``config/teleop/lift_cube_variety_trace.json``
    (made by ``python -m l2.teleop.make_trace ... presets=variety,no_cameras``) replays in its variety scene, the
    operator is shown the instruction, and the demo lifts the cube it names."""
    out = tmp_path / "teleop_lift_cube.hdf5"
    proc = subprocess.run(
        [sys.executable, "l2/teleop/run.py", "--teleop_device", "replay", "--num_demos", "1", "--output", str(out)]
        + ["--trace", "config/teleop/lift_cube_variety_trace.json", "presets=no_cameras"],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "replay: using the trace's presets variety" in proc.stdout
    with h5py.File(out) as f:
        demo = f["data/demo_0"]
        assert f"instruction: {demo.attrs['instruction']}" in proc.stdout
        _lifts_the_named_cube(demo)


@pytest.mark.sim
def test_rl_rollouts_record_the_distractors_like_the_other_sources(variety_demos, tmp_path):
    """The RL policy's input leaves the distractors out; its rollouts still record them (a ``scene`` obs group
    rsl_rl does not read), so an RL variety demo holds the scripted one's obs terms; the shipped variety policy
    lifts the cube each demo names."""
    out = tmp_path / "rl_lift_cube.hdf5"
    policy = REPO / "l2" / "lift" / "config" / "franka" / "policies" / "rl_variety" / "model.pt"  # the variety scene's
    _collect_valid(out, "l2/rl/rollout.py", "--checkpoint", str(policy), "--num_envs", "2", "--num_demos", "2")
    with h5py.File(out) as rl, h5py.File(variety_demos) as scripted:
        state = {k for k in scripted["data/demo_0/obs"] if k not in ("table_cam", "wrist_cam")}
        for name in ("demo_0", "demo_1"):
            demo = rl["data"][name]
            assert set(demo["obs"]) == state
            _lifts_the_named_cube(demo)
