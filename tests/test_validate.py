"""Tests of l2.format.validate on tiny HDF5 files written with h5py (no simulator)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import h5py
import numpy as np
import pytest

from l2.format import validate
from l2.format.validate import FileReport, Violation, main, validate_episode, validate_file

ENV_NAME = "L2-Lift-Cube-Franka-IK-Abs"
REPO_ROOT = Path(__file__).resolve().parents[1]


def lift_actions(rng: np.random.Generator, steps: int) -> np.ndarray:
    """(T, 8) IK-abs actions: xyz, unit quaternion xyzw, gripper +-1."""
    quat = rng.normal(size=(steps, 4))
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)
    gripper = np.where(rng.random((steps, 1)) < 0.5, -1.0, 1.0)
    return np.hstack([rng.uniform(-0.5, 0.5, (steps, 3)), quat, gripper]).astype(np.float32)


def write_valid(path: Path, n_demos: int = 3, steps: int = 5, env_name: str = ENV_NAME) -> Path:
    """A valid L2 file; demo_i has steps + i samples, even demos succeed."""
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as f:
        f.attrs["format_version"] = 1
        data = f.create_group("data")
        data.attrs["env_args"] = json.dumps({"env_name": env_name, "type": 2})
        total = 0
        for i in range(n_demos):
            t = steps + i
            demo = data.create_group(f"demo_{i}")
            demo.attrs["num_samples"] = t
            demo.attrs["success"] = i % 2 == 0
            demo.attrs["seed"] = 100 + i
            demo.create_dataset("actions", data=lift_actions(rng, t), compression="gzip")
            obs = demo.create_group("obs")
            obs["joint_pos"] = rng.normal(size=(t, 9)).astype(np.float32)
            obs["object_position"] = rng.normal(size=(t, 3)).astype(np.float32)
            obs.create_group("nested")["term"] = rng.normal(size=(t, 2, 2))
            obs["step_count"] = np.arange(t, dtype=np.int64)
            total += t
        data.attrs["total"] = total
    return path


@pytest.fixture
def valid(tmp_path: Path) -> Path:
    return write_valid(tmp_path / "scripted_lift_cube.hdf5")


@contextmanager
def edit(path: Path) -> Iterator[h5py.File]:
    with h5py.File(path, "a") as f:
        yield f


def replace(group: h5py.Group, name: str, value: np.ndarray) -> None:
    del group[name]
    group[name] = value


def only_violation(report: FileReport) -> Violation:
    assert len(report.violations) == 1, [str(v) for v in report.violations]
    return report.violations[0]


def assert_violation(report: FileReport, path: str, substring: str) -> None:
    assert any(v.path == path and substring in v.message for v in report.violations), [
        str(v) for v in report.violations
    ]


# ------------------------------------------------------------------------------------------ accept
def test_accepts_valid_file(valid: Path) -> None:
    report = validate_file(valid)
    assert report.ok, [str(v) for v in report.violations]
    assert report.warnings == []
    assert (report.episodes, report.successes, report.samples) == (3, 2, 5 + 6 + 7)
    assert (report.env_name, report.format_version) == (ENV_NAME, 1)


def test_accepts_isaac_lab_extra_entries(valid: Path) -> None:
    """initial_state/ (1 row), states/ and processed_actions of any shape are not flagged."""
    with edit(valid) as f:
        demo = f["data/demo_0"]
        demo.create_group("initial_state/articulation/robot")["joint_position"] = np.zeros((1, 9), np.float32)
        demo.create_group("states/rigid_object/cube")["root_pose"] = np.full((6, 7), np.nan, np.float32)
        demo["processed_actions"] = np.zeros((5, 9), np.float32)
    assert validate_file(valid).ok


def test_missing_seed_is_fine_and_any_width_without_action_dim(valid: Path) -> None:
    with edit(valid) as f:
        del f["data/demo_1"].attrs["seed"]
        replace(f["data/demo_2"], "actions", np.zeros((7, 3), np.float32))
    assert validate_file(valid, action_dim=None).ok


def test_validate_episode_is_self_contained(valid: Path) -> None:
    with edit(valid) as f:
        assert validate_episode(str(valid), f["data/demo_0"]) == []
        del f["data/demo_0"].attrs["success"]
        (v,) = validate_episode(str(valid), f["data/demo_0"])
    assert v == Violation(str(valid), "/data/demo_0", v.message)
    assert "missing success" in v.message


def test_numeric_order_with_more_than_ten_demos(tmp_path: Path) -> None:
    path = write_valid(tmp_path / "many.hdf5", n_demos=12)
    assert validate_file(path).ok
    with edit(path) as f:
        for i in range(12):
            del f[f"data/demo_{i}"].attrs["success"]
    paths = [v.path for v in validate_file(path).violations]
    assert paths == [f"/data/demo_{i}" for i in range(12)]  # not demo_0, demo_1, demo_10, demo_11, demo_2


def test_empty_env_name_is_a_warning_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_valid(tmp_path / "f.hdf5", env_name="")
    report = validate_file(path)
    assert report.ok and report.env_name == ""
    assert len(report.warnings) == 1 and "env_name" in report.warnings[0].message
    assert main([str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{path}: OK, 3 episodes")
    assert lines[1].startswith(f"warning: {path}:/data: ")


def scene_state(rng: np.random.Generator) -> dict:
    """Nested dict shaped like Isaac Lab's ``InteractiveScene.get_state()`` for one env."""

    def pose() -> np.ndarray:
        return np.hstack([rng.normal(size=3), [0.0, 0.0, 0.0, 1.0]]).astype(np.float32)

    return {
        "articulation": {"robot": {"root_pose": pose(), "joint_position": rng.normal(size=9).astype(np.float32)}},
        "rigid_object": {"cube": {"root_pose": pose(), "root_velocity": np.zeros(6, np.float32)}},
    }


