"""Faults a user meets: Ctrl-C or SIGTERM, a second writer, a folder that cannot be written, a full disk. Each
ends in the usual summary or one line, with the inputs intact and nothing left beside the output."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, SCRIPTED_RUN, mount_tmpfs, run_scripted, umount
from l3_fixtures import make_l2_file

from l2.format import atomic
from l2.format.l2file import L2File
from l2.format.validate import validate_file


def _start(
    out: Path, *args: str, collector: tuple[str, ...] = (str(SCRIPTED_RUN), "--workers", "1")
) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, *collector, "--num_envs", "2", "--num_demos", "40", "--output", str(out), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
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


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=600, cwd=REPO)


def _leftovers(folder: Path, out: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != out.name)


@pytest.mark.sim
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
        line = _error_line(second)
        assert f"{out}: in use by another process (pid {proc.pid})" in line and "l2.distributed" in line
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


@pytest.mark.sim
def test_ctrl_c_ends_mimic_generation_with_a_summary(tmp_path):
    """Mimic generation stops after the step in progress too: summary marked interrupted, exit 130, the demos
    written kept in a valid file."""
    src = tmp_path / "scripted_lift_cube.hdf5"
    made = run_scripted("--num_envs", "1", "--num_demos", "1", "--output", str(src), "presets=no_cameras")
    assert made.returncode == 0, made.stderr[-2000:]
    out = tmp_path / "mimic_lift_cube.hdf5"
    proc = _start(out, "--input", str(src), "presets=no_cameras", collector=("-m", "l2.mimic", "--workers", "1"))
    try:
        _wait_for_demo(proc, out)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr[-3000:]
    assert "interrupted" in stdout and "by SIGINT" in stdout
    report = validate_file(out)
    assert report.ok and re.search(r"demos written\s+(\d+)", stdout).group(1) == str(report.episodes)


@pytest.mark.sim
def test_a_folder_that_cannot_be_written_is_refused_before_the_simulator(tmp_path):
    """A read-only place (a read-only tmpfs mounted by root) is named in one line, exit 2, in seconds."""
    ro = tmp_path / "ro"
    ro.mkdir()
    mount_tmpfs(ro, "ro,size=1m")
    try:
        start = time.monotonic()
        proc = run_scripted("--num_envs", "1", "--num_demos", "1", "--output", str(ro / "demos" / "scripted_x.hdf5"))
        took = time.monotonic() - start
    finally:
        umount(ro)
    assert f"{ro}: not writable" in _error_line(proc)
    assert "Completed setting up the environment" not in proc.stdout, f"the simulator started ({took:.0f} s)"


def _demo_arrays(path: Path) -> dict[str, bytes]:
    """Every demo's actions and frames, as bytes: what an append must leave as it was."""
    with L2File(path, guard=False) as f:
        return {
            f"{d}/{k}": f.data[d][k][()].tobytes()
            for d in f.demos
            for k in ("actions", "obs/table_cam", "obs/wrist_cam")
        }


@pytest.mark.sim
def test_a_full_disk_ends_collection_in_one_line_and_keeps_the_demos(scripted_run, tmp_path):
    """Appending camera demos to a file on a nearly full filesystem: a warning before the simulator starts, then
    one line when the disk cannot take the next demo (naming the free space and what the file holds), exit 2, the
    old demos unchanged, the file valid, no spool left. A collection into a new file on a 1 MB filesystem (here
    an evaluation's --record) leaves nothing."""
    src = scripted_run[0]
    disk = tmp_path / "disk"
    disk.mkdir()
    mount_tmpfs(disk, f"size={src.stat().st_size + (3 << 20)}")
    try:
        out = disk / src.name
        out.write_bytes(src.read_bytes())
        before = _demo_arrays(out)
        proc = run_scripted("--num_envs", "2", "--workers", "1", "--num_demos", "20", "--output", str(out), "--append")
        line = _error_line(proc)
        assert re.match(rf"error: {re.escape(str(out))}: no space left on device \(\d+\.\d MB free on that ", line)
        kept = re.search(rf"{out.name} intact: (\d+) demos", line)
        assert kept and line.endswith("the episodes in flight were not written"), line
        assert any(x.startswith(f"warning: {out}: ") and "may take up to" in x for x in proc.stderr.splitlines())
        report = validate_file(out)
        assert report.ok and report.episodes == int(kept.group(1)) >= len(before) // 3
        after = _demo_arrays(out)
        assert {k: after[k] for k in before} == before
        assert _leftovers(disk, out) == []
    finally:
        umount(disk)

    mount_tmpfs(disk, "size=1m")
    try:
        record = disk / "policy_lift_cube.hdf5"
        proc = run_cli("-m", "l2.evaluate", "--episodes", "4", "--num_envs", "2", "--record", str(record))
        line = _error_line(proc)
        assert (
            line.startswith(f"error: {record}: no space left on device (")
            and "policy_lift_cube.hdf5: not written" in line
        )
        assert os.listdir(disk) == []
    finally:
        umount(disk)


@pytest.fixture
def full_disk(tmp_path):
    """A 1 MB filesystem, and L2 files (both cameras, 224x224) too big to be converted or merged onto it."""
    disk = tmp_path / "disk"
    disk.mkdir()
    data = make_l2_file(tmp_path / "scripted_lift_cube.hdf5", 12, camera=True, length=80, frame_size=(224, 224))
    mount_tmpfs(disk, "size=1m")
    yield disk, data
    umount(disk)


