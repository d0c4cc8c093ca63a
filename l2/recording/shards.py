"""Shards: one collection split over collector processes, each bringing its own L2 file (``shard_<k>.hdf5``) to
its share of the demos. What the local workers (:mod:`l2.recording.workers`) and the Ray driver
(:mod:`l2.distributed`) both run: the plan (targets, seeds, paths), :func:`run_shard` (a collector started,
restarted and resumed until its shard holds its share) and the counts read from the files."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from l2.format import schema
from l2.format.interrupts import StopRequest
from l2.format.l2file import L2File, L2FileError

REPO = Path(__file__).resolve().parents[2]
"""Where the collectors run (their scripts' paths are relative to it)."""


class ShardError(RuntimeError):
    """A problem to report in one line (exit status 2)."""


# --------------------------------------------------------------------------- plan


def shard_targets(num_demos: int, workers: int) -> list[int]:
    """Demos per shard: ``num_demos`` split over ``workers`` shards, the first ones taking the remainder."""
    return [num_demos // workers + (k < num_demos % workers) for k in range(workers)]


def shard_seed(seed: int, shard: int, have: int, restart: int = 0) -> int:
    """The env seed of a collector run for ``shard`` that starts with ``have`` demos in it (``restart``: how
    often this worker already started one without getting a demo). Distinct per shard and per resumed part,
    so a resumed shard never replays the episodes it already holds; derived from ``seed`` alone, so the same
    command collects the same demos."""
    import numpy as np

    return int(np.random.SeedSequence([seed, shard, have, restart]).generate_state(1)[0] >> 1)


def shard_path(output: Path, k: int) -> Path:
    return output / f"{schema.SHARD_PREFIX}{k}.hdf5"


def count_demos(path: Path) -> int:
    """Demos in an L2 file (0 when it does not exist or has no /data yet). Read without HDF5's file lock, so
    that the driver can poll a shard that its collector is writing; a read that catches it mid-write raises."""
    if not path.exists():
        return 0
    try:
        with L2File(path, guard=False, locking=False) as f:
            return len(f.demos)
    except L2FileError as exc:
        if exc.path == f"/{schema.DATA_GROUP}":
            return 0
        raise


def shard_seeds(path: Path) -> list[int]:
    """The seed recorded on each demo of a shard, in demo order."""
    with L2File(path, guard=False) as f:  # validated by its worker
        return [int(f.group(n).attrs[schema.ATTR_SEED]) for n in f.demos]


# --------------------------------------------------------------------------- worker


@dataclass
class ShardSpec:
    """What one worker does: bring ``path`` to ``target`` demos with the collector ``command``."""

    index: int
    path: str
    target: int
    seed: int
    command: list[str]
    """The collector and its fixed arguments; ``--output/--num_demos/--seed/--append`` are added per run."""
    restarts: int
    log: str
    cwd: str = str(REPO)
    """Where the collector runs (relative paths in ``command`` are relative to it)."""
    own_session: bool = False
    """Start the collector in a session of its own: a Ctrl-C at the terminal reaches only the driver, which passes
    it on once (see ``stop`` of :func:`run_shard`)."""
    threads: int | None = None
    """CPU threads the collector's OpenMP and torch may use (``OMP_NUM_THREADS``), when several share a machine."""
    max_attempts: int | None = None
    """Finished episodes the shard may take over all its collector runs (each run gets ``--max_attempts`` = what is
    left); None: each run its collector's default."""


@dataclass
class ShardResult:
    """What a worker did to its shard, for the summary."""

    index: int
    demos: int = 0
    new_demos: int = 0
    attempts: int = 0
    successes: int = 0
    frames: int = 0
    sim_seconds: float = 0.0
    """Seconds the collectors spent stepping (their env-frames/s is ``frames / sim_seconds``)."""
    process_seconds: float = 0.0
    """Wall seconds of the collector processes (start-up, env creation and stepping)."""
    runs: int = 0
    wall_seconds: float = 0.0
    """From the task's submission to its result reaching the driver (Ray's scheduling and worker start-up
    included)."""
    seeds: list[int] = field(default_factory=list)
    error: str | None = None
    refused: bool = False
    """The collector ended with a one-line error (exit status 2: a full disk, a file in use...): not retried."""
    exhausted: bool = False
    """The shard's collector runs finished its ``max_attempts`` episodes (short of its target, as one process would
    end)."""


def parent_death_signal():
    """``preexec_fn`` that makes the collector be killed when the worker that started it dies (Linux
    ``PR_SET_PDEATHSIG``), or None elsewhere. libc is loaded here, in the worker: between fork and exec the
    child only makes the call."""
    try:
        import ctypes

        prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(1, signal.SIGKILL)


def run_shard(
    spec: ShardSpec, report: Callable[[int, int], None] | None = None, stop: StopRequest | None = None
) -> ShardResult:
    """Bring one shard to its target: run the collector until the shard holds ``target`` demos.

    Reads the shard first: a complete one is left alone, a partial one is continued with ``--append``.
    A collector run that ends early (killed, crashed, too few successes) is started again, up to
    ``spec.restarts`` times in a row without a new demo, and never once the shard's ``spec.max_attempts`` episodes
    are finished. A shard with a file of failed episodes (``--keep-failed``) is continued with ``--append`` too.
    ``report(index, demos)`` hears the shard's demo count about once a second. Once ``stop`` is set (by a SIGINT or
    SIGTERM of the driver), the running collector gets that signal once (it stops after its step, keeping the demos it
    wrote) and no other is started.
    """
    path = Path(spec.path)
    result = ShardResult(spec.index)
    path.with_name(path.stem + ".creating.hdf5").unlink(missing_ok=True)  # a kill while the file was made
    have = _checked_count(path, spec.target)
    result.demos = have
    if report is not None:
        report(spec.index, have)
    polled = threading.Event()
    poller = threading.Thread(target=_poll, args=(path, spec.index, report, polled), daemon=True)
    if report is not None:
        poller.start()
    stalled = 0
    try:
        while have < spec.target and not stop:
            left = None if spec.max_attempts is None else spec.max_attempts - result.attempts
            if left is not None and left <= 0:
                result.exhausted = True
                break
            if stalled > spec.restarts:
                result.error = (
                    f"{path}: still {have} of {spec.target} demos after {stalled} collector runs "
                    f"without a new one (see {spec.log})"
                )
                break
            seed = shard_seed(spec.seed, spec.index, have, stalled)
            stats_file = path.with_name(f".{path.stem}.stats.json")
            stats_file.unlink(missing_ok=True)
            cmd = [
                sys.executable,
                *spec.command,
                "--output",
                str(path),
                "--num_demos",
                str(spec.target - have),
                "--seed",
                str(seed),
                "--stats-json",
                str(stats_file),
                *(["--max_attempts", str(left)] if left is not None else []),
            ]
            if path.exists() or path.with_name(path.stem + "_failed.hdf5").exists():
                cmd.append("--append")
            start = time.perf_counter()
            with open(spec.log, "a") as log:
                log.write(f"\n$ {' '.join(cmd)}\n")
                log.flush()
                collector = subprocess.Popen(
                    cmd,
                    cwd=spec.cwd,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    preexec_fn=parent_death_signal(),
                    start_new_session=spec.own_session,
                    env=thread_limit(spec.threads),
                )
                returncode = _wait(collector, stop)
            result.process_seconds += time.perf_counter() - start
            result.runs += 1
            if returncode == 2:  # the collector's own one-line error: another run would meet it again
                result.refused = True
                result.error = f"shard {spec.index}: {last_error(spec.log)} (log: {spec.log})"
            if stats_file.exists():  # absent when the collector was killed
                figures = json.loads(stats_file.read_text())
                stats_file.unlink()
                result.attempts += figures["attempts"]
                result.successes += figures.get("successes", 0)
                result.frames += figures["frames"]
                result.sim_seconds += figures["seconds"]
            now = _checked_count(path, spec.target)
            stalled = 0 if now > have else stalled + 1
            result.new_demos += now - have
            have = result.demos = now
            if result.refused:
                break
    finally:
        polled.set()
    if report is not None:
        report(spec.index, have)
    if path.exists():
        result.seeds = list(dict.fromkeys(shard_seeds(path)))
    return result


def thread_limit(threads: int | None) -> dict[str, str] | None:
    """The environment of a child process whose OpenMP and torch use at most ``threads`` threads (None: this one's).
    Processes that share the cores are each given their share: more threads than cores make OpenMP's waiting
    threads spin on cores the other processes need."""
    if threads is None:
        return None
    return {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}


def _wait(collector: subprocess.Popen, stop: StopRequest | None) -> int:
    """The collector's exit status; once ``stop`` is set, the collector gets its signal (once)."""
    if stop is None:
        return collector.wait()
    passed_on = False
    while True:
        try:
            return collector.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            if stop and not passed_on:
                with contextlib.suppress(ProcessLookupError):
                    collector.send_signal(stop.signum)
                passed_on = True


def last_error(log: str | os.PathLike) -> str:
    """The last ``error: ...`` line a collector wrote to its log (without the prefix)."""
    lines = [line for line in Path(log).read_text(errors="replace").splitlines() if line.startswith("error: ")]
    return lines[-1].removeprefix("error: ") if lines else "the collector exited with status 2"


def _checked_count(path: Path, target: int) -> int:
    """Demos in a shard that is a valid L2 file (a collector's files are valid after any kill)."""
    if not path.exists():
        return 0
    from l2.format.journal import recover
    from l2.format.validate import validate_file

    recover(path, wait=30.0)  # no collector writes it now; one killed a moment ago may still hold its lock
    report = validate_file(path)
    if not report.ok:
        raise ShardError(f"{path}: not a valid L2 file ({report.violations[0]}); move it away to redo it")
    have = count_demos(path)
    if have > target:
        raise ShardError(f"{path}: holds {have} demos, more than its share {target}")
    return have


def _poll(path: Path, index: int, report: Callable[[int, int], None], stop: threading.Event) -> None:
    while not stop.wait(1.0):
        with contextlib.suppress(Exception):  # a read that caught the file mid-write: the next poll reads it
            report(index, count_demos(path))
