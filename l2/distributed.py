"""Collect lift-cube demonstrations on a Ray cluster: K workers, one collector process and one shard each.

Each worker is a Ray task that runs a collector (``l2/scripted/run.py``, ``l2/rl/rollout.py`` or a teleop
trace replay, ``l2/teleop/run.py``) in its own process, one simulator per process as Isaac Lab requires,
writing ``DIR/shard_<k>.hdf5``: a plain L2 file (``python -m l2.format.validate``), every demo recording the seed
it was collected with. The N demos are split over the shards; a shard that already holds its share is
kept, a partial one (a killed worker's: each episode is flushed as it is written) is continued with
``--append`` under a new seed, a missing one is collected again. Rerunning the same command therefore
resumes, and a collector killed mid-run loses at most its in-flight episode: the worker starts it again
(``--restarts``), and Ray retries a worker whose own process dies.

Name DIR after the source (``scripted_lift_cube/``): ``l3/convert.py DIR`` tags shards by their folder.

Examples::

    python -m l2.distributed --source scripted --num_demos 100 --workers 2 --output data/scripted_lift_cube
    python -m l2.distributed --source rl --num_demos 1000 --workers 8 --num_envs 64 --device cuda \\
        --address auto --output /shared/demos/rl_lift_cube
    python -m l2.distributed --source teleop-replay --num_demos 4 --workers 2 --output data/teleop_lift_cube
"""

from __future__ import annotations

import argparse
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

from l2.format import atomic, schema
from l2.format.interrupts import StopRequest
from l2.format.l2file import L2File, L2FileError

REPO = Path(__file__).resolve().parents[1]
COLLECTORS = {
    "scripted": ["l2/scripted/run.py", "--workers", "1"],
    "rl": ["l2/rl/rollout.py", "--workers", "1"],
    "teleop-replay": ["l2/teleop/run.py", "--teleop_device", "replay"],
}
"""The collector of each source, run as ``python <script> <args>`` from the repository root (one process each:
the Ray workers are the parallelism)."""
SOURCE_TAGS = {"scripted": "scripted", "rl": "rl", "teleop-replay": "teleop"}
DEFAULT_TRACE = "config/teleop/lift_cube_trace.json"
MANIFEST = "distributed.json"
"""What a collection in DIR is (source, N, K, seed, task): a rerun must ask for the same."""
LOGS = "logs"


class DistributedError(RuntimeError):
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
        raise DistributedError(f"{path}: not a valid L2 file ({report.violations[0]}); move it away to redo it")
    have = count_demos(path)
    if have > target:
        raise DistributedError(f"{path}: holds {have} demos, more than its share {target}")
    return have


def _poll(path: Path, index: int, report: Callable[[int, int], None], stop: threading.Event) -> None:
    while not stop.wait(1.0):
        with contextlib.suppress(Exception):  # a read that caught the file mid-write: the next poll reads it
            report(index, count_demos(path))


class Progress:
    """Demo count per shard, set by the workers and read by the driver (a Ray actor)."""

    def __init__(self):
        self.counts: dict[int, int] = {}

    def set(self, index: int, count: int) -> None:
        self.counts[index] = count

    def get(self) -> dict[int, int]:
        return dict(self.counts)


@dataclass
class ActorReport:
    """``report`` of :func:`run_shard` inside a Ray task: passes the counts on to the :class:`Progress` actor."""

    actor: object

    def __call__(self, index: int, count: int) -> None:
        self.actor.set.remote(index, count)


