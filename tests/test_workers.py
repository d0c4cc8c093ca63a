"""One collection over several collector processes (``--workers``, l2.recording.workers): the resolution of
``auto``, the arguments each collector gets, and real runs that merge their shards into the one output file, are
continued with ``--append``, survive a killed collector and resume after a killed driver; a second run on an output
in use is refused; ``--keep-failed``, ``--max_attempts``, ``--append`` and ``--overwrite`` as in one process."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import pytest
from conftest import REPO, SCRIPTED_RUN, run_scripted

from l2.format.l2file import L2File
from l2.format.locks import LOCK, in_use, lock_holder
from l2.format.validate import validate_file
from l2.recording import workers
from l2.recording.shards import count_demos
from l2.scripted.run import parse_args

STATE = ("--num_envs", "2", "--num_demos", "4", "presets=no_cameras")
"""2 collectors x 1 env x 2 state-only demos: the smallest run with two shards."""
SIM_STARTED = "Completed setting up the environment"
"""What Isaac Lab prints once an env is built."""


def _demo_digests(path: Path) -> list[str]:
    """One digest per demo over every dataset's bytes and every attribute, in demo order."""
    out = []
    with h5py.File(path, "r") as f:
        for name in sorted(f["data"], key=lambda n: int(n.split("_")[1])):
            h = hashlib.sha256()

            def visit(key, obj, h=h):
                h.update(key.encode())
                for a in sorted(obj.attrs):
                    h.update(f"{a}={obj.attrs[a]!r}".encode())
                if isinstance(obj, h5py.Dataset):
                    h.update(obj[()].tobytes())

            visit(name, f["data"][name])
            f["data"][name].visititems(visit)
            out.append(h.hexdigest())
    return out


def _attrs(path: Path) -> tuple[dict, list[set[str]], dict]:
    with L2File(path, guard=False) as f:
        layout = f.obs_layout()
        keys = [set(f.group(n).attrs) for n in f.demos]
        return f.env_args, keys, layout


def test_auto_is_one_per_core_within_envs_and_demos(monkeypatch):
    monkeypatch.setattr(workers, "usable_cores", lambda: 4)
    assert workers.count(parse_args(["--num_envs", "16", "--num_demos", "10"])) == 4
    assert workers.count(parse_args(["--num_envs", "2", "--num_demos", "10"])) == 2
    assert workers.count(parse_args(["--num_envs", "16", "--num_demos", "3"])) == 3
    assert workers.count(parse_args(["--device", "cuda"])) == 1  # one process per GPU
    assert workers.count(parse_args(["--log_actions", "a.npz"])) == 1  # one file per run
    assert workers.count(parse_args(["--episodes", "8"])) == 1
    assert workers.count(parse_args(["--workers", "1"])) == 1
    assert workers.count(parse_args(["--workers", "3", "--num_envs", "3"])) == 3


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--workers", "3", "--num_envs", "2"], "--workers 3: each collector needs at least one env and one demo"),
        (["--workers", "2", "--log_actions", "a.npz"], "--workers 2: --log_actions writes one file per run"),
    ],
)
def test_a_count_that_cannot_be_honoured_is_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        workers.count(parse_args(argv))
    assert exit_.value.code == 2 and capsys.readouterr().err.startswith(f"error: {message}")


def test_each_collector_gets_the_users_arguments_again():
    args = parse_args(["--num_envs", "8", "--keep-failed", "--seed", "7", "--task", "T", "presets=variety", "a.b=1"])
    argv = workers.command_line(args._parser, args, workers.PER_SHARD)
    assert argv == ["presets=variety", "a.b=1", "--task", "T", "--keep-failed"]
    again = parse_args(["--num_envs", "4", *argv])
    assert vars(again) | {"_parser": None} == vars(args) | {"num_envs": 4, "seed": 42, "_parser": None}


def test_the_overrides_are_not_read_as_values_of_an_option_of_several(tmp_path):
    """Mimic's ``--demos A B`` takes every value up to the next option: the overrides go first, the per-collector
    options last (``--output`` ...), so a collector gets its demos and overrides as the user gave them."""
    from l2.mimic.run import parse_args as mimic_args

    source = tmp_path / "in.hdf5"
    source.write_bytes(b"")
    args = mimic_args(["--input", str(source), "--demos", "demo_2", "demo_3", "--num_demos", "2", "presets=variety"])
    argv = workers.command_line(args._parser, args, workers.PER_SHARD)
    again = mimic_args([*argv, "--output", "shard_0.hdf5", "--num_demos", "1"])
    assert (again.demos, again.overrides) == (["demo_2", "demo_3"], ["presets=variety"])