def test_accepts_file_written_by_isaac_lab(tmp_path: Path) -> None:
    """The real HDF5DatasetFileHandler + EpisodeData output, with initial_state/, states/, processed_actions."""
    datasets = pytest.importorskip("isaaclab.utils.datasets")
    import torch

    def tensors(tree: dict) -> dict:
        return {k: tensors(v) if isinstance(v, dict) else torch.from_numpy(v) for k, v in tree.items()}

    rng = np.random.default_rng(1)
    handler = datasets.HDF5DatasetFileHandler()
    handler.create(str(tmp_path / "isaac_lift_cube"), env_name=ENV_NAME)  # ".hdf5" is appended
    for i, steps in enumerate((4, 6, 5)):
        episode = datasets.EpisodeData()
        episode.add("initial_state", tensors(scene_state(rng)))  # one row, like InitialStateRecorder
        for action in lift_actions(rng, steps):
            episode.add("actions", torch.from_numpy(action))
            episode.add("obs", {"joint_pos": torch.randn(9), "object_position": torch.randn(3)})
            episode.add("states", tensors(scene_state(rng)))
            episode.add("processed_actions", torch.randn(9))
        episode.seed = 42 + i
        episode.success = torch.tensor([i != 1]).item()  # what RecorderManager.set_success_to_episodes stores
        episode.pre_export()
        handler.write_episode(episode)
    handler.close()

    path = tmp_path / "isaac_lift_cube.hdf5"
    with h5py.File(path) as f:  # make sure the test exercises the extra entries
        assert {"initial_state", "states", "processed_actions"} <= set(f["data/demo_0"])
        assert f["data/demo_0/initial_state/articulation/robot/joint_position"].shape == (1, 9)
    report = validate_file(path)
    assert report.ok, [str(v) for v in report.violations]
    assert report.warnings == []
    assert (report.episodes, report.successes, report.samples, report.format_version) == (3, 2, 15, 1)


# ------------------------------------------------------------------------------------------ reject
def test_missing_format_version_is_legacy(valid: Path) -> None:
    with edit(valid) as f:
        del f.attrs["format_version"]
    v = only_violation(validate_file(valid))
    assert v.path == "/" and "legacy WXYZ quaternions (no format_version)" in v.message


@pytest.mark.parametrize(("value", "substring"), [(0, "legacy WXYZ"), (2, "unsupported format_version=2")])
def test_wrong_format_version(valid: Path, value: int, substring: str) -> None:
    with edit(valid) as f:
        f.attrs["format_version"] = value
    report = validate_file(valid)
    assert substring in only_violation(report).message
    assert report.format_version == value


def test_episodes_layout(tmp_path: Path) -> None:
    path = tmp_path / "old.hdf5"
    with h5py.File(path, "w") as f:
        f.attrs["format_version"] = 1
        f.create_group("episodes/0")["actions"] = np.zeros((3, 8), np.float32)
    v = only_violation(validate_file(path))
    assert v.path == "/episodes"
    assert "abandoned episodes/<i> layout; expected data/demo_<i>" in v.message


