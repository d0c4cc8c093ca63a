"""L2DatasetFileHandler on its own: refusal, append numbering and the success quota (no simulator)."""

from __future__ import annotations

import h5py
import pytest

pytest.importorskip("isaaclab")

import torch  # noqa: E402
from isaaclab.utils.datasets import EpisodeData  # noqa: E402

from l2.recording import L2DatasetFileHandler  # noqa: E402
from l2.validate import validate_file  # noqa: E402

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