def _error_line(proc: subprocess.CompletedProcess) -> str:
    """The one ``error:`` line of a run that exited 2 without a traceback (Warp may print a notice on import)."""
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert proc.returncode == 2 and len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return errors[0]


def test_a_full_disk_ends_conversion_and_merge_in_error_line(full_disk):
    disk, data = full_disk
    before = hashlib.sha256(data.read_bytes()).hexdigest()
    out = disk / "lift_cube_gr00t"
    line = _error_line(run_cli("l3/convert.py", str(data), "--config", "config/lift_cube.yaml", "-o", str(out)))
    assert line.startswith(f"error: {out}: no space left on device (") and line.endswith("; no output written")
    merged = disk / "merged.hdf5"
    line = _error_line(run_cli("-m", "l2.tools.merge", str(data), "-o", str(merged)))
    assert line.startswith(f"error: {merged}: no space left on device (") and "the inputs are untouched" in line
    assert os.listdir(disk) == []  # no temporary folder or file left
    filler = disk / "filler"
    filler.write_bytes(b"\0" * (atomic.free_bytes(disk) - (16 << 10)))  # 16 KB left
    report = disk / "report.html"
    line = _error_line(run_cli("-m", "l2.tools.inspect_demos", str(data), "-o", str(report), "--quiet"))
    assert line.startswith(f"error: {report}: no space left on device (") and line.endswith("; no report written")
    assert os.listdir(disk) == ["filler"]
    assert hashlib.sha256(data.read_bytes()).hexdigest() == before


def test_split_on_a_full_disk_or_a_read_only_file_leaves_the_file_as_it_was(tmp_path):
    """A split writes a copy of the file with its filter keys and renames it into place: without room for the
    copy it says so in one line, and the file is byte-identical, with nothing beside it."""
    disk = tmp_path / "disk"
    disk.mkdir()
    data = make_l2_file(tmp_path / "scripted_lift_cube.hdf5", 12, camera=True, length=40, frame_size=(224, 224))
    mount_tmpfs(disk, f"size={data.stat().st_size + (512 << 10)}")
    try:
        target = disk / data.name
        target.write_bytes(data.read_bytes())
        before = hashlib.sha256(target.read_bytes()).hexdigest()
        line = _error_line(run_cli("-m", "l2.tools.split", str(target)))
        assert line.startswith(f"error: {target}: no space left on device (") and "file is untouched" in line
        assert os.listdir(disk) == [target.name] and hashlib.sha256(target.read_bytes()).hexdigest() == before
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        line = _error_line(run_cli("-m", "l2.tools.split", str(target)))
        assert line == f"error: {target}: not writable"
    finally:
        umount(disk)


def test_sigterm_ends_a_merge_with_nothing_left(tmp_path):
    """SIGTERM while demos are being copied: one line, exit 143, the temporary file removed, inputs untouched."""
    data = make_l2_file(tmp_path / "scripted_lift_cube.hdf5", 12, camera=True, length=80, frame_size=(224, 224))
    copy = tmp_path / "scripted_copy.hdf5"
    copy.write_bytes(data.read_bytes())
    before = hashlib.sha256(data.read_bytes()).hexdigest()
    out = tmp_path / "out" / "merged.hdf5"
    out.parent.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "l2.tools.merge", str(data), str(copy), "-o", str(out)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    while not list(out.parent.glob(f".{out.name}.*.merging")):  # copying has begun
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 143, stderr[-2000:]
    assert stderr.strip().splitlines()[-1] == (
        "error: interrupted by SIGTERM; no output written; the inputs are untouched"
    )
    assert os.listdir(out.parent) == [] and hashlib.sha256(data.read_bytes()).hexdigest() == before


def test_a_shard_whose_collector_refuses_is_not_retried(tmp_path):
    """A distributed worker whose collector ends with a one-line error (exit 2: a full disk, a file in use) stops
    at once and hands that line to the driver, which exits 2; a crash (another status) is retried."""
    from l2.recording.shards import ShardSpec, run_shard

    log = tmp_path / "shard_0.log"
    refuse = "import sys; print('error: shard_0.hdf5: no space left on device (0.0 MB free)'); sys.exit(2)"
    spec = ShardSpec(0, str(tmp_path / "shard_0.hdf5"), 3, 0, ["-c", refuse], restarts=2, log=str(log))
    result = run_shard(spec)
    assert result.refused and result.runs == 1
    assert result.error == f"shard 0: shard_0.hdf5: no space left on device (0.0 MB free) (log: {log})"
    crash = ShardSpec(0, str(tmp_path / "shard_0.hdf5"), 3, 0, ["-c", "raise SystemExit(1)"], restarts=2, log=str(log))
    result = run_shard(crash)
    assert not result.refused and result.runs == 3 and "without a new one" in result.error


def test_sigterm_ends_conversion_with_nothing_left(tmp_path):
    """SIGTERM while episodes are being written: one line, exit 143, the temporary folder removed."""
    data = make_l2_file(tmp_path / "scripted_lift_cube.hdf5", 12, camera=True, length=80, frame_size=(224, 224))
    out = tmp_path / "out" / "lift_cube_gr00t"
    proc = subprocess.Popen(
        [sys.executable, "l3/convert.py", str(data), "--config", "config/lift_cube.yaml", "-o", str(out)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 300
    while not list(out.parent.glob(f".{out.name}.*/data/*/*.parquet")):  # writing has begun
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1][-2000:]
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=300)
    assert (
        proc.returncode == 143 and stderr.strip().splitlines()[-1] == "error: interrupted by SIGTERM; no output written"
    )
    assert os.listdir(out.parent) == []