def test_missing_data_group(tmp_path: Path) -> None:
    path = tmp_path / "empty.hdf5"
    with h5py.File(path, "w") as f:
        f.attrs["format_version"] = 1
    assert only_violation(validate_file(path)).path == "/data"


def test_wrong_total(valid: Path) -> None:
    with edit(valid) as f:
        f["data"].attrs["total"] = 3  # the episode count, a classic mistake
    v = only_violation(validate_file(valid))
    assert v.path == "/data" and "total=3" in v.message and "sum to 18" in v.message


def test_index_gap(valid: Path) -> None:
    with edit(valid) as f:
        del f["data/demo_1"]
        f["data"].attrs["total"] = 5 + 7
    v = only_violation(validate_file(valid))
    assert v.path == "/data" and "missing demo_1" in v.message


@pytest.mark.parametrize("name", ["demo_x", "episode_2", "demo_02", "demo_-2"])
def test_non_numeric_group_name(valid: Path, name: str) -> None:
    with edit(valid) as f:
        f["data"].move("demo_2", name)
        f["data"].attrs["total"] = 5 + 6
    v = only_violation(validate_file(valid))
    assert v.path == f"/data/{name}" and "not demo_<i>" in v.message


def test_num_samples_mismatch_with_actions(valid: Path) -> None:
    with edit(valid) as f:
        replace(f["data/demo_1"], "actions", f["data/demo_1/actions"][:-1])
    v = only_violation(validate_file(valid))
    assert v.path == "/data/demo_1/actions" and "5 rows but num_samples=6" in v.message


@pytest.mark.parametrize("term", ["joint_pos", "nested/term"])
def test_num_samples_mismatch_with_obs_term(valid: Path, term: str) -> None:
    with edit(valid) as f:
        obs = f["data/demo_0/obs"]
        replace(obs, term, obs[term][:-2])
    v = only_violation(validate_file(valid))
    assert v.path == f"/data/demo_0/obs/{term}" and "3 rows; expected num_samples=5" in v.message


def test_missing_num_samples(valid: Path) -> None:
    with edit(valid) as f:
        del f["data/demo_0"].attrs["num_samples"]
    assert_violation(validate_file(valid), "/data/demo_0", "missing num_samples")


def test_flat_obs_dataset(valid: Path) -> None:
    with edit(valid) as f:
        replace(f["data/demo_0"], "obs", np.zeros((5, 14), np.float32))
    v = only_violation(validate_file(valid))
    assert v.path == "/data/demo_0/obs"
    assert v.message == "obs is one flat dataset; expected a group of named terms (concatenate_terms=False)"


def test_nan_in_actions(valid: Path) -> None:
    with edit(valid) as f:
        f["data/demo_2/actions"][4, 0] = np.nan
    v = only_violation(validate_file(valid))
    assert v.path == "/data/demo_2/actions" and "NaN/inf in 1 rows" in v.message and "row 4" in v.message


def test_inf_in_nested_obs_term(valid: Path) -> None:
    with edit(valid) as f:
        f["data/demo_1/obs/nested/term"][3, 1, 0] = -np.inf
    v = only_violation(validate_file(valid))
    assert v.path == "/data/demo_1/obs/nested/term" and "NaN/inf" in v.message and "row 3" in v.message