def test_an_existing_output_is_refused_before_any_collector_starts(tmp_path):
    out = tmp_path / "scripted_lift_cube.hdf5"
    out.write_bytes(b"not touched")
    r = run_scripted(*STATE, "--workers", "2", "--output", str(out))
    assert r.returncode == 2 and r.stderr.strip().splitlines()[-1] == (
        f"error: {out} exists; pass --append to add demos or --overwrite to replace it"
    )
    assert out.read_bytes() == b"not touched" and sorted(os.listdir(tmp_path)) == [out.name]


@pytest.mark.sim
def test_two_workers_write_one_file_like_one_and_append_continues_it(tmp_path):
    out, one = tmp_path / "scripted_lift_cube.hdf5", tmp_path / "one" / "scripted_lift_cube.hdf5"
    r = run_scripted(*STATE, "--workers", "2", "--output", str(out))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "4 envs" not in r.stdout and "(2 envs in 2 processes, cpu)" in r.stdout
    assert sorted(os.listdir(tmp_path)) == [out.name]  # the shards' folder is gone
    report = validate_file(out)
    assert report.ok and report.episodes == 4, [str(v) for v in report.violations]

    r = run_scripted(
        "--num_envs", "2", "--num_demos", "1", "--workers", "1", "--output", str(one), "presets=no_cameras"
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (env_args, keys, layout), (env_args_1, keys_1, layout_1) = _attrs(out), _attrs(one)
    assert env_args == env_args_1 and layout == layout_1 and all(k == keys_1[0] for k in keys)
    with L2File(out, guard=False) as f:
        seeds = [int(f.group(n).attrs["seed"]) for n in f.demos]
    assert len(set(seeds)) == 2  # one per shard

    before = _demo_digests(out)
    # Demos with cameras cannot join these: each collector checks the file's obs terms before its first step.
    r = run_scripted(*STATE[:2], "--num_demos", "2", "--output", str(out), "--append")
    assert r.returncode == 2, r.stdout[-3000:] + r.stderr[-3000:]
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: {out}: cannot append: this run records table_cam[224x224x3] uint8, wrist_cam[224x224x3] uint8, "
        "which its demos do not (write to another file, or --overwrite)"
    ]
    assert _demo_digests(out) == before and sorted(os.listdir(tmp_path)) == sorted([out.name, "one"])

    r = run_scripted(*STATE[:2], "--num_demos", "2", "--output", str(out), "--append", "presets=no_cameras")
    assert r.returncode == 0 and "2 (file now holds 6)" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]
    assert validate_file(out).ok and _demo_digests(out)[:4] == before  # the first four as they were
    with L2File(out, guard=False) as f:
        new = {int(f.group(n).attrs["seed"]) for n in f.demos[4:]}
    assert len(new) == 2 and not new & set(seeds)  # an appended run does not repeat the file's demos


def _collector_pids(folder: Path) -> dict[int, int]:
    """Shard index -> pid of the collector process writing that shard of ``folder``."""
    out = {}
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        for k in range(2):
            if str(folder / f"shard_{k}.hdf5").encode() in argv and b"--output" in argv:
                out[k] = int(proc.name)
    return out


