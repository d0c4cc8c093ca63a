"""L2DatasetFileHandler and the camera frame spool on their own (no simulator): refusal, append numbering,
the success quota, streamed frames, appends with other obs terms, and episodes written whole or not at all."""

from __future__ import annotations

import json
import os

import h5py
import numpy as np
import pytest
from conftest import mount_tmpfs, umount

pytest.importorskip("isaaclab")

import torch  # noqa: E402
from isaaclab.utils.datasets import EpisodeData  # noqa: E402

from l2.format.validate import validate_file  # noqa: E402
from l2.recording.camera_frames import FrameSpool  # noqa: E402
from l2.recording.handler import L2DatasetFileHandler, RecordingError, RecordingIOError  # noqa: E402

TASK = "L2-Lift-Cube-Franka-IK-Abs"


def _episode(T: int, success: bool) -> EpisodeData:
    episode = EpisodeData()
    for t in range(T):
        episode.add("actions", torch.tensor([0.5, 0.0, 0.2, 1.0, 0.0, 0.0, 0.0, float(t % 2) * 2 - 1]))
        episode.add("obs/joint_pos", torch.full((9,), float(t)))
    episode.success = success
    episode.seed = 1
    episode.pre_export()
    return episode


def _write(path, episodes, **kwargs) -> L2DatasetFileHandler:
    handler = L2DatasetFileHandler(**kwargs)
    handler.create(str(path), env_name=TASK)
    for episode in episodes:
        handler.write_episode(episode)
    handler.flush()
    handler.close()
    return handler


def test_quota_writes_exactly_n_successes_when_more_arrive_together(tmp_path):
    path = tmp_path / "demos.hdf5"
    handler = _write(path, [_episode(3, True) for _ in range(4)], max_successes=2)
    assert handler.successes_written == 2
    report = validate_file(path)
    assert report.ok and report.episodes == 2


def test_existing_file_is_refused_untouched_and_append_continues(tmp_path):
    path = tmp_path / "demos.hdf5"
    _write(path, [_episode(3, True), _episode(4, True)])
    before = path.read_bytes()
    with pytest.raises(FileExistsError, match="--append"):
        L2DatasetFileHandler().create(str(path), env_name=TASK)
    assert path.read_bytes() == before
    _write(path, [_episode(5, True)], on_exists="append")
    with h5py.File(path) as f:
        assert sorted(f["data"]) == ["demo_0", "demo_1", "demo_2"]
        assert f["data/demo_2"].attrs["num_samples"] == 5
        assert f["data"].attrs["total"] == 3 + 4 + 5
    assert validate_file(path).ok


def test_append_refuses_a_file_of_another_task(tmp_path):
    path = tmp_path / "demos.hdf5"
    _write(path, [_episode(3, True)])
    handler = L2DatasetFileHandler(on_exists="append")
    with pytest.raises(ValueError, match="cannot append"):
        handler.create(str(path), env_name="Some-Other-Task")


