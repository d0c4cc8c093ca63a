"""Scripted source: the state machine alone, and real CPU runs of l2/scripted/run.py."""

from __future__ import annotations

import math

import h5py
import numpy as np
import pytest

pytest.importorskip("isaaclab")

import torch  # noqa: E402
from conftest import refused_in_one_line, run_scripted  # noqa: E402

from l2.format.validate import validate_file  # noqa: E402
from l2.scripted.state_machine import PickAndLiftCfg, PickAndLiftStateMachine, PickState  # noqa: E402


def _yaw_quat(yaw: float) -> list[float]:
    return [0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)]


def _step(sm, ee, cube, quat, n=1):
    for _ in range(n):
        out = sm.compute(ee, cube, quat)
    return out


def test_state_machine_walks_through_states_and_envs_are_independent():
    cfg = PickAndLiftCfg(dt=0.02)
    sm = PickAndLiftStateMachine(3, "cpu", cfg)
    cube = torch.tensor([[0.5, 0.0, 0.02], [0.45, 0.1, 0.02], [0.55, -0.1, 0.02]])
    quat = torch.tensor([_yaw_quat(0.0), _yaw_quat(0.3), _yaw_quat(-1.2)])
    far = torch.zeros(3, 3)
    out = _step(sm, far, cube, quat, n=int(cfg.rest_time / cfg.dt) + 1)
    assert (sm.state == PickState.APPROACH).all()
    assert torch.allclose(out[:, :3], cube + torch.tensor([0.0, 0.0, cfg.approach_height]))
    assert (out[:, 7] > 0).all()  # open
    assert torch.allclose(torch.linalg.vector_norm(out[:, 3:7], dim=-1), torch.ones(3))
    # env 1 reaches the approach pose: only env 1 descends.
    ee = far.clone()
    ee[1] = cube[1] + torch.tensor([0.0, 0.0, cfg.approach_height])
    out = _step(sm, ee, cube, quat)
    grasp = cube[1] + torch.tensor([0.0, 0.0, cfg.grasp_height])
    assert sm.state.tolist() == [PickState.APPROACH, PickState.DESCEND, PickState.APPROACH]
    assert torch.allclose(out[1, :3], grasp)
    # env 1 reaches the grasp pose: it closes and then lifts while the others keep approaching.
    ee[1] = grasp
    out = _step(sm, ee, cube, quat)
    assert sm.state[1] == PickState.GRASP and out[1, 7] < 0 and (out[[0, 2], 7] > 0).all()
    _step(sm, ee, cube, quat, n=int(cfg.grasp_time / cfg.dt) + 1)
    assert sm.state[1] == PickState.LIFT
    # resetting env 1 leaves envs 0 and 2 exactly where they were.
    before = (sm.state.clone(), sm.time_in_state.clone())
    sm.reset([1])
    assert sm.state[1] == PickState.REST and sm.time_in_state[1] == 0
    assert torch.equal(sm.state[[0, 2]], before[0][[0, 2]])
    assert torch.equal(sm.time_in_state[[0, 2]], before[1][[0, 2]])


def test_grasp_yaw_follows_the_cube_modulo_90_degrees():
    sm = PickAndLiftStateMachine(4, "cpu")
    yaws = [0.2, 0.2 + math.pi / 2, -0.7, 0.7]
    quat = sm.grasp_orientation(torch.tensor([_yaw_quat(y) for y in yaws]))
    # Top-down: the end effector's z axis points down; its yaw is the cube's folded into [-45, 45] deg.
    from isaaclab.utils.math import quat_apply

    z = quat_apply(quat, torch.tensor([[0.0, 0.0, 1.0]]).repeat(4, 1))
    assert torch.allclose(z, torch.tensor([[0.0, 0.0, -1.0]]).repeat(4, 1), atol=1e-6)
    x = quat_apply(quat, torch.tensor([[1.0, 0.0, 0.0]]).repeat(4, 1))
    got = torch.atan2(x[:, 1], x[:, 0])
    assert torch.allclose(got, torch.tensor([0.2, 0.2, -0.7, 0.7]), atol=1e-5)