def _wait_for(condition, what: str, proc: subprocess.Popen, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, f"the run ended before {what}: {proc.communicate()[0][-3000:]}"
        assert time.monotonic() < deadline, f"no {what} after {timeout} s"
        time.sleep(0.2)


def _shard_demos(folder: Path, k: int) -> int:
    try:
        return count_demos(folder / f"shard_{k}.hdf5")
    except Exception:  # noqa: BLE001  read while its collector writes: ask again
        return 0


@pytest.mark.sim
def test_a_killed_collector_loses_only_its_episode_and_a_killed_run_resumes(tmp_path):
    """kill -9 of shard_1's collector after its first demo: it is started again and continues its shard. Then
    kill -9 of the driver: its collectors die with it, the shards stay; the same command resumes them and ends with
    exactly N valid demos."""
    out = tmp_path / "scripted_lift_cube.hdf5"
    folder = workers.shard_folder(out)
    # 4 demos a shard: shard_1 is still short of its share when the driver is killed after its second demo.
    cmd = [sys.executable, str(SCRIPTED_RUN), *STATE[:2], "--num_demos", "8", "--workers", "2", "--output", str(out)]
    cmd.append("presets=no_cameras")
    driver = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _wait_for(lambda: _shard_demos(folder, 1) >= 1 and 1 in _collector_pids(folder), "shard_1's first demo", driver)
        os.kill(_collector_pids(folder)[1], signal.SIGKILL)
        _wait_for(lambda: _shard_demos(folder, 1) >= 2, "a demo of the restarted collector", driver)
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(timeout=60)
    finally:
        if driver.poll() is None:
            driver.kill()
    deadline = time.monotonic() + 60
    shards = [folder / f"shard_{k}.hdf5" for k in range(2)]
    # They die with their driver; a killed process lets go of its file lock last, after its memory.
    while (_collector_pids(folder) or any(in_use(s) for s in shards)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _collector_pids(folder) and not any(in_use(s) for s in shards), "the collectors outlived their driver"
    kept = [_shard_demos(folder, k) for k in range(2)]
    assert not out.exists() and 2 <= kept[1] < 4, (kept, out.exists())
    for k in range(2):
        report = validate_file(folder / f"shard_{k}.hdf5") if kept[k] else None
        assert report is None or report.ok, [str(v) for v in report.violations]

    r = run_scripted(*cmd[2:])
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert f"note: resuming the stopped run in {folder} ({sum(kept)} demos in its shards)" in r.stdout
    report = validate_file(out)
    assert report.ok and report.episodes == 8 and not folder.exists()
    with L2File(out, guard=False) as f:
        seeds = [int(f.group(n).attrs["seed"]) for n in f.demos]
    assert len(set(seeds)) >= 3  # shard_1 went on under a new seed after its collector was killed
    assert len(set(_demo_digests(out))) == 8  # no demo twice


@pytest.mark.sim
def test_ctrl_c_stops_every_collector_and_keeps_the_demos_written(tmp_path):
    out = tmp_path / "scripted_lift_cube.hdf5"
    folder = workers.shard_folder(out)
    cmd = [sys.executable, str(SCRIPTED_RUN), *STATE[:2], "--num_demos", "40", "--workers", "2", "--output", str(out)]
    driver = subprocess.Popen([*cmd, "presets=no_cameras"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for(lambda: _shard_demos(folder, 0) + _shard_demos(folder, 1) >= 1, "a demo", driver)
        driver.send_signal(signal.SIGINT)
        stdout, stderr = (s.decode() for s in driver.communicate(timeout=300))
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == 130, stdout[-2000:] + stderr[-3000:]
    assert "SIGINT: every process stops after its step" in stdout and "interrupted      by SIGINT" in stdout
    report = validate_file(out)
    assert report.ok and 1 <= report.episodes < 40 and f"demos written    {report.episodes}" in stdout
    assert not folder.exists() and not _collector_pids(folder)


@pytest.mark.sim
def test_an_evaluation_in_two_processes_gives_one_report_and_one_recording(tmp_path):
    """``python -m l2.evaluate --workers 2``: process k runs the k-th block of episodes; one report lists every
    episode once, env ids numbered across the processes; the recorded rollouts are merged into the one file."""
    report, record = tmp_path / "eval.json", tmp_path / "policy_lift_cube.hdf5"
    cmd = [sys.executable, "-m", "l2.evaluate", "--episodes", "4", "--num_envs", "4", "--workers", "2"]
    cmd += ["--report", str(report), "--record", str(record), "presets=no_cameras"]
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "(4 envs in 2 processes, cpu)" in r.stdout
    doc = json.loads(report.read_text())
    assert doc["workers"] == 2 and doc["episodes"] == 4 and doc["num_envs"] == 4
    assert sorted((e["episode"], e["env"]) for e in doc["per_episode"]) == [(0, 0), (1, 1), (2, 2), (3, 3)]
    recorded = validate_file(record)
    assert recorded.ok and recorded.episodes == doc["successes"] >= 1
    with L2File(record, guard=False) as f:
        assert {f.group(n).attrs["source"] for n in f.demos} == {"policy"}
    assert sorted(os.listdir(tmp_path)) == sorted([report.name, record.name])  # no shards left


# --------------------------------------------------------------------------- an output in use


@pytest.fixture
def holder(tmp_path):
    """A process that holds a folder as a run does (``l2.format.locks.hold_folder``) until the test ends: call it
    with the folder, get the pid."""
    procs = []

    def hold(folder: Path) -> int:
        code = "import sys; from l2.format.locks import hold_folder; print(hold_folder(sys.argv[1]), flush=True); "
        code += "sys.stdin.read()"
        proc = subprocess.Popen(
            [sys.executable, "-c", code, str(folder)],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        procs.append(proc)
        assert proc.stdout.readline().strip() == "None"  # held
        return proc.pid

    yield hold
    for proc in procs:
        proc.communicate(input="")


def _the_error_line(r: subprocess.CompletedProcess) -> str:
    lines = [line for line in r.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stdout[-2000:] + r.stderr[-3000:]
    return lines[0]


RL_ROLLOUT = REPO / "l2" / "rl" / "rollout.py"
HELD = {
    # what: (the collector's arguments before --output, or "ray" / "mimic", the file's name)
    "scripted --workers 1": ([str(SCRIPTED_RUN), "--workers", "1"], "scripted_lift_cube.hdf5"),
    "scripted --workers auto": ([str(SCRIPTED_RUN), "--num_envs", "2", "--num_demos", "2"], "scripted_lift_cube.hdf5"),
    "scripted --workers 2 --append": ([str(SCRIPTED_RUN), *STATE[:2], "--workers", "2", "--append"], "scripted_x.hdf5"),
    "rl --workers auto": ([str(RL_ROLLOUT), "--num_envs", "2", "--num_demos", "2"], "rl_lift_cube.hdf5"),
    "teleop replay": (
        ["l2/teleop/run.py", "--teleop_device", "replay", "--trace", "config/teleop/lift_cube_trace.json"],
        "teleop_lift_cube.hdf5",
    ),
    "mimic --workers auto": (["-m", "l2.mimic", "--num_envs", "2", "--num_demos", "2"], "mimic_lift_cube.hdf5"),
    "l2.distributed (Ray)": (
        ["-m", "l2.distributed", "--source", "scripted", "--num_demos", "2", "--workers", "2"],
        "",
    ),
}


@pytest.mark.parametrize("what", list(HELD))
def test_an_output_in_use_is_refused_before_any_simulator(what, tmp_path, holder):
    """While a run holds an output (a ``--workers`` driver its shard folder, a one-process run its output, an
    ``l2.distributed`` driver its DIR), any other collector on it is refused in one line naming the holder's pid,
    exit 2, before a simulator starts, touching nothing."""
    from l3_fixtures import make_l2_file

    argv, name = HELD[what]
    out = tmp_path / (name or "scripted_lift_cube")
    folder = out if not name else workers.shard_folder(out)
    pid = holder(folder)
    extra = []
    if "mimic" in what:
        extra = ["--input", str(make_l2_file(tmp_path / "in" / "scripted_lift_cube.hdf5", 1))]
    before = sorted(p.name for p in tmp_path.rglob("*"))
    r = subprocess.run(
        [sys.executable, *argv, "--output", str(out), *extra, "presets=no_cameras"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    message = "wait for it to end" if not name else "to collect in parallel use python -m l2.distributed"
    line = _the_error_line(r)
    assert r.returncode == 2 and line.startswith(f"error: {out}: in use by another process (pid {pid}); {message}")
    assert SIM_STARTED not in r.stdout and "resuming" not in r.stdout
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


@pytest.mark.sim
def test_a_second_driver_on_a_file_in_use_is_refused_and_the_first_keeps_its_demos(tmp_path):
    """Two drivers with ``--workers auto`` on one file: the second (as given, and with ``--append``) is refused in
    one line naming the first's pid (exit 2, no traceback), never resumes the first's shards; the first, stopped
    with Ctrl-C, writes every demo of its shards into the file once."""
    out = tmp_path / "scripted_lift_cube.hdf5"
    folder = workers.shard_folder(out)
    cmd = [*STATE[:2], "--num_demos", "40", "--output", str(out), "presets=no_cameras"]
    err = tmp_path / "first.stderr"  # a file, not a pipe: its progress bar must never block it
    with open(err, "w") as stderr_file:
        first = subprocess.Popen(
            [sys.executable, str(SCRIPTED_RUN), *cmd], cwd=REPO, stdout=subprocess.PIPE, stderr=stderr_file, text=True
        )
    try:
        _wait_for(lambda: lock_holder(folder / LOCK) == first.pid, "the first driver's lock", first)
        for again in ([], ["--append"]):
            r = run_scripted(*cmd, *again)
            line = _the_error_line(r)
            assert r.returncode == 2 and line.startswith(f"error: {out}: in use by another process (pid {first.pid})")
            assert "resuming" not in r.stdout and SIM_STARTED not in r.stdout
        _wait_for(lambda: _shard_demos(folder, 0) + _shard_demos(folder, 1) >= 1, "a demo", first)
        first.send_signal(signal.SIGINT)
        stdout = first.communicate(timeout=600)[0]
    finally:
        if first.poll() is None:
            first.kill()
    stderr = err.read_text()
    assert first.returncode == 130 and "Traceback" not in stderr, stdout[-2000:] + stderr[-3000:]
    report = validate_file(out)
    assert report.ok and report.episodes >= 1 and f"demos written    {report.episodes}" in stdout
    assert len(set(_demo_digests(out))) == report.episodes  # each once
    assert sorted(os.listdir(tmp_path)) == sorted([out.name, err.name])


# --------------------------------------------------------------------------- flags as in one process


def test_a_shard_runs_no_more_episodes_than_its_share(tmp_path):
    """A shard's ``max_attempts`` counts the episodes of all its collector runs: a run that used them up is not
    started again; a shard whose failed episodes are kept in a file is continued with ``--append``."""
    from l2.recording.shards import ShardSpec, run_shard

    shard = tmp_path / "shard_0.hdf5"
    failed = tmp_path / "shard_0_failed.hdf5"
    # The collector: writes the failed file, reports the episodes it was given as finished, exits 1 (short of demos).
    code = (
        "import json, sys; a = sys.argv; out = a[a.index('--output') + 1]; "
        "n = int(a[a.index('--max_attempts') + 1]); "
        "print('argv', ' '.join(a[1:])); open(out.replace('.hdf5', '_failed.hdf5'), 'a').close(); "
        "json.dump({'attempts': n, 'frames': 1, 'seconds': 1.0}, open(a[a.index('--stats-json') + 1], 'w')); "
        "sys.exit(1)"
    )
    log = tmp_path / "shard_0.log"
    result = run_shard(ShardSpec(0, str(shard), 2, 0, ["-c", code], restarts=3, log=str(log), max_attempts=5))
    assert result.exhausted and result.runs == 1 and result.attempts == 5 and failed.exists()
    assert "--max_attempts 5" in log.read_text() and "--append" not in log.read_text()
    # Killed before its stats: started again, with what is left, appending to its failed file.
    log.unlink()
    killed = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    result = run_shard(ShardSpec(0, str(shard), 2, 0, ["-c", killed], restarts=1, log=str(log), max_attempts=5))
    assert result.runs == 2 and not result.exhausted and log.read_text().count("--append") == 2


FAILING = ("--num_envs", "2", "--num_demos", "2", "--max_attempts", "4", "--keep-failed", "presets=no_cameras")
"""Episodes that time out at once (``env.episode_length_s=0.2``): every one fails, quickly."""


@pytest.mark.sim
@pytest.mark.parametrize("count", ["1", "2"])
def test_keep_failed_max_attempts_append_and_overwrite_as_in_one_process(count, tmp_path):
    """The same command with ``--workers 1`` and ``--workers 2`` writes the same files with the same counts and
    prints the same lines, naming the user's files: ``--max_attempts 4`` ends after 4 episodes (exit 1, "only 0 of 2
    demos"), ``--keep-failed`` keeps them in ``<stem>_failed.hdf5``, which a rerun refuses (naming it), ``--append``
    adds to and ``--overwrite`` replaces."""
    out = tmp_path / "scripted_lift_cube.hdf5"
    failed = tmp_path / "scripted_lift_cube_failed.hdf5"
    base = (*FAILING, "env.episode_length_s=0.2", "--workers", count, "--output", str(out))

    def run(*flags: str) -> tuple[str, int]:
        r = run_scripted(*base, *flags)
        assert r.returncode in (1, 2), r.stdout[-3000:] + r.stderr[-3000:]
        return _the_error_line(r), r.returncode

    assert run() == ("error: only 0 of 2 demos after 4 episodes", 1)
    assert not out.exists() and count_demos(failed) == 4 and validate_file(failed).ok
    assert sorted(os.listdir(tmp_path)) == [failed.name]  # no shards, no lock left
    assert run() == (f"error: {failed} exists; pass --append to add demos or --overwrite to replace it", 2)
    assert run("--append") == ("error: only 0 of 2 demos after 4 episodes", 1)
    assert count_demos(failed) == 8 and validate_file(failed).ok
    assert run("--overwrite") == ("error: only 0 of 2 demos after 4 episodes", 1)
    assert count_demos(failed) == 4 and sorted(os.listdir(tmp_path)) == [failed.name]