# --------------------------------------------------------------------------- driver


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from l2.format import cli_args
    from l2.recording import cli, sim  # not at the top: the Ray workers import this module

    parser = cli.runner_parser(__doc__, "python -m l2.distributed")
    parser.prog = "python -m l2.distributed"
    parser.add_argument("--source", required=True, choices=sorted(COLLECTORS), help="which collector the workers run")
    parser.add_argument(
        "--num_demos", type=cli_args.positive_int, required=True, help="successful demos in total, over all shards"
    )
    parser.add_argument(
        "--workers", type=cli_args.positive_int, required=True, help="workers = shards (one collector process each)"
    )
    parser.add_argument(
        "--output",
        type=cli_args.output_folder,
        required=True,
        metavar="DIR",
        help="folder of the shards (DIR/shard_<k>.hdf5), on storage every worker sees; name it "
        "after the source, e.g. data/scripted_lift_cube, so that l3/convert.py tags it",
    )
    parser.add_argument(
        "--address",
        default=None,
        help="Ray cluster to join (e.g. auto, or HEAD_IP:6379); default: start a local Ray "
        "instance with one CPU per core",
    )
    parser.add_argument(
        "--num_envs",
        type=cli_args.positive_int,
        default=None,
        help="parallel envs per worker (default: 4; 1 for teleop-replay)",
    )
    parser.add_argument(
        "--device",
        type=sim.device_arg,
        default="cpu",
        help="cpu, or cuda: each worker then asks Ray for one GPU (default: %(default)s)",
    )
    parser.add_argument(
        "--seed",
        type=cli_args.seed,
        default=42,
        help="base seed; shard k's runs get distinct seeds derived from it (default: %(default)s)",
    )
    parser.add_argument("--task", default=None, help="gym id (default: the collector's)")
    parser.add_argument(
        "--checkpoint",
        type=cli_args.existing_file,
        default=None,
        help="rl: the policy checkpoint (default: the shipped one)",
    )
    parser.add_argument(
        "--trace",
        default=DEFAULT_TRACE,
        help="teleop-replay: the device trace to replay (default: %(default)s); it fixes the seed, so "
        "every replay gives the same demo",
    )
    parser.add_argument(
        "--restarts",
        type=cli_args.non_negative_int,
        default=3,
        help="collector runs a worker starts again in a row without a new demo (default: %(default)s)",
    )
    parser.add_argument(
        "--cpus_per_worker",
        type=cli_args.positive_float,
        default=1.0,
        help="CPUs Ray reserves per worker (default: %(default)s)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "overrides",
        nargs="*",
        type=sim.override_arg,
        metavar="KEY=VALUE",
        help="Isaac Lab cfg overrides for the collectors, e.g. presets=no_cameras",
    )
    args = parser.parse_args(argv)
    if args.num_demos < 1 or args.workers < 1:
        parser.error("--num_demos and --workers must be >= 1")
    if args.workers > args.num_demos:
        parser.error(f"--workers {args.workers} is more than --num_demos {args.num_demos}: a shard would be empty")
    if args.num_envs is None:
        args.num_envs = 1 if args.source == "teleop-replay" else 4
    if args.source == "teleop-replay" and args.num_envs != 1:
        parser.error("teleop-replay drives one env (--num_envs 1)")
    return args


def collector_command(args: argparse.Namespace) -> list[str]:
    cmd = [*COLLECTORS[args.source], "--num_envs", str(args.num_envs), "--device", args.device]
    if args.task:
        cmd += ["--task", args.task]
    if args.source == "rl" and args.checkpoint:
        cmd += ["--checkpoint", str(Path(args.checkpoint).resolve())]
    if args.source == "teleop-replay":
        cmd += ["--trace", str(Path(args.trace).resolve())]
    return cmd + list(args.overrides)


def _manifest(args: argparse.Namespace) -> dict:
    return {
        "source": args.source,
        "num_demos": args.num_demos,
        "workers": args.workers,
        "seed": args.seed,
        "task": args.task,
        "overrides": list(args.overrides),
    }


