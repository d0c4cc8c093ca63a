"""The undo journal (l2.format.journal): a writer killed at any moment, even inside HDF5's flush, leaves a file that
the next reader rolls back to its last flush, byte for byte; a live writer's journal is left alone."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import time

import pytest

pytest.importorskip("isaaclab")

from test_recording import TASK, _episode, _write  # noqa: E402

from l2.format import journal  # noqa: E402
from l2.format.validate import validate_file  # noqa: E402
from l2.recording.handler import L2DatasetFileHandler  # noqa: E402


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _appender(path, ready: int, commit: bool = True) -> None:
    """In a forked child: append episodes to ``path`` until killed (never returns)."""
    try:
        if not commit:  # HDF5 flushes, the journal is never emptied: as if killed right after each flush
            journal.JournaledFile.commit = lambda self: None
        handler = L2DatasetFileHandler(on_exists="append")
        handler.create(str(path), env_name=TASK)
        os.write(ready, b"x")
        for t in range(10**6):
            handler.write_episode(_episode(40 + t % 7, True))
    finally:
        os._exit(1)


def _start(path, commit: bool = True) -> int:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        _appender(path, w, commit)
    os.close(w)
    assert os.read(r, 1) == b"x"
    os.close(r)
    return pid


def test_a_writer_killed_before_its_commit_is_rolled_back_byte_for_byte(tmp_path):
    path = tmp_path / "demos.hdf5"
    _write(path, [_episode(3, True), _episode(4, True)])
    before, size = _digest(path), os.path.getsize(path)
    pid = _start(path, commit=False)
    deadline = time.monotonic() + 60
    while os.path.getsize(path) < size + 20_000 and time.monotonic() < deadline:
        time.sleep(0.05)  # some episodes written and flushed over the old bytes
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    assert os.path.exists(journal.journal_path(path))
    assert journal.recover(path) is True
    assert _digest(path) == before and not os.path.exists(journal.journal_path(path))
    report = validate_file(path)
    assert report.ok and report.episodes == 2


def test_kill_9_at_random_moments_of_appending_never_leaves_an_unreadable_file(tmp_path):
    """Without the journal about 1 kill in 20 of this loop left a file HDF5 could not open (metadata written past
    the end its superblock records)."""
    base = tmp_path / "base.hdf5"
    _write(base, [_episode(3, True), _episode(4, True)])
    rng, rolled_back, trials = random.Random(7), 0, 40
    for trial in range(trials):
        path = tmp_path / f"t{trial}.hdf5"
        shutil.copy(base, path)
        pid = _start(path)
        time.sleep(rng.uniform(0.0, 0.3))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        rolled_back += journal.recover(path)
        report = validate_file(path)
        assert report.ok and report.episodes >= 2, (trial, [str(v) for v in report.violations])
        path.unlink()
    assert rolled_back >= trials // 8  # most kills land inside a write: the rollback was exercised


def test_a_live_writers_journal_is_left_alone(tmp_path):
    path = tmp_path / "demos.hdf5"
    _write(path, [_episode(3, True)])
    handler = L2DatasetFileHandler(on_exists="append")
    handler.create(str(path), env_name=TASK)
    handler.write_episode(_episode(5, True))
    assert journal.recover(path) is False and os.path.exists(journal.journal_path(path))
    with pytest.raises(OSError, match="in use by another process"):
        journal.JournaledFile(path)
    handler.close()
    assert not os.path.exists(journal.journal_path(path))
    report = validate_file(path)
    assert report.ok and report.episodes == 2
