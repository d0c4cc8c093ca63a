"""Isaac Lab Mimic source: the Mimic task resolves, and ``python -m l2.mimic`` turns one demo into many."""

from __future__ import annotations

import subprocess
import sys

import h5py
import numpy as np
import pytest
import yaml

pytest.importorskip("isaaclab")

from conftest import REPO, run_scripted  # noqa: E402
from l3_fixtures import make_l2_file  # noqa: E402

from l2.format import schema  # noqa: E402
from l2.format.validate import validate_file  # noqa: E402

TASK = "L2-Lift-Cube-Franka-IK-Abs-Mimic"


def run_mimic(*args: str) -> subprocess.CompletedProcess:
    """``python -m l2.mimic`` in its own process (one simulator per process)."""
    return subprocess.run(
        [sys.executable, "-m", "l2.mimic", *args], capture_output=True, text=True, timeout=900, cwd=REPO
    )


def test_mimic_task_resolves_to_the_mimic_env_and_cfg():
    import gymnasium as gym
    from isaaclab.envs import ManagerBasedRLMimicEnv, MimicEnvCfg
    from isaaclab_tasks.utils import parse_env_cfg

    from l2.mimic.env import TaskSpaceMimicEnv
    from l2.recording.sim import register_tasks

    register_tasks()
    assert gym.spec(TASK).entry_point == "l2.mimic.env:TaskSpaceMimicEnv"
    assert issubclass(TaskSpaceMimicEnv, ManagerBasedRLMimicEnv)
    cfg = parse_env_cfg(TASK, device="cpu", num_envs=1)
    assert isinstance(cfg, MimicEnvCfg)
    subtasks = cfg.subtask_configs["franka"]
    assert [s.subtask_term_signal for s in subtasks] == ["grasp", None]
    assert all(s.object_ref == "object" for s in subtasks)
    assert subtasks[-1].subtask_term_offset_range == (0, 0)  # Mimic's rule for the last subtask
    assert "grasp" in cfg.observations.subtask_terms.to_dict()
    # The same action space and success rule as the scripted source whose demos it takes.
    assert cfg.actions.arm_action.controller.use_relative_mode is False
    assert cfg.terminations.success is not None


def test_mimic_files_are_tagged_mimic():
    assert schema.source_from_filename("mimic_lift_cube.hdf5") == "mimic"


def test_missing_source_demo_is_refused_before_the_simulator(tmp_path):
    src = make_l2_file(tmp_path / "scripted_lift_cube.hdf5", 1)
    assert validate_file(src).ok
    out = tmp_path / "mimic_lift_cube.hdf5"
    r = run_mimic("--input", str(src), "--demos", "demo_7", "--output", str(out))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1] == f"error: {src}:/data/demo_7: no such demo"
    assert not out.exists()


@pytest.mark.sim
def test_mimic_generates_valid_convertible_demos_from_one_scripted_demo(tmp_path):
    src = tmp_path / "scripted_lift_cube.hdf5"
    made = run_scripted("--num_envs", "1", "--num_demos", "1", "--output", str(src), "presets=no_cameras")
    assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
    out, annotated = tmp_path / "mimic_lift_cube.hdf5", tmp_path / "annotated.hdf5"
    r = run_mimic(
        "--input",
        str(src),
        "--num_demos",
        "3",
        "--num_envs",
        "2",
        "--output",
        str(out),
        "--annotated",
        str(annotated),
        "presets=no_cameras",
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "demos written    3" in r.stdout

    # Annotation: the grasp signal rises a few steps after the demo commands the gripper to close.
    with h5py.File(src) as f:
        src_actions = f["data/demo_0/actions"][()]
        src_cube = f["data/demo_0/obs/object_position"][0]
    with h5py.File(annotated) as f:
        info = f["data/demo_0/obs/datagen_info"]
        grasp = info["subtask_term_signals/grasp"][()]
        assert set(info) == {"eef_pose", "object_pose", "target_eef_pose", "subtask_term_signals"}
        assert np.isfinite(info["eef_pose/franka"][()]).all()
    close = int(np.argmax(src_actions[:, 7] < 0))
    rise = int(np.argmax(grasp > 0.5))
    assert 0 < close < rise <= close + 15 and grasp[rise:].all(), (close, rise)

    report = validate_file(out)
    assert report.ok, [str(v) for v in report.violations]
    assert report.episodes == report.successes == 3 and report.env_name == TASK
    with h5py.File(out) as f:
        cubes = [f[f"data/demo_{i}/obs/object_position"][0] for i in range(3)]
        for i in range(3):
            demo = f[f"data/demo_{i}"]
            assert sorted(demo["obs"]) == sorted(schema.LIFT_OBS_TERMS)  # like the scripted source's
            assert demo.attrs["seed"] == 42
    # New scenes (the cube elsewhere), not copies of the source demo.
    assert min(np.linalg.norm(c[:2] - src_cube[:2]) for c in cubes) > 1e-3
    assert len({tuple(np.round(c, 4)) for c in cubes}) == 3

    from l3.convert import convert
    from l3.validate import validate

    mapping = yaml.safe_load((REPO / "config" / "lift_cube.yaml").read_text())
    del mapping["cameras"]  # generated here with presets=no_cameras
    config = tmp_path / "lift_cube_state.yaml"
    config.write_text(yaml.safe_dump(mapping))
    summary = convert([str(out)], tmp_path / "gr00t", config=config, log=lambda m: None)
    assert summary.episodes == 3 and list(summary.per_source) == ["mimic"]
    assert validate(tmp_path / "gr00t") == []