_run = run_scripted


@pytest.mark.sim
def test_scripted_run_writes_exactly_n_valid_successful_demos(scripted_run):
    out, _, stdout = scripted_run
    report = validate_file(out)
    assert report.ok, [str(v) for v in report.violations]
    assert report.episodes == report.successes == 3
    assert report.env_name == "L2-Lift-Cube-Franka-IK-Abs-Scripted"
    assert "demos written    3" in stdout
    with h5py.File(out) as f:
        for i in range(3):
            demo = f[f"data/demo_{i}"]
            T = demo.attrs["num_samples"]
            assert demo.attrs["success"] and demo.attrs["seed"] == 42
            assert demo["actions"].shape == (T, 8)
            q = demo["actions"][:, 3:7]
            np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-5)
            assert demo["obs/joint_pos"].shape == (T, 9)
            assert demo["obs/object_position"].shape == (T, 3)
            for cam in ("table_cam", "wrist_cam"):  # one frame per row, chunked per frame, compressed
                frames = demo[f"obs/{cam}"]
                assert frames.shape == (T, 224, 224, 3) and frames.dtype == np.uint8
                assert frames.chunks == (1, 224, 224, 3) and frames.compression == "gzip"


@pytest.mark.sim
def test_recorded_actions_are_exactly_the_state_machine_outputs(scripted_run):
    out, log, _ = scripted_run
    emitted = np.load(log)["actions"]  # (steps, envs, 8)
    with h5py.File(out) as f:
        for i in range(3):
            actions = f[f"data/demo_{i}/actions"][()]
            T = len(actions)
            found = any(
                np.array_equal(emitted[s : s + T, e], actions)
                for e in range(emitted.shape[1])
                for s in range(emitted.shape[0] - T + 1)
                if np.array_equal(emitted[s, e], actions[0])
            )
            assert found, f"demo_{i}: actions are not a contiguous run of the state machine's outputs"


@pytest.mark.sim
def test_refuses_existing_file_and_append_continues_numbering(scripted_run, tmp_path):
    src, _, _ = scripted_run
    out = tmp_path / "scripted_lift_cube.hdf5"
    out.write_bytes(src.read_bytes())
    before = out.read_bytes()
    refused = _run("--num_envs", "2", "--num_demos", "1", "--output", str(out))
    refused_in_one_line(refused, str(out), "exists")
    assert out.read_bytes() == before
    with h5py.File(out) as f:
        old = {n: f[f"data/{n}/actions"][()] for n in f["data"]}
    # Demos without cameras cannot join camera demos: one line naming the difference, the file untouched.
    mixed = _run("--num_envs", "2", "--num_demos", "1", "--output", str(out), "--append", "presets=no_cameras")
    assert mixed.returncode == 2, mixed.stdout[-2000:] + mixed.stderr[-2000:]
    error = [line for line in mixed.stderr.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and "cannot append" in error[0], mixed.stderr[-2000:]
    cameras = "table_cam[224x224x3] uint8, wrist_cam[224x224x3] uint8"
    assert f"its demos record {cameras}, which this run does not" in error[0]
    assert "scripted demos" not in mixed.stderr  # refused before the first step: the progress bar never started
    assert out.read_bytes() == before
    appended = _run(
        "--num_envs", "2", "--num_demos", "2", "--workers", "1", "--output", str(out), "--append", "--seed", "3"
    )
    assert appended.returncode == 0, appended.stdout[-3000:] + appended.stderr[-3000:]
    report = validate_file(out)
    assert report.ok and report.episodes == 5
    with h5py.File(out) as f:
        assert sorted(f["data"], key=lambda n: int(n.split("_")[1])) == [f"demo_{i}" for i in range(5)]
        for name, actions in old.items():
            assert np.array_equal(f[f"data/{name}/actions"][()], actions)
        assert f["data/demo_3"].attrs["seed"] == 3
        assert f["data"].attrs["total"] == sum(f[f"data/demo_{i}"].attrs["num_samples"] for i in range(5))