# -- camera frames streamed through a FrameSpool (no simulator) ------------------------------------------
def _frames(T: int, envs: int, seed: int) -> np.ndarray:
    """(T, envs, 24, 32, 3) uint8: smooth pictures that change every step, like rendered ones."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:24, 0:32]
    base = rng.integers(0, 255, size=(envs, 1, 1, 3))
    return np.stack([(base + (xx + yy + 3 * t)[None, ..., None]) % 256 for t in range(T)]).astype(np.uint8)


def _camera_episode(
    spool: FrameSpool,
    camera: str,
    frames: np.ndarray,
    env_id: int = 0,
    samples: int | None = None,
    success: bool = True,
) -> EpisodeData:
    """An episode whose camera frames went through the spool step by step, for all envs, and were handed over
    for env ``env_id`` (as the recorder term does when an episode ends); ``samples`` rows of the other terms
    (default: one per frame). What was handed over before is released first: write that episode before."""
    spool.release(range(frames.shape[1]))
    for step in frames:
        spool.append(camera, step, list(range(frames.shape[1])))
    episode = _episode(len(frames) if samples is None else samples, success)
    episode.data["obs"].update(spool.take(env_id))
    return episode


def test_streamed_frames_are_written_bit_exact_one_gzip_chunk_per_frame(tmp_path):
    path = tmp_path / "demos.hdf5"
    spool = FrameSpool(path)
    frames = _frames(6, 2, seed=0)
    handler = L2DatasetFileHandler()
    handler.create(str(path), env_name=TASK)
    handler.write_episode(_camera_episode(spool, "table_cam", frames, env_id=1))
    handler.write_episode(_camera_episode(spool, "table_cam", frames[:4], env_id=1))  # env 1's next episode
    handler.close()
    assert spool.path.exists() and spool.path.name.startswith(".demos.")
    spool.close()
    assert not spool.path.exists()
    assert validate_file(path).ok
    with h5py.File(path) as f:
        first, second = f["data/demo_0/obs/table_cam"], f["data/demo_1/obs/table_cam"]
        assert first.chunks == (1, 24, 32, 3) and first.compression == "gzip"
        assert np.array_equal(first[()], frames[:, 1]) and np.array_equal(second[()], frames[:4, 1])
        assert first.id.get_storage_size() < frames[:, 1].nbytes / 2  # compressed


def test_stale_spool_files_of_dead_runs_are_removed(tmp_path):
    output = tmp_path / "scripted_lift_cube.hdf5"
    stale = tmp_path / ".scripted_lift_cube.999999999.frames.spool"  # no such pid
    other = tmp_path / ".rl_lift_cube.999999999.frames.spool"  # another output's
    stale.write_bytes(b"x")
    other.write_bytes(b"x")
    spool = FrameSpool(output)
    assert not stale.exists() and other.exists()
    spool.close()


def test_append_with_other_obs_terms_is_refused_and_the_file_is_unchanged(tmp_path):
    path = tmp_path / "demos.hdf5"
    spool = FrameSpool(path)
    _write(path, [_camera_episode(spool, "table_cam", _frames(3, 1, seed=1))])
    spool.close()
    before = path.read_bytes()

    handler = L2DatasetFileHandler(on_exists="append")
    handler.create(str(path), env_name=TASK)
    handler.add_env_args({"sim_args": {"num_envs": 7}})  # what the RecorderManager does before each export
    with pytest.raises(RecordingError) as err:
        handler.write_episode(_episode(3, True))  # state only
    handler.close()
    message = str(err.value)
    assert "\n" not in message and "cannot append" in message
    assert "its demos record table_cam[24x32x3] uint8, which this run does not" in message  # the difference
    assert path.read_bytes() == before


def test_an_episode_that_fails_midway_leaves_the_file_as_it_was(tmp_path):
    path = tmp_path / "demos.hdf5"
    spool = FrameSpool(path)
    frames = _frames(5, 1, seed=2)
    handler = L2DatasetFileHandler()
    handler.create(str(path), env_name=TASK)
    handler.write_episode(_camera_episode(spool, "wrist_cam", frames))
    env_args = handler._hdf5_data_group.attrs["env_args"]
    broken = _camera_episode(spool, "wrist_cam", frames[:4], samples=5)  # 5 samples but only 4 frames
    handler.add_env_args({"sim_args": {"num_envs": 3}})
    with pytest.raises(RecordingError, match=r"demos.hdf5:/data/demo_1: .*4 frames for 5 samples.*as it was"):
        handler.write_episode(broken)
    handler.write_episode(_camera_episode(spool, "wrist_cam", frames[:2], success=False))
    handler.close()
    spool.close()
    with h5py.File(path) as f:
        assert sorted(f["data"]) == ["demo_0", "demo_1"]  # the broken one left nothing; numbering went on
        assert f["data/demo_1"].attrs["num_samples"] == 2 and f["data/demo_1/obs/wrist_cam"].shape[0] == 2
        assert f["data"].attrs["total"] == 5 + 2
        assert json.loads(f["data"].attrs["env_args"])["sim_args"] == {"num_envs": 3}
        assert json.loads(env_args).get("sim_args") is None


def test_new_file_appears_whole_with_its_first_demo(tmp_path, monkeypatch):
    """The file is made with the first demo, built beside its path and renamed into place: a run that
    writes nothing leaves no file, and one killed while creating it leaves no truncated HDF5 behind."""
    import os

    path = tmp_path / "new" / "demos.hdf5"
    handler = L2DatasetFileHandler()
    handler.create(str(path), env_name=TASK)
    handler.flush()
    assert not path.exists() and path.parent.is_dir() and handler.get_num_episodes() == 0
    seen = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (seen.append((a, b, os.path.exists(b))), real_replace(a, b)))
    handler.write_episode(_episode(3, True))
    assert seen == [(str(path.parent / "demos.creating.hdf5"), str(path), False)]
    handler.write_episode(_episode(2, True))
    handler.close()
    assert sorted(p.name for p in path.parent.iterdir()) == ["demos.hdf5"]
    assert validate_file(path).ok and validate_file(path).episodes == 2


def test_overwrite_keeps_the_old_file_until_a_demo_replaces_it(tmp_path):
    path = tmp_path / "demos.hdf5"
    _write(path, [_episode(3, True)]).close()
    before = path.read_bytes()
    handler = L2DatasetFileHandler(on_exists="overwrite")
    handler.create(str(path), env_name=TASK)
    handler.close()  # e.g. the run stopped on an error before its first demo
    assert path.read_bytes() == before
    _write(path, [_episode(4, True), _episode(5, True)], on_exists="overwrite").close()
    assert validate_file(path).episodes == 2


@pytest.mark.sim
def test_kill_9_while_writing_a_demo_keeps_the_file(tmp_path):
    """Rounds of bench/crash_campaign.py: a real collection killed inside write_episode, from outside, and inside
    HDF5's flush; the file still validates, holds the demos written before, and the next --append run continues it."""
    import argparse
    import random
    import signal

    from bench.crash_campaign import run_round

    args = argparse.Namespace(cameras=False, startup_timeout=600.0, max_delay=8.0)
    path = tmp_path / "crash.hdf5"
    first = run_round(path, args, random.Random(3), "in-write", seed=0)
    episode = int(first.moment.split(",")[0].split()[1])
    assert first.exit_code == -signal.SIGKILL and first.valid, first.verdict
    assert first.after == episode - 1 and first.lost == 0  # each written episode is flushed at once
    second = run_round(path, args, random.Random(3), "outside", seed=1)
    assert second.exit_code == -signal.SIGKILL and second.valid and second.lost == 0, second.verdict
    assert second.after >= first.after
    third = run_round(path, args, random.Random(5), "in-flush", seed=2)  # rolled back by the undo journal
    assert third.exit_code == -signal.SIGKILL and third.valid and third.lost == 0, third.verdict
    assert third.after >= second.after


