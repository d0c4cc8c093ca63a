"""The dataset card (README.md) that L3 writes into every dataset: Hub metadata that parses and names the dataset's
parquet files, a body that states the robot, cameras, keys, tasks, sources and the command, the same on every run,
and written before the dataset is renamed into place."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import pytest
import yaml
from l3_fixtures import CAM_H, CAM_W, CAMERAS, make_l2_file

from l3 import card, layout
from l3 import convert as l3_convert
from l3.convert import command_line, convert, main
from l3.errors import UsageError

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "config" / "lift_cube.yaml"
INSTRUCTIONS = {0: "Lift the blue cube.", 1: "Pick up the red cube | lift it *high*."}
"""Demo instructions of the scripted file (the others get the config's task); the second has Markdown characters."""


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def split_card(root: Path) -> tuple[dict, str]:
    """The card's YAML front matter (parsed) and its Markdown body."""
    text = (root / card.CARD_PATH).read_text(encoding="utf-8")
    assert text.startswith("---\n")
    head, sep, body = text[4:].partition("\n---\n")
    assert sep, "no end of the front matter"
    return yaml.safe_load(head), body


def assert_card(root: Path, tasks: list[str], episodes: list[dict], command: str) -> tuple[dict, str]:
    """Assert what every card holds, against the dataset at ``root`` (its info.json and parquet files) and its task
    texts and episode rows (v2.1 ones: the v3.0 card must state the same); returns the front matter and body."""
    front, body = split_card(root)
    info = json.loads((root / layout.INFO_PATH).read_text())
    assert front["license"] and front["task_categories"] == ["robotics"]
    assert {"LeRobot", "gr00t", info["robot_type"]} <= set(front["tags"])
    assert front["configs"] == [{"config_name": "default", "data_files": card.DATA_FILES}]
    # the glob names exactly the dataset's data files: every parquet but the v3.0 episodes table under meta/
    parquet = {p for p in root.rglob("*.parquet") if layout.META not in p.relative_to(root).parts}
    assert parquet and set(root.glob(front["configs"][0]["data_files"])) == parquet

    assert f"`{info['robot_type']}`" in body and f"LeRobot {info['codebase_version']} dataset" in body
    for key, f in info["features"].items():
        if f["dtype"] == "video":
            h, w = f["shape"][:2]
            assert f"| `{key}` | {w}x{h} | {info['fps']} | h264 | {f['info']['video.pix_fmt']} |" in body
    for k, text in enumerate(tasks):
        escaped = card.MARKDOWN_SPECIAL.sub(r"\\\1", text)
        assert f"| {k} | {escaped} |" in body
    for source in dict.fromkeys(e["source"] for e in episodes):
        mine = [e for e in episodes if e["source"] == source]
        ok, frames = sum(e["success"] for e in mine), sum(e["length"] for e in mine)
        assert f"| {source} | {len(mine)} | {ok} | {frames} |" in body
    assert f"| **total** | {len(episodes)} |" in body
    assert body.endswith(f"{card.COMMANDS_HEADING}\n\n```\n{command}\n```\n")
    return front, body


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> tuple[Path, list[str]]:
    """A v2.1 dataset made through the command line from inside its folder, by relative paths: scripted (demo_2
    failed, kept; two demos with instructions), rl, legacy teleop; both cameras; another license."""
    d = tmp_path_factory.mktemp("card")
    src = make_l2_file(d / "in" / "scripted_lift_cube.hdf5", 4, seed=1, failed=(2,), camera=True)
    with h5py.File(src, "a") as f:
        for k, text in INSTRUCTIONS.items():
            f[f"data/demo_{k}"].attrs["instruction"] = text
    make_l2_file(d / "in" / "rl_lift_cube.hdf5", 2, seed=2, camera=True)
    make_l2_file(d / "in" / "teleop_lift_cube.hdf5", 1, seed=3, camera=True, legacy=True)
    argv = ["in", "--config", str(CONFIG), "--include-failed", "--license", "cc-by-4.0", "-o", "out/ds", "-q"]
    cwd = os.getcwd()
    os.chdir(d)
    try:
        assert main(argv) == 0
    finally:
        os.chdir(cwd)
    return d / "out" / "ds", argv


def test_v21_card_states_the_dataset_and_the_command(converted):
    root, argv = converted
    tasks = [t["task"] for t in _jsonl(root / layout.TASKS_PATH)]
    episodes = _jsonl(root / layout.EPISODES_PATH)
    front, body = assert_card(root, tasks, episodes, f"python l3/convert.py {' '.join(argv)}")
    assert front["license"] == "cc-by-4.0" and front["tags"] == ["LeRobot", "gr00t", "franka_panda"]
    assert "\n## Robot\n\n`franka_panda`\n" in body and "7 episodes" in body
    for cam in CAMERAS:
        # the fixture's frames (sharp colored edges) are what yuv420p caps: pix_fmt auto takes yuv444p
        assert f"| `observation.images.{cam}` | {CAM_W}x{CAM_H} | 50 | h264 | yuv444p |" in body
    for key in ("state.joint_pos", "state.object_position", "action.ee_pose", "action.gripper"):
        assert f"| `{key}` |" in body
    assert "| `action.ee_pose` | `action[0:7]` | x, y, z, qx, qy, qz, qw | absolute |" in body
    # each instruction once, Markdown's characters escaped; the validity labels counted by success
    assert "| 0 | Pick up the cube and lift it. | 5 |" in body  # rl's episodes come first: its files sort first
    assert "| 1 | Lift the blue cube. | 1 |" in body
    assert r"| 2 | Pick up the red cube \| lift it \*high\*. | 1 |" in body
    assert "| 3 | valid | 6 |" in body and "| 4 | invalid | 1 |" in body
    # per source, in the order of the episodes (the folder's files sorted by name)
    rows = [line.split(" | ")[:3] for line in body.splitlines() if line.startswith("| ") and " | " in line]
    assert [r for r in rows if r[0] in ("| rl", "| scripted", "| teleop", "| **total**")] == [
        ["| rl", "2", "2"],
        ["| scripted", "4", "3"],
        ["| teleop", "1", "1"],
        ["| **total**", "7", "6"],
    ]
    assert str(root.parent.parent) not in body  # the paths as typed, nothing of where the run happened


def test_card_is_in_place_before_the_rename_and_a_failed_card_leaves_nothing(tmp_path, monkeypatch):
    src = make_l2_file(tmp_path / "in" / "rl_lift_cube.hdf5", 2, seed=4)
    cfg = tmp_path / "state.yaml"
    doc = yaml.safe_load(CONFIG.read_text())
    doc["cameras"] = {}
    cfg.write_text(yaml.safe_dump(doc))
    seen = []  # (the temporary folder, whether it held the card) when it was published
    publish = l3_convert.replace_output
    monkeypatch.setattr(
        l3_convert,
        "replace_output",
        lambda tmp, *a: (seen.append((tmp, (tmp / card.CARD_PATH).is_file())), publish(tmp, *a))[1],
    )
    convert([str(src)], tmp_path / "ds", config=cfg, log=lambda m: None)
    assert len(seen) == 1 and seen[0][1] and not seen[0][0].exists()
    front, body = split_card(tmp_path / "ds")
    assert front["license"] == card.DEFAULT_LICENSE and "## Cameras\n\nNone: state and action only." in body
    # the command of a call from Python: its arguments as a command line
    assert body.endswith(f"```\npython l3/convert.py {src} --output {tmp_path / 'ds'} --config {cfg}\n```\n")

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(card, "render", broken)
    with pytest.raises(OSError, match="No space left"):
        convert([str(src)], tmp_path / "ds", config=cfg, overwrite=True, log=lambda m: None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "in", "state.yaml"]  # no temporary folder left
    assert (tmp_path / "ds" / card.CARD_PATH).is_file()  # the old dataset, whole


def test_command_line_of_a_python_call_and_the_license_refused():
    options = {"config": "my map.yaml", "success_only": False, "sources": ["rl", "teleop"], "workers": 2}
    options |= {"source_overrides": ["teleop=runs/quest_*"], "min_score": 0.5, "codebase_version": "v3.0"}
    got = command_line(["a.hdf5", "runs/"], "out", {**options, "license": "mit", "engine": "local", "overwrite": False})
    assert got == (
        "python l3/convert.py a.hdf5 runs/ --output out --config 'my map.yaml' --sources rl,teleop --min-score 0.5 "
        "--workers 2 --codebase-version v3.0 --license mit --source 'teleop=runs/quest_*' --include-failed"
    )
    with pytest.raises(UsageError, match="'Apache 2' is not a Hugging Face license identifier"):
        convert(["missing.hdf5"], "never", license="Apache 2")
    r = subprocess.run(
        [sys.executable, "l3/convert.py", "config/lift_cube.yaml", "-o", "never", "--license", "MIT"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and r.stderr.strip() == (
        "python l3/convert.py: error: argument --license: 'MIT' is not a Hugging Face license identifier "
        "(lowercase, e.g. apache-2.0, mit, cc-by-4.0, other) (see --help)"
    )


def test_render_escapes_text_and_fences_commands():
    info = {
        "codebase_version": "v2.1",
        "robot_type": None,
        "fps": 30,
        "total_episodes": 1,
        "total_frames": 3,
        "features": {"observation.state": {"names": ["a"]}, "action": {"names": ["b"]}},
    }
    modality = {"state": {"a": {"start": 0, "end": 1}}, "action": {"b": {"start": 0, "end": 1, "absolute": False}}}
    episodes = [{"tasks": ["say <b>hi</b>\nthen `go`"], "length": 3, "source": "x"}]
    text = card.render(info, modality, ["say <b>hi</b>\nthen `go`"], episodes, ["run ```this```"], "other")
    front = yaml.safe_load(text.split("---\n")[1])
    assert front["tags"] == ["LeRobot", "gr00t"] and front["license"] == "other"
    assert r"| 0 | say \<b\>hi\</b\> then \`go\` | 1 |" in text
    assert "Not recorded (`robot_type` is null)" in text and "| `action.b` | `action[0:1]` | b | relative |" in text
    assert "| x | 1 | not recorded | 3 |" in text  # no success field
    assert text.endswith("\n````\nrun ```this```\n````\n")
