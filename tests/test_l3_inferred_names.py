"""Conversion with no hand-written mapping: what a recording says about its env (robot, control rate, cameras, column
names, relative datasets: ``l2.format.metadata``) and the mapping L3 infers from it, written into the dataset
(``meta/l3_mapping.yaml``) to edit and pass back with ``--config``.

The recorder's side on the real simulator (marker ``sim``): a small SO-101 recording, and the shared Franka one with
cameras; the rest on files written with h5py, with and without the metadata.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import pytest
from l3_fixtures import CAMERAS, ENV_NAME, make_l2_file, make_so101_file

from l2.format import metadata, schema
from l2.format.validate import validate_file
from l2.tools.merge import merge
from l3 import layout
from l3.card import differing_files
from l3.convert import convert, main
from l3.validate import validate

REPO = Path(__file__).resolve().parents[1]
SO101_TASK = "L2-Lift-Cube-SO101-JointPos-Scripted"
SO101_JOINTS = ["shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper"]
PANDA_JOINTS = [f"panda_joint{i}" for i in range(1, 8)] + ["panda_finger_joint1", "panda_finger_joint2"]
FRANKA_META = {
    "robot": "franka_panda",
    "control_hz": 50.0,
    "cameras": {CAMERAS[1]: [48, 64, 3], CAMERAS[0]: [48, 64, 3]},
    "columns": {
        "actions": list(schema.LIFT_ACTION_NAMES),
        "obs/joint_pos": PANDA_JOINTS,
        "obs/joint_vel": PANDA_JOINTS,
    },
    "relative": ["obs/joint_vel"],
}


def _env_args(path: Path) -> dict:
    with h5py.File(path, "r") as f:
        return json.loads(f[schema.DATA_GROUP].attrs[schema.ATTR_ENV_ARGS])


def _set_env_args(path: Path, drop: tuple[str, ...] = (), **extra) -> Path:
    """Add ``extra`` to a file's env_args and remove the keys ``drop``."""
    with h5py.File(path, "r+") as f:
        data = f[schema.DATA_GROUP]
        args = {k: v for k, v in json.loads(data.attrs[schema.ATTR_ENV_ARGS]).items() if k not in drop}
        data.attrs[schema.ATTR_ENV_ARGS] = json.dumps({**args, **extra})
    return path


def _info(root: Path) -> dict:
    return json.loads((root / layout.INFO_PATH).read_text())


def _reconverts_alike(inputs: list[str], ds: Path, tmp: Path) -> None:
    """The mapping written into ``ds`` loads with --config and converts ``inputs`` to the same dataset (but for the
    mapping file itself and the card's command line)."""
    again = tmp / f"{ds.name}_again"
    assert main([*inputs, "--config", str(ds / layout.MAPPING_PATH), "-o", str(again), "-q"]) == 0
    assert not (again / layout.MAPPING_PATH).exists()  # a conversion with a config writes none
    assert differing_files(ds, again) == [layout.MAPPING_PATH]


# --------------------------------------------------------------------------- the metadata, without the simulator


def test_metadata_is_read_checked_and_merged_key_by_key():
    args = {"env_name": "x", "type": 2, **FRANKA_META}
    assert metadata.problems(args) == []
    meta = metadata.read(args)
    assert meta.robot == "franka_panda" and meta.control_hz == 50.0 and meta.relative == {"obs/joint_vel"}
    assert meta.columns["obs/joint_pos"] == tuple(PANDA_JOINTS) and meta.cameras[CAMERAS[0]] == (48, 64, 3)
    assert metadata.read({"env_name": "x"}) == metadata.Metadata()  # Isaac Lab's own files: nothing

    bad = {"robot": "", "control_hz": -1, "cameras": {"c": [4, 4]}, "columns": {"actions": "x"}, "relative": "a"}
    assert len(metadata.problems(bad)) == 5 and metadata.read(bad) == metadata.Metadata()

    shapes = {"actions": (5, 8), "obs/joint_pos": (5, 9), "obs/joint_vel": (5, 7), f"obs/{CAMERAS[0]}": (5, 48, 64, 3)}
    fit = dict(metadata.fit_problems(meta, shapes))
    assert set(fit) == {"obs/joint_vel", f"obs/{CAMERAS[1]}"} and "9 names for obs/joint_vel" in fit["obs/joint_vel"]

    other = {**FRANKA_META, "robot": "panda", "columns": {"actions": ["a"] * 8, "obs/joint_pos": PANDA_JOINTS}}
    kept = metadata.agreed([FRANKA_META, {}, other])  # a file without a key does not count against it
    assert "robot" not in kept and kept["control_hz"] == 50.0 and kept["relative"] == ["obs/joint_vel"]
    assert kept["columns"] == {"obs/joint_pos": PANDA_JOINTS, "obs/joint_vel": PANDA_JOINTS}