def prepare_output(args: argparse.Namespace) -> Path:
    """The output folder with its manifest; a rerun must be the same collection (else one-line error)."""
    output = Path(args.output)
    manifest = output / MANIFEST
    want = _manifest(args)
    if manifest.exists():
        have = json.loads(manifest.read_text())
        diff = [f"{k} {have.get(k)!r} (asked: {v!r})" for k, v in want.items() if have.get(k) != v]
        if diff:
            raise DistributedError(
                f"{manifest}: {output} holds another collection: " + ", ".join(diff) + "; use another --output"
            )
    else:
        extra = sorted(p.name for p in output.glob("*.hdf5")) if output.is_dir() else []
        if extra:
            raise DistributedError(f"{output}: holds {extra[0]} but no {MANIFEST}: not a distributed collection")
        (output / LOGS).mkdir(parents=True, exist_ok=True)
        atomic.write_text(manifest, json.dumps(want, indent=2) + "\n")
    (output / LOGS).mkdir(exist_ok=True)
    tag = schema.source_from_filename(output.resolve().name)
    if tag != SOURCE_TAGS[args.source]:
        print(
            f"note: l3/convert.py will tag these shards {tag!r} (from the folder name {output.resolve().name!r}); "
            f"name the folder {SOURCE_TAGS[args.source]}_<name> or pass it --source "
            f"{SOURCE_TAGS[args.source]}='{output}/*'",
            file=sys.stderr,
        )
    for path in output.glob(f"{schema.SHARD_PREFIX}*.hdf5"):
        index = path.stem[len(schema.SHARD_PREFIX) :]
        if index.isdigit() and int(index) >= args.workers:
            raise DistributedError(f"{path}: a shard beyond --workers {args.workers}")
    return output


def start_ray(address: str | None):
    """Join ``address``, or start a local instance with one CPU per core (no dashboard, logs under Ray's
    temp dir, outside the repository)."""
    import ray

    if ray.is_initialized():
        return ray
    kw = {"log_to_driver": False, "logging_level": "WARNING"}
    if address:
        ray.init(address=address, **kw)
    else:
        ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, **kw)
    return ray


def run(args: argparse.Namespace) -> tuple[list[ShardResult], float]:
    """Submit one Ray task per shard, draw one progress bar over all demos; the results in shard order."""
    from tqdm import tqdm

    ray = start_ray(args.address)
    started_ray = time.perf_counter()
    resources = {"num_cpus": args.cpus_per_worker, "num_gpus": 1 if args.device.startswith("cuda") else 0}
    if resources["num_gpus"] and not ray.cluster_resources().get("GPU"):
        raise DistributedError(
            f"--device {args.device}: the Ray cluster has no GPU (its resources: "
            f"{ray.cluster_resources()}); start it on GPU machines or use --device cpu"
        )
    output = prepare_output(args)
    targets = shard_targets(args.num_demos, args.workers)
    command = collector_command(args)
    specs = [
        ShardSpec(
            k,
            str(shard_path(output, k).resolve()),
            targets[k],
            args.seed,
            command,
            args.restarts,
            str((output / LOGS / f"shard_{k}.log").resolve()),
        )
        for k in range(args.workers)
    ]
    progress = ray.remote(num_cpus=0)(Progress).remote()
    task = ray.remote(max_retries=3, retry_exceptions=False, **resources)(run_shard)
    submitted = time.perf_counter()
    pending = {task.remote(spec, ActorReport(progress)): spec.index for spec in specs}
    results: dict[int, ShardResult] = {}
    bar = tqdm(
        total=args.num_demos, unit="demo", desc=f"{args.source} x{args.workers}", dynamic_ncols=True, disable=args.quiet
    )
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
            for ref in done:
                k = pending.pop(ref)
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:
                    if isinstance(exc.cause, DistributedError):
                        raise DistributedError(str(exc.cause)) from None
                    result = _failed(k, specs[k], exc)
                except ray.exceptions.RayError as exc:  # the worker died more often than Ray retries it
                    result = _failed(k, specs[k], exc)
                result.wall_seconds = time.perf_counter() - submitted
                results[k] = result
            count = sum(ray.get(progress.get.remote()).values())
            if count != bar.n:
                bar.update(count - bar.n)
    finally:
        bar.close()
    return [results[k] for k in range(args.workers)], time.perf_counter() - started_ray


def _failed(index: int, spec: ShardSpec, exc: Exception) -> ShardResult:
    """The result of a shard whose task failed: what its file holds, and why."""
    first = (str(exc).strip().splitlines() or [""])[-1][:300]
    result = ShardResult(
        index,
        error=f"{spec.path}: worker failed: {type(exc).__name__}: {first} (see {spec.log}); "
        "rerun the same command to finish it",
    )
    with contextlib.suppress(Exception):
        result.demos = count_demos(Path(spec.path))
    return result