def test_non_finite_found_across_read_blocks(valid: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(validate, "CHUNK_BYTES", 16)  # one row of joint_pos per block
    with edit(valid) as f:
        f["data/demo_2/obs/joint_pos"][5, 8] = np.nan
        f["data/demo_2/obs/joint_pos"][6, 0] = np.nan
    v = only_violation(validate_file(valid))
    assert "in 2 rows" in v.message and "first at row 5" in v.message


def test_non_unit_quaternion(valid: Path) -> None:
    with edit(valid) as f:
        f["data/demo_0/actions"][1, 3:7] = [0.0, 0.0, 0.0, 1.01]
    v = only_violation(validate_file(valid))
    assert v.path == "/data/demo_0/actions" and "not unit norm" in v.message and "row 1" in v.message


def test_wrong_action_width(valid: Path) -> None:
    with edit(valid) as f:
        replace(f["data/demo_0"], "actions", f["data/demo_0/actions"][:, :7])
    v = only_violation(validate_file(valid))
    assert v.path == "/data/demo_0/actions" and "width is 7; expected action_dim=8" in v.message
    assert validate_file(valid, action_dim=None).ok


def test_actions_not_2d(valid: Path) -> None:
    with edit(valid) as f:
        replace(f["data/demo_0"], "actions", np.zeros(5, np.float32))
    assert "2-D" in only_violation(validate_file(valid)).message


def test_missing_success(valid: Path) -> None:
    with edit(valid) as f:
        del f["data/demo_1"].attrs["success"]
    v = only_violation(validate_file(valid))
    assert v.path == "/data/demo_1" and "missing success" in v.message


@pytest.mark.parametrize(
    ("attr", "value", "substring"), [("success", 1, "success must be a bool"), ("seed", 1.5, "seed must be an integer")]
)
def test_attr_types(valid: Path, attr: str, value: object, substring: str) -> None:
    with edit(valid) as f:
        f["data/demo_0"].attrs[attr] = value
    assert substring in only_violation(validate_file(valid)).message


@pytest.mark.parametrize(
    ("env_args", "substring"),
    [
        ("{not json", "not valid JSON"),
        (json.dumps({"env_name": ENV_NAME}), 'no "type"'),
        (json.dumps({"env_name": ENV_NAME, "type": 1}), "expected 2"),
        (json.dumps({"type": 2}), 'no "env_name"'),
        (json.dumps([ENV_NAME, 2]), "JSON object"),
    ],
)
def test_bad_env_args(valid: Path, env_args: str, substring: str) -> None:
    with edit(valid) as f:
        f["data"].attrs["env_args"] = env_args
    v = only_violation(validate_file(valid))
    assert v.path == "/data" and substring in v.message


def test_missing_env_args(valid: Path) -> None:
    with edit(valid) as f:
        del f["data"].attrs["env_args"]
    assert "missing env_args" in only_violation(validate_file(valid)).message


# ------------------------------------------------------------------------------------------ broken files
def test_not_hdf5(tmp_path: Path) -> None:
    path = tmp_path / "notes.hdf5"
    path.write_text("not an hdf5 file\n")
    v = only_violation(validate_file(path))
    assert v.file == str(path) and v.path == "/" and "not a readable HDF5 file" in v.message


def test_missing_file(tmp_path: Path) -> None:
    assert "no such file" in only_violation(validate_file(tmp_path / "nope.hdf5")).message


def test_truncated_file(valid: Path) -> None:
    size = valid.stat().st_size
    valid.write_bytes(valid.read_bytes()[: size // 2])
    report = validate_file(valid)  # must not raise
    assert not report.ok and all(v.file == str(valid) for v in report.violations)


# ------------------------------------------------------------------------------------------ CLI
def test_cli_valid(valid: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(valid)]) == 0
    out = capsys.readouterr().out
    assert out == f"{valid}: OK, 3 episodes (2 success), 18 samples, env_name={ENV_NAME}\n"


def test_cli_one_line_per_violation(valid: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with edit(valid) as f:
        del f.attrs["format_version"]
        del f["data/demo_1"].attrs["success"]
    assert main([str(valid)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{valid}:/: legacy WXYZ quaternions (no format_version); expected format_version=1 (XYZW, scalar last)",
        f"{valid}:/data/demo_1: missing success attr (required: L3 filters on it; "
        "the env needs a 'success' termination term)",
    ]


def test_cli_json(valid: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.hdf5"
    bad.write_bytes(b"garbage")
    assert main([str(valid), str(bad), "--json"]) == 1
    reports = json.loads(capsys.readouterr().out)
    assert [r["ok"] for r in reports] == [True, False]
    assert reports[0] == {
        "file": str(valid),
        "ok": True,
        "violations": [],
        "warnings": [],
        "episodes": 3,
        "successes": 2,
        "samples": 18,
        "env_name": ENV_NAME,
        "format_version": 1,
    }
    assert reports[1]["violations"][0]["path"] == "/"


def test_cli_action_dim(valid: Path) -> None:
    with edit(valid) as f:
        replace(f["data/demo_0"], "actions", np.zeros((5, 3), np.float32))
    assert main([str(valid)]) == 1
    assert main([str(valid), "--action-dim", "0"]) == 0
    assert main([str(valid), "--action-dim", "3"]) == 1  # the other demos are 8 wide
    with pytest.raises(SystemExit) as exc:
        main([str(valid), "--action-dim", "-1"])
    assert exc.value.code == 2


def test_cli_module_entry_point(valid: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "l2.format.validate", str(valid), "--help"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and "--action-dim" in proc.stdout
    proc = subprocess.run(
        [sys.executable, "-m", "l2.format.validate", str(valid)], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0 and proc.stdout.startswith(f"{valid}: OK"), proc.stderr


# ------------------------------------------------------------------------------------------ in memory
def _in_memory(path: Path, demo: str, action_dim: int | None) -> list[Violation]:
    """validate_episode on the demo's datasets read into memory (as L3 does)."""
    with h5py.File(path, "r") as f:
        g = f[f"data/{demo}"]
        data = validate.read_episode_data(g, load_bytes=2**30, attrs=dict(g.attrs))
        assert all(isinstance(a, np.ndarray) for a in data.obs.values() if a.dtype.kind == "f" and a.ndim)
        return validate_episode(str(path), data, action_dim)


EDITS = {
    "valid": lambda f: None,
    "nan_actions": lambda f: f["data/demo_0/actions"].__setitem__((2, 1), np.nan),
    "inf_nested": lambda f: f["data/demo_0/obs/nested/term"].__setitem__((3, 1, 0), -np.inf),
    "quaternion": lambda f: f["data/demo_0/actions"].__setitem__((1, slice(3, 7)), [0.0, 0.0, 0.0, 1.01]),
    "width": lambda f: replace(f["data/demo_0"], "actions", np.zeros((5, 7), np.float32)),
    "short_obs": lambda f: replace(f["data/demo_0/obs"], "joint_pos", np.zeros((4, 9), np.float32)),
    "short_actions": lambda f: replace(f["data/demo_0"], "actions", f["data/demo_0/actions"][:-1]),
    "int_actions": lambda f: replace(f["data/demo_0"], "actions", np.zeros((5, 8), np.int32)),
    "actions_1d": lambda f: replace(f["data/demo_0"], "actions", np.zeros(5, np.float32)),
    "scalar_term": lambda f: replace(f["data/demo_0/obs"], "joint_pos", np.float32(1.0)),
    "no_actions": lambda f: f["data/demo_0"].__delitem__("actions"),
    "no_success": lambda f: f["data/demo_0"].attrs.__delitem__("success"),
    "bad_types": lambda f: (
        f["data/demo_0"].attrs.__setitem__("num_samples", 5.0),
        f["data/demo_0"].attrs.__setitem__("success", 1),
        f["data/demo_0"].attrs.__setitem__("seed", "x"),
    ),
    "no_terms": lambda f: [f["data/demo_0/obs"].__delitem__(k) for k in list(f["data/demo_0/obs"])],
}


@pytest.mark.parametrize("case", sorted(EDITS))
@pytest.mark.parametrize("action_dim", [8, None])
def test_in_memory_episode_matches_blockwise_episode(valid: Path, case: str, action_dim: int | None) -> None:
    with edit(valid) as f:
        EDITS[case](f)
    with h5py.File(valid, "r") as f:
        want = validate_episode(str(valid), f["data/demo_0"], action_dim)
    assert _in_memory(valid, "demo_0", action_dim) == want
    if case == "valid":
        assert want == []
    elif action_dim is not None:
        assert want, case  # every edit breaks a rule


def test_joint_position_actions_are_checked_by_what_the_file_says_it_holds(tmp_path):
    """A file whose env_args says ``action_space: joint_position`` (the SO-101's six joint targets) has actions of
    its robot's width and no quaternion; one that says nothing holds the 8-wide IK-absolute pose."""
    path = write_valid(tmp_path / "joints.hdf5")
    with h5py.File(path, "r+") as f:
        for demo in f["data"].values():
            del demo["actions"]
            demo["actions"] = np.full((int(demo.attrs["num_samples"]), 6), 0.3, dtype=np.float32)  # no unit quat
    report = validate_file(path)
    assert [v.message for v in report.violations] == ["actions width is 6; expected action_dim=8"] * 3
    with h5py.File(path, "r+") as f:
        f["data"].attrs["env_args"] = json.dumps({"env_name": ENV_NAME, "type": 2, "action_space": "joint_position"})
    assert validate_file(path).ok
    assert [v.message for v in validate_file(path, 7).violations][:1] == ["actions width is 6; expected action_dim=7"]
    with h5py.File(path, "r+") as f:
        f["data/demo_1/actions"][2, 4] = np.nan
    assert [v.path for v in validate_file(path).violations] == ["/data/demo_1/actions"]  # still finite-checked
