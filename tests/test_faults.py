"""Faults a user meets while collecting: Ctrl-C or SIGTERM, a second writer, a folder that cannot be written. Each
ends in the usual summary or one line, with the file valid and nothing left beside it."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SCRIPTED_RUN, run_scripted

from l2.format.l2file import L2File
from l2.format.validate import validate_file

pytestmark = pytest.mark.sim


def _start(out: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(SCRIPTED_RUN), "--num_envs", "2", "--num_demos", "40", "--output", str(out), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_demo(proc: subprocess.Popen, out: Path) -> None:
    """Until the collector has written a demo (the condition, not a guess of how long that takes)."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        try:
            with L2File(out, guard=False, locking=False) as f:
                if f.demos:
                    return
        except Exception:  # noqa: BLE001  not created yet, or read mid-write
            pass
        time.sleep(0.5)
    pytest.fail("no demo written in time")


def _leftovers(folder: Path, out: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != out.name)


@pytest.mark.parametrize(("sig", "code", "cameras"), [(signal.SIGINT, 130, True), (signal.SIGTERM, 143, False)])
def test_a_signal_ends_collection_with_a_summary_and_a_second_writer_is_refused(tmp_path, sig, code, cameras):
    """The first SIGINT/SIGTERM stops the run after the step in progress: the summary says "interrupted", the
    exit status is 128 + the signal, the file holds the demos written and is valid, and the camera spool is gone.
    While it runs, a second collector appending to the same file is refused in one line before its simulator
    starts, naming the first one's pid."""
    out = tmp_path / "scripted_lift_cube.hdf5"
    proc = _start(out, *([] if cameras else ["presets=no_cameras"]))
    try:
        _wait_for_demo(proc, out)
        second = run_scripted("--num_envs", "1", "--num_demos", "1", "--output", str(out), "--append")
        lines = second.stderr.strip().splitlines()
        assert second.returncode == 2 and len(lines) == 1, second.stderr[-2000:]
        assert f"{out}: in use by another process (pid {proc.pid})" in lines[0] and "l2.distributed" in lines[0]
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, stderr[-3000:]
    assert "interrupted" in stdout and f"by {sig.name}" in stdout and "Traceback" not in stderr, stdout[-2000:]
    report = validate_file(out)
    assert report.ok and report.episodes >= 1, [str(v) for v in report.violations]
    assert re.search(r"demos written\s+(\d+)", stdout).group(1) == str(report.episodes)
    assert _leftovers(tmp_path, out) == []  # no spool, no half-created file


def test_a_folder_that_cannot_be_written_is_refused_before_the_simulator(tmp_path):
    """A read-only place (a read-only tmpfs mounted by root) is named in one line, exit 2, in seconds."""
    ro = tmp_path / "ro"
    ro.mkdir()
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(ro)], capture_output=True)
    if mount.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {mount.stderr.decode().strip()}")
    try:
        start = time.monotonic()
        proc = run_scripted("--num_envs", "1", "--num_demos", "1", "--output", str(ro / "demos" / "scripted_x.hdf5"))
        took = time.monotonic() - start
    finally:
        subprocess.run(["umount", str(ro)], check=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and f"{ro}: not writable" in lines[0], proc.stderr[-2000:]
    assert "Completed setting up the environment" not in proc.stdout, f"the simulator started ({took:.0f} s)"