def test_the_validator_checks_the_metadata_against_every_demo(tmp_path):
    path = _set_env_args(make_l2_file(tmp_path / "scripted_lift_cube.hdf5", 2, camera=True), **FRANKA_META)
    assert validate_file(path).violations == []
    columns = {**FRANKA_META["columns"], "obs/joint_vel": PANDA_JOINTS[:5]}
    _set_env_args(path, robot=7, columns=columns)
    messages = [f"{v.path}: {v.message}" for v in validate_file(path).violations]
    assert messages[0] == '/data: env_args "robot" must be a non-empty name, got 7'
    assert [m for m in messages[1:] if "/obs/joint_vel" in m and "5 names" in m] and len(messages) == 3  # both demos


def test_the_recorder_writes_only_names_its_first_demo_bears_out(tmp_path, capsys):
    pytest.importorskip("isaaclab")
    import torch
    from isaaclab.utils.datasets import EpisodeData

    from l2.recording.handler import L2DatasetFileHandler

    columns = {"actions": list(schema.LIFT_ACTION_NAMES), "obs/joint_pos": PANDA_JOINTS, "obs/joint_vel": ["a"]}
    handler = L2DatasetFileHandler(env_args={"robot": "franka_panda", "columns": columns})
    path = tmp_path / "demos.hdf5"
    handler.create(str(path), env_name=ENV_NAME)
    episode = EpisodeData()
    for t in range(3):
        episode.add("actions", torch.tensor([0.5, 0.0, 0.2, 1.0, 0.0, 0.0, 0.0, 1.0]))
        episode.add("obs/joint_pos", torch.full((9,), float(t)))
    episode.success = True
    episode.pre_export()
    handler.add_env_args({"sim_args": {"dt": 0.005, "decimation": 4}})  # as the RecorderManager does before export
    handler.write_episode(episode)
    handler.close()
    args = _env_args(path)
    assert args["robot"] == "franka_panda" and set(args["columns"]) == {"actions", "obs/joint_pos"}
    assert "not recorded: " in capsys.readouterr().err and validate_file(path).ok


def test_merge_keeps_what_the_files_say_alike(tmp_path):
    a = _set_env_args(make_l2_file(tmp_path / "scripted_a.hdf5", 2, seed=1, camera=True), **FRANKA_META)
    b = make_l2_file(tmp_path / "scripted_b.hdf5", 2, seed=2, camera=True)  # an older file: no metadata
    c = _set_env_args(make_l2_file(tmp_path / "scripted_c.hdf5", 1, seed=3, camera=True), robot="panda")
    merge([a, b, c], tmp_path / "merged.hdf5")
    args = _env_args(tmp_path / "merged.hdf5")
    assert "robot" not in args and args["columns"] == FRANKA_META["columns"] and args["env_name"] == ENV_NAME
    assert validate_file(tmp_path / "merged.hdf5").ok


# --------------------------------------------------------------------------- L3's inference, without the simulator