def summarize(args: argparse.Namespace, results: list[ShardResult], seconds: float) -> int:
    """The per-worker table and the summary; 0 only for exactly N demos in shards that validated (each
    worker validates its shard after its last collector run)."""
    from l2.recording import cli
    from l2.recording.collect import frame_rate

    output = Path(args.output)
    head = ("shard", "demos", "new", "attempts", "env-frames/s", "runs", "process s", "seeds")
    rows = []
    for r in results:
        fps = frame_rate(r.frames, r.sim_seconds) if r.sim_seconds else "-"
        rows.append(
            (
                f"{schema.SHARD_PREFIX}{r.index}",
                r.demos,
                r.new_demos,
                r.attempts,
                fps,
                r.runs,
                f"{r.process_seconds:.1f}",
                ",".join(map(str, r.seeds)) or "-",
            )
        )
    widths = [max(len(str(row[i])) for row in [head, *rows]) for i in range(len(head))]
    print(
        "\n"
        + "\n".join(
            "  " + "  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)) for row in [head, *rows]
        )
    )
    total = sum(r.demos for r in results)
    frames, sim = sum(r.frames for r in results), max((r.sim_seconds for r in results), default=0.0)
    new = sum(r.new_demos for r in results)
    cli.print_summary(
        [
            ("demos", f"{total} of {args.num_demos} in {len(results)} shards ({new} new this run)"),
            (
                "wall time",
                f"{seconds:.1f} s since Ray was up"
                + (f" ({60 * new / seconds:.1f} new demos/min)" if new and seconds else ""),
            ),
            ("env-frames/s", f"{frame_rate(frames, sim)} over all workers" if sim else "- (nothing collected)"),
            (
                "output",
                f"{output}/shard_<k>.hdf5 (each validated by its worker: python -m l2.format.validate), "
                f"collector logs in "
                f"{output / LOGS}",
            ),
        ]
    )
    errors = [r.error for r in results if r.error]
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    if any(r.refused for r in results):
        return 2
    return 0 if total == args.num_demos and not errors else 1


TASK_OF = {"scripted": "l2.scripted.run", "rl": "l2.rl.train", "teleop-replay": "l2.teleop.run"}
"""The module whose ``DEFAULT_TASK`` each source's collector runs without ``--task``."""


def _preflight(args: argparse.Namespace) -> None:
    """What the collection is refused for before anything is written and before Ray starts: the collectors' task,
    presets and overrides, and a ``--checkpoint`` that is not an rsl_rl checkpoint or is given to another source."""
    import importlib

    from l2.recording import sim
    from l2.rl import checkpoint as ckpt

    if args.checkpoint:
        if args.source != "rl":
            raise DistributedError(f"--checkpoint {args.checkpoint}: only --source rl runs a policy")
        try:
            ckpt.load(args.checkpoint, "cpu")
        except ckpt.LayoutError as exc:
            raise DistributedError(str(exc)) from None
    task = args.task or importlib.import_module(TASK_OF[args.source]).DEFAULT_TASK
    try:
        sim.parse_task_cfg(task, args.device, args.num_envs or 1, args.overrides)
    except sim.OneLineError as exc:
        raise DistributedError(str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    from l2.format.locks import hold_folder

    args = parse_args(argv)
    try:
        _preflight(args)
    except DistributedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # Then, before Ray starts: while this driver lives, another one on DIR is refused here (DIR/lock).
    if (busy := hold_folder(args.output, remove_when_empty=True)) is not None:
        print(f"error: {args.output}: {busy}; wait for it to end, or use another --output", file=sys.stderr)
        return 2
    try:
        results, seconds = run(args)
    except DistributedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: complete demos are kept; rerun the same command to resume", file=sys.stderr)
        return 130
    finally:
        import ray

        if ray.is_initialized():
            ray.shutdown()
    return summarize(args, results, seconds)


if __name__ == "__main__":
    # Through the module itself, not __main__: Ray ships the worker function and its classes by reference.
    from l2.distributed import main as module_main

    sys.exit(module_main())
