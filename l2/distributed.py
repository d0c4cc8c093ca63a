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
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from l2.format import atomic, schema
from l2.recording.shards import (
    ShardError,
    ShardResult,
    ShardSpec,
    count_demos,
    run_shard,
    shard_path,
    shard_targets,
)
from l2.tools.ray_cluster import start_ray

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
            raise ShardError(
                f"{manifest}: {output} holds another collection: " + ", ".join(diff) + "; use another --output"
            )
    else:
        extra = sorted(p.name for p in output.glob("*.hdf5")) if output.is_dir() else []
        if extra:
            raise ShardError(f"{output}: holds {extra[0]} but no {MANIFEST}: not a distributed collection")
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
            raise ShardError(f"{path}: a shard beyond --workers {args.workers}")
    return output


def run(args: argparse.Namespace) -> tuple[list[ShardResult], float]:
    """Submit one Ray task per shard, draw one progress bar over all demos; the results in shard order."""
    from tqdm import tqdm

    ray = start_ray(args.address)
    started_ray = time.perf_counter()
    resources = {"num_cpus": args.cpus_per_worker, "num_gpus": 1 if args.device.startswith("cuda") else 0}
    if resources["num_gpus"] and not ray.cluster_resources().get("GPU"):
        raise ShardError(
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
                    if isinstance(exc.cause, ShardError):
                        raise ShardError(str(exc.cause)) from None
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
            raise ShardError(f"--checkpoint {args.checkpoint}: only --source rl runs a policy")
        try:
            ckpt.load(args.checkpoint, "cpu")
        except ckpt.LayoutError as exc:
            raise ShardError(str(exc)) from None
    task = args.task or importlib.import_module(TASK_OF[args.source]).DEFAULT_TASK
    try:
        sim.parse_task_cfg(task, args.device, args.num_envs or 1, args.overrides)
    except sim.OneLineError as exc:
        raise ShardError(str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    from l2.format.locks import hold_folder

    args = parse_args(argv)
    try:
        _preflight(args)
    except ShardError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # Then, before Ray starts: while this driver lives, another one on DIR is refused here (DIR/lock).
    if (busy := hold_folder(args.output, remove_when_empty=True)) is not None:
        print(f"error: {args.output}: {busy}; wait for it to end, or use another --output", file=sys.stderr)
        return 2
    try:
        results, seconds = run(args)
    except ShardError as exc:
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