def test_recorded_names_robot_cameras_and_relative_terms_make_the_mapping(tmp_path, capsys):
    path = _set_env_args(make_l2_file(tmp_path / "scripted_lift_cube.hdf5", 2, camera=True), **FRANKA_META)
    assert main([str(path), "--print-config"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"# L3 mapping inferred from {path} (l2 format)")
    assert "# columns unnamed: " in text and "no names for state.object_position, state.target_object_position" in text

    ds = tmp_path / "ds"
    summary = convert([str(path)], ds, log=lambda m: None)
    info, modality = _info(ds), json.loads((ds / layout.MODALITY_PATH).read_text())
    state = info["features"]["observation.state"]["names"]
    assert info["robot_type"] == "franka_panda" and info["fps"] == 50
    assert state[:9] == [f"joint_pos.{j}" for j in PANDA_JOINTS]
    assert state[9:18] == [f"joint_vel.{j}" for j in PANDA_JOINTS]
    assert info["features"]["action"]["names"] == list(schema.LIFT_ACTION_NAMES)
    assert list(modality["action"]) == ["ee_pose", "gripper"] and not modality["state"]["joint_vel"]["absolute"]
    assert list(modality["video"]) == [CAMERAS[1], CAMERAS[0]]  # the recording's order
    assert summary.mapping == layout.MAPPING_PATH and "state.object_position" in summary.unnamed
    assert "mapping (inferred)" in summary.table() and validate(ds) == []
    _reconverts_alike([str(path)], ds, tmp_path)


def test_actions_named_by_joint_make_one_key_of_any_width(tmp_path):
    """Six joint targets named by joint (the SO-101's): one action key named so; an 8-wide joint action is not read
    as the lift-cube pose either."""
    path = _set_env_args(make_so101_file(tmp_path / "scripted_so101.hdf5", camera=False), robot="so101",
                         columns={"actions": SO101_JOINTS, "obs/joint_pos": SO101_JOINTS})  # fmt: skip
    ds = tmp_path / "ds"
    summary = convert([str(path)], ds, log=lambda m: None)
    info = _info(ds)
    assert info["robot_type"] == "so101" and info["fps"] == 30
    assert info["features"]["action"]["names"] == SO101_JOINTS
    assert info["features"]["observation.state"]["names"][:6] == SO101_JOINTS  # joint_vel names none: no clash
    assert "state.joint_vel, state.object_position" in summary.unnamed

    eight = [f"j{i}" for i in range(8)]
    franka = _set_env_args(make_l2_file(tmp_path / "rl_lift_cube.hdf5", 1), columns={"actions": eight})
    convert([str(franka)], tmp_path / "ds8", log=lambda m: None)
    assert json.loads((tmp_path / "ds8" / layout.MODALITY_PATH).read_text())["action"] == {
        "actions": {"start": 0, "end": 8, "absolute": True}
    }


def test_a_file_without_names_keeps_todays_mapping_and_says_so(tmp_path, capsys):
    path = make_l2_file(tmp_path / "teleop_lift_cube.hdf5", 2, camera=True)
    assert main([str(path), "--print-config"]) == 0
    text = capsys.readouterr().out
    assert f"# columns unnamed: {path} records no column names (state.joint_pos, state.joint_vel, " in text
    assert "robot_type: franka_panda" in text and f"task: {ENV_NAME}" in text
    assert "names: [joint_pos_0, joint_pos_1," in text and "names: [x, y, z, qx, qy, qz, qw]" in text

    ds = tmp_path / "ds"
    assert main([str(path), "-o", str(ds)]) == 0
    err = capsys.readouterr().err
    assert f"mapping (inferred) {ds / layout.MAPPING_PATH}" in err and "records no column names" in err
    assert (ds / layout.MAPPING_PATH).read_text() == text  # what --print-config prints
    assert _info(ds)["features"]["observation.state"]["names"][:2] == ["joint_pos_0", "joint_pos_1"]
    assert validate(ds) == []
    _reconverts_alike([str(path)], ds, tmp_path)


# --------------------------------------------------------------------------- the recorder, on the real simulator


@pytest.fixture(scope="module")
def so101_recorded(tmp_path_factory) -> Path:
    """Two scripted SO-101 demos from two envs, no cameras."""
    out = tmp_path_factory.mktemp("so101_meta") / "scripted_lift_cube_so101.hdf5"
    proc = subprocess.run(
        [sys.executable, "l2/scripted/run.py", "--task", SO101_TASK, "--num_envs", "2", "--num_demos", "2",
         "--workers", "1", "--output", str(out), "presets=no_cameras"],
        capture_output=True, text=True, timeout=900, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


@pytest.mark.sim
def test_an_so101_recording_names_its_robot_rate_and_joint_columns(so101_recorded):
    args = _env_args(so101_recorded)
    assert args["env_name"] == SO101_TASK and args["action_space"] == schema.JOINT_POSITION_ACTIONS
    assert {k: args[k] for k in schema.METADATA_KEYS if k in args} == {
        "robot": "so101",
        "control_hz": 30.0,
        "columns": {"actions": SO101_JOINTS, "obs/joint_pos": SO101_JOINTS, "obs/joint_vel": SO101_JOINTS},
    }
    assert validate_file(so101_recorded).violations == []
    from isaaclab.utils.datasets import HDF5DatasetFileHandler  # Isaac Lab's own handler still reads the file

    handler = HDF5DatasetFileHandler()
    handler.open(str(so101_recorded))
    try:
        assert handler.get_env_name() == SO101_TASK and handler.get_num_episodes() == 2
        assert handler.load_episode("demo_0", "cpu").data["actions"].shape[1] == 6
    finally:
        handler.close()


@pytest.mark.sim
def test_an_so101_recording_converts_with_no_mapping_written_by_hand(so101_recorded, tmp_path):
    ds = tmp_path / "ds"
    assert main([str(so101_recorded), "-o", str(ds), "-q"]) == 0
    info = _info(ds)
    assert info["robot_type"] == "so101" and info["fps"] == 30
    assert info["features"]["action"]["names"] == SO101_JOINTS
    state = info["features"]["observation.state"]["names"]
    assert [f"joint_pos.{j}" for j in SO101_JOINTS] == state[state.index("joint_pos.shoulder_pan") :][:6]
    tasks = [json.loads(line)["task"] for line in (ds / layout.TASKS_PATH).read_text().splitlines()]
    assert "Pick up the cube and lift it." in tasks
    proc = subprocess.run([sys.executable, "-m", "l3.validate", str(ds)], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _reconverts_alike([str(so101_recorded)], ds, tmp_path)

    stripped = tmp_path / "scripted_stripped.hdf5"  # the same demos as Isaac Lab's own recorder writes them
    _set_env_args(shutil.copyfile(so101_recorded, stripped), drop=schema.METADATA_KEYS)
    summary = convert([str(stripped)], tmp_path / "ds_stripped", log=lambda m: None)
    info = _info(tmp_path / "ds_stripped")
    assert info["robot_type"] == "unknown" and info["features"]["action"]["names"][0] == "actions_0"
    assert summary.unnamed.startswith(f"columns unnamed: {stripped} records no column names")


@pytest.mark.sim
def test_the_franka_recording_names_its_cameras_and_its_pose_action(scripted_run, capsys):
    path = scripted_run[0]
    args = _env_args(path)
    assert args["robot"] == "franka_panda" and args["control_hz"] == 50.0
    assert args["cameras"] == {CAMERAS[0]: [224, 224, 3], CAMERAS[1]: [224, 224, 3]}
    assert args["columns"]["actions"] == list(schema.LIFT_ACTION_NAMES)
    assert args["columns"]["obs/joint_pos"] == PANDA_JOINTS and "relative" not in args
    assert main([str(path), "--print-config"]) == 0
    text = capsys.readouterr().out
    assert "robot_type: franka_panda" in text and f"{CAMERAS[0]}: obs/{CAMERAS[0]}" in text
    assert "ee_pose:" in text and "joint_pos.panda_joint1" in text and "task: Pick up the cube and lift it." in text