# -- a full disk (a real small tmpfs; no simulator) ------------------------------------------------------
def _noise_episode(T: int) -> EpisodeData:
    """An episode of T steps whose obs/noise (16 KiB a step) gzip cannot shrink."""
    episode = _episode(T, True)
    episode.data["obs"]["noise"] = torch.from_numpy(np.random.default_rng(T).random((T, 4096), dtype=np.float32))
    return episode


@pytest.fixture
def small_disk(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    mount_tmpfs(disk, "size=2m")
    yield disk
    umount(disk)


def test_an_episode_the_disk_has_no_room_for_is_not_started(small_disk):
    """The free-space check stops before the write: the file stays byte-identical, and a file this run would have
    made is not left behind."""
    path = small_disk / "demos.hdf5"
    handler = L2DatasetFileHandler()
    handler.create(str(path), env_name=TASK)
    with pytest.raises(RecordingIOError, match="No space left on device"):
        handler.write_episode(_noise_episode(256))  # 4 MB
    assert handler.abandon() == "demos.hdf5: not written" and os.listdir(small_disk) == []

    _write(path, [_noise_episode(16)])
    before = path.read_bytes()
    handler = L2DatasetFileHandler(on_exists="append")
    handler.create(str(path), env_name=TASK)
    with pytest.raises(RecordingIOError) as err:
        handler.write_episode(_noise_episode(256))
    assert err.value.need > err.value.free
    assert handler.abandon() == "demos.hdf5 intact: 1 demos"
    assert path.read_bytes() == before and os.listdir(small_disk) == ["demos.hdf5"]


def test_a_disk_filled_after_the_check_is_caught_by_the_reservation(small_disk, monkeypatch):
    """Another process may fill the disk between the free-space check and the write: the episode's bytes are
    reserved on disk (fallocate) before it is written, so it is refused whole instead of failing half-way (where
    the HDF5 library can crash in its flush). The file keeps the demos written before, valid."""
    from l2.recording import handler as handler_module

    monkeypatch.setattr(handler_module.atomic, "free_bytes", lambda path: 1 << 40)  # the check sees room
    path = small_disk / "demos.hdf5"
    handler = L2DatasetFileHandler()
    handler.create(str(path), env_name=TASK)
    with pytest.raises(RecordingIOError) as err:
        for _ in range(20):  # 0.5 MB each: the disk is full before the 4th
            handler.write_episode(_noise_episode(32))
    written = handler.successes_written
    assert 1 <= written < 4 and "No space left on device" in str(err.value)
    assert handler.abandon() == f"demos.hdf5 intact: {written} demos (all from this run)"
    report = validate_file(path)
    assert report.ok and report.episodes == written, [str(v) for v in report.violations]
    assert os.listdir(small_disk) == ["demos.hdf5"]
    assert os.stat(path).st_blocks * 512 < os.path.getsize(path) + (64 << 10)  # no reserved space kept
