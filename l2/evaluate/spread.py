"""One evaluation spread over ``--workers`` processes, each running its share of the episodes on its share of the
envs: one progress bar, one report, the recorded rollouts merged into one file."""

from __future__ import annotations

import argparse
from pathlib import Path

from l2.evaluate.run import finish
from l2.evaluate.spec import DEFAULT_EPISODES, EvaluationError
from l2.policy.report import EvaluationReport
from l2.recording import cli
from l2.recording.cli import AUTO
from l2.recording.workers import usable_cores

PER_PROCESS = ("workers", "episodes", "num_envs", "seed", "report", "record", "append", "overwrite", "videos")
"""The arguments each process of a spread evaluation gets its own value of (``--min-success`` is the driver's)."""


def evaluate_spread(args: argparse.Namespace, workers: int, episodes: int) -> int:
    """The evaluation in ``workers`` processes, each running its share of the episodes (in order: process k runs the
    k-th block, from the k-th block of ``--reset-from``'s demos) on its share of the envs; one progress bar, one
    report, the rollouts of ``--record`` merged into the one file (l2.recording.workers), videos from the first."""
    import json
    import shutil
    import tempfile

    from l2.recording import workers as spread
    from l2.recording.output import check_output
    from l2.recording.shards import last_error, shard_seed, shard_targets
    from l2.tools.merge import MergeError

    record = Path(args.record).absolute() if args.record else None
    if record is not None:
        try:
            check_output(record, cli.on_exists(args), args.keep_failed)
        except (FileExistsError, ValueError) as exc:
            raise EvaluationError(str(exc)) from None
    folder = Path(tempfile.mkdtemp(prefix=".l2-evaluate-", dir=record.parent if record else None))
    counts, envs = shard_targets(episodes, workers), shard_targets(min(args.num_envs, episodes), workers)
    shared = spread.command_line(args._parser, args, (*PER_PROCESS, "min_success"))
    commands, logs = [], []
    for k in range(workers):
        cmd = ["-m", "l2.evaluate", "--workers", "1", "--episodes", str(counts[k]), "--num_envs", str(envs[k])]
        cmd += ["--first-episode", str(sum(counts[:k])), "--seed", str(shard_seed(args.seed, k, 0))]
        cmd += ["--report", str(folder / f"shard_{k}.json"), "--progress-file", str(folder / f"progress_{k}")]
        if record is not None:
            cmd += ["--record", str(folder / f"shard_{k}.hdf5")]
        if args.videos and k == 0:  # its episodes are the evaluation's first
            cmd += ["--videos", args.videos]
        commands.append(cmd + shared)
        logs.append(folder / f"shard_{k}.log")

    def finished() -> int:
        return sum(int(p.read_text() or 0) for p in folder.glob("progress_*"))

    try:
        print(f"evaluating {args.policy}: {episodes} episodes in {workers} processes", flush=True)
        codes, stopped = spread.run_processes(
            commands, logs, finished, episodes, desc=f"evaluate x{workers}", unit="episode"
        )
        refused = [(k, last_error(log)) for k, (code, log) in enumerate(zip(codes, logs, strict=True)) if code == 2]
        if refused:  # every process meets the same problem: said once, naming the user's file, not a shard
            k, line = refused[0]
            if record is not None:
                shard = folder / f"shard_{k}.hdf5"
                line = line.replace(str(shard), str(args.record)).replace(shard.name, record.name)
            raise EvaluationError(line)
        crashed = [(k, code) for k, code in enumerate(codes) if code not in (0, 130, 143)]
        if crashed:
            k, code = crashed[0]
            kept = folder.with_name(folder.name.replace(".l2-evaluate-", "l2-evaluate-failed-"))
            folder.rename(kept)
            folder = kept
            raise EvaluationError(f"evaluation process {k} ended with status {code}; its log: {kept / logs[k].name}")
        parts = [
            EvaluationReport.from_json(json.loads((folder / f"shard_{k}.json").read_text())) for k in range(workers)
        ]
        report = EvaluationReport.combined(parts, args.seed)
        if record is not None:
            shards = [folder / f"shard_{k}.hdf5" for k in range(workers)]
            try:
                spread.merge_into(record, shards, args.append, report.num_envs)
                if args.keep_failed:
                    failed = [p.with_name(p.stem + "_failed.hdf5") for p in shards]
                    failed_file = record.with_name(record.stem + "_failed.hdf5")
                    spread.merge_into(failed_file, failed, args.append, report.num_envs)
            except MergeError as exc:  # rollouts unlike the --append file's demos: nothing written
                raise EvaluationError(str(exc)) from None
            report.record = str(args.record)
        report.interrupted = report.interrupted or stopped is not None
    finally:
        if "failed" not in folder.name:
            shutil.rmtree(folder, ignore_errors=True)
    return finish(args, report)


def planned_episodes(args: argparse.Namespace) -> int:
    if args.episodes:
        return args.episodes
    if args.reset_from:
        from l2.format.l2file import L2File, L2FileError

        try:
            with L2File(args.reset_from) as f:
                return len(f.demos)
        except (L2FileError, OSError) as exc:
            raise EvaluationError(str(exc)) from None
    return DEFAULT_EPISODES


def process_count(args: argparse.Namespace) -> int:
    """Evaluation processes for this run (``--workers`` resolved)."""
    if args.first_episode or args.progress_file:  # a worker of a spread evaluation
        return 1
    replay = args.policy.kind == "replay"
    if args.workers == AUTO:  # a served policy may keep state between requests (a reset, a replayed episode)
        if not str(args.device).startswith("cpu") or args.policy.served:
            return 1
        return max(1, min(usable_cores(), args.num_envs, planned_episodes(args)))
    if args.workers > 1:
        if replay:
            raise EvaluationError(f"--workers {args.workers}: a replay: policy serves one process; use --workers 1")
        episodes = planned_episodes(args)
        if args.workers > min(args.num_envs, episodes):
            raise EvaluationError(
                f"--workers {args.workers}: each process needs at least one env and one episode "
                f"(--num_envs {args.num_envs}, {episodes} episodes)"
            )
    return args.workers
