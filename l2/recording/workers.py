"""One collection over every core: ``--workers K`` collector processes, their shards merged into one output file.

Warp runs its CPU kernels on one core, so one collector process keeps one core busy. With ``--workers auto``
(the default on the CPU: one per usable core, at most one per env and per demo) a runner (``l2/scripted/run.py``,
``l2/rl/rollout.py``, ``python -m l2.mimic``) starts K collectors of itself, each with its share of the envs and
of the demos, through :func:`l2.recording.shards.run_shard`: each writes ``shard_<k>.hdf5`` in ``.<output
stem>.workers/`` beside the output, a killed collector is started again and continues its shard under a new seed.
Each shard's seeds derive from ``--seed`` (and, with ``--append``, from the demos already in the file, so that an
appended run does not repeat them). When every shard is complete, the shards are merged into the output with
l2.tools.merge's copy (after the demos already in it with ``--append``), built beside it and renamed into place,
and the folder is removed.

What a user sees is one run: one progress bar, one summary, exactly N demos in the file they named, the same
``--append`` / ``--overwrite`` / ``--keep-failed`` / ``--max_attempts`` rules. The driver holds the folder (its lock,
l2.format.locks) from its start to its end, so a second run on the same output is refused while it lives. Ctrl-C
(or SIGTERM) is passed on to every collector, which stops after its step; the demos written so far are merged into the
output. A run that ends otherwise before the merge (killed, a collector that cannot go on) leaves the folder: the same
command resumes it, once its driver is gone.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

from l2.format import atomic, schema
from l2.format.interrupts import StopRequest, stop_on_signals
from l2.recording.cli import AUTO
from l2.recording.shards import count_demos

MANIFEST = "workers.json"
"""In the shards' folder: the command the shards belong to, and the output's demo count before it."""
PER_SHARD = (
    *("output", "num_demos", "num_envs", "seed", "stats_json", "append", "overwrite", "workers", "max_attempts"),
    "joins",
)
"""Arguments each collector gets its own value of (the rest it gets as the user gave them)."""
UNSHARDED = {
    "episodes": "--episodes counts the first episodes of each env of one run",
    "log_actions": "--log_actions writes one file per run",
    "annotated": "--annotated writes one file per run",
}
"""Options a run of several collectors cannot honour (``--workers auto`` then means 1)."""


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, e.g. a container's or taskset's share)."""
    with contextlib.suppress(AttributeError):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def count(args: argparse.Namespace) -> int:
    """Collector processes for this run (``args.workers`` resolved); exits with a one-line error for a count
    that cannot be honoured."""
    from l2.recording import cli

    blockers = [why for name, why in UNSHARDED.items() if getattr(args, name, None) is not None]
    if args.workers == AUTO:
        if not str(args.device).startswith("cpu") or blockers:
            return 1
        return max(1, min(usable_cores(), args.num_envs, args.num_demos))
    if args.workers > 1:
        if blockers:
            cli.fail(f"--workers {args.workers}: {blockers[0]}; use --workers 1")
        if args.workers > min(args.num_envs, args.num_demos):
            cli.fail(
                f"--workers {args.workers}: each collector needs at least one env and one demo "
                f"(--num_envs {args.num_envs}, --num_demos {args.num_demos})"
            )
    return args.workers


def shard_folder(output: Path) -> Path:
    from l2.recording.output import work_folder

    return work_folder(output)


def command_line(parser: argparse.ArgumentParser, args: argparse.Namespace, drop: tuple[str, ...]) -> list[str]:
    """The arguments that give ``args`` again (the positionals, then the options that differ from their defaults),
    without the ``drop`` ones. Positionals first: after an option of several values (``--demos A B``) they would be
    read as more of its values, and the per-collector options are appended to this."""
    options, positionals = [], []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.dest in drop:
            continue
        value = getattr(args, action.dest, None)
        if not action.option_strings:
            positionals += [str(v) for v in value] if isinstance(value, list) else [str(value)]
        elif isinstance(action, argparse._StoreTrueAction):
            if value and not action.default:
                options.append(action.option_strings[0])
        elif value is not None and value != action.default:
            options += [action.option_strings[0], *(map(str, value) if isinstance(value, list) else [str(value)])]
    return positionals + options


def run(args: argparse.Namespace, collector: list[str], workers: int, *, desc: str) -> int:
    """Collect ``args.num_demos`` demos into ``args.output`` with ``workers`` collector processes, each started as
    ``python <collector> <args>`` (see the module docstring); the exit status of the run."""
    from l2.recording import cli
    from l2.recording.output import check_output, hold_output
    from l2.recording.shards import ShardSpec, shard_path, shard_seed, shard_targets

    output = Path(args.output).absolute()
    folder = shard_folder(output)
    try:
        hold_output(output)  # first: while this run lives, another one on this output is refused here
    except ValueError as exc:
        cli.fail(str(exc))
    want = {
        "collector": " ".join(Path(part).name for part in collector),
        "args": command_line(args._parser, args, ("workers", "stats_json")),
        "workers": workers,
    }
    before = _resume(folder, want, output) if (folder / MANIFEST).exists() else None
    if before is None:
        try:
            check_output(output, cli.on_exists(args), args.keep_failed)
        except (FileExistsError, ValueError) as exc:
            cli.fail(str(exc))
        before = 0
        if args.append and output.exists():
            ok, verdict = cli.validator_verdict(output)
            if not ok:
                cli.fail(f"{output}: cannot append to it: {verdict}")
            before = count_demos(output)
        (folder / "logs").mkdir(parents=True, exist_ok=True)
        atomic.write_text(folder / MANIFEST, json.dumps({**want, "before": before}, indent=2) + "\n")
    elif before == -1:  # merged by the run that was killed before it could remove the folder
        shutil.rmtree(folder)
        print(f"note: {output} already holds the demos of the run that was stopped; nothing more to collect")
        return 0

    envs, demos = shard_targets(args.num_envs, workers), shard_targets(args.num_demos, workers)
    # Finished episodes per shard over all its collector runs: the user's split, or each collector's default
    # (4 x its demos + its envs, as l2.recording.cli.attempt_limits gives one process), which add up to one process's.
    attempts = (
        shard_targets(args.max_attempts, workers)
        if args.max_attempts
        else [4 * d + e for d, e in zip(demos, envs, strict=True)]
    )
    shared = command_line(args._parser, args, PER_SHARD)
    specs = [
        ShardSpec(
            k,
            str(shard_path(folder, k)),
            target,
            args.seed if not before else shard_seed(args.seed, workers, before),  # `workers`: no shard's index
            [
                *collector,
                "--num_envs",
                str(envs[k]),
                "--workers",
                "1",
                *(["--joins", str(output)] if before else []),  # its obs terms are checked before the first step
                *shared,
            ],
            restarts=3,
            log=str(folder / "logs" / f"shard_{k}.log"),
            cwd=os.getcwd(),
            own_session=True,
            threads=max(1, usable_cores() // workers),
            max_attempts=attempts[k],
        )
        for k, target in enumerate(demos)
    ]
    results, stopped = _collect(specs, args.num_demos, f"{desc} x{workers}")
    return _finish(args, output, folder, specs, results, stopped, before, workers)


def _resume(folder: Path, want: dict, output: Path) -> int | None:
    """The output's demo count before the stopped run whose shards ``folder`` holds (-1 when that run had already
    merged them); a one-line error when they belong to another command."""
    from l2.format.locks import in_use
    from l2.recording import cli
    from l2.recording.output import PARALLEL

    if output.exists() and (busy := in_use(output)) is not None:
        cli.fail(f"{output}: {busy}; {PARALLEL}")
    try:
        have = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        cli.fail(f"{folder}: not the shards of a run of this collector ({MANIFEST} unreadable); remove it")
    diff = [k for k, v in want.items() if have.get(k) != v]
    if diff:
        cli.fail(
            f"{folder}: holds the shards of a stopped run of another command ({', '.join(diff)} differ: "
            f"{' '.join(have.get('args', []))} with {have.get('workers')} workers); rerun that command to finish it, "
            "or remove the folder"
        )
    shards = sorted(folder.glob(f"{schema.SHARD_PREFIX}*[0-9].hdf5"))
    in_shards = sum(count_demos(p) for p in shards)
    if output.exists() and in_shards and count_demos(output) == have["before"] + in_shards:
        return -1
    print(f"note: resuming the stopped run in {folder} ({in_shards} demos in its shards)")
    return int(have["before"])


def passed_on_signals(bar) -> contextlib.AbstractContextManager[StopRequest]:
    """While the block runs, a SIGINT or SIGTERM of this process only sets the yielded request (said once under the
    progress bar ``bar``): the block passes it on to its processes, which stop after their step."""
    return stop_on_signals(
        lambda request: bar.write(f"{request.name}: every process stops after its step; what is finished is kept"),
        again_stops_at_once=False,
    )


def _collect(specs, num_demos: int, desc: str):
    """Run every shard on a thread of its own; one progress bar over all demos. Returns the shard results and the
    first SIGINT/SIGTERM received (passed on to every collector), if any."""
    from tqdm import tqdm

    from l2.recording.shards import run_shard

    counts: dict[int, int] = {}
    with (
        tqdm(total=num_demos, unit="demo", desc=desc, dynamic_ncols=True, mininterval=0.5) as bar,
        passed_on_signals(bar) as request,
        ThreadPoolExecutor(len(specs)) as pool,
    ):
        futures = [pool.submit(run_shard, spec, counts.__setitem__, request) for spec in specs]
        while wait(futures, timeout=0.5).not_done:
            bar.update(sum(counts.values()) - bar.n)
        results = [f.result() for f in futures]
        bar.update(sum(r.demos for r in results) - bar.n)
    return results, request if request else None


def run_processes(
    commands: list[list[str]], logs: list[Path], progress: Callable[[], int], total: int, *, desc: str, unit: str
) -> tuple[list[int], StopRequest | None]:
    """Run ``python <command>`` for every command at once, each writing to its log, in a session of its own (dying
    with this process); one progress bar that ``progress()`` fills. A SIGINT or SIGTERM is passed on to each
    once. Returns the exit statuses and the signal received, if any."""
    import subprocess
    import sys

    from tqdm import tqdm

    from l2.recording.shards import parent_death_signal, thread_limit

    with (
        tqdm(total=total, unit=unit, desc=desc, dynamic_ncols=True, mininterval=0.5) as bar,
        passed_on_signals(bar) as request,
        contextlib.ExitStack() as files,
    ):
        procs = [
            subprocess.Popen(
                [sys.executable, *cmd],
                stdout=files.enter_context(open(log, "w")),
                stderr=subprocess.STDOUT,
                preexec_fn=parent_death_signal(),
                start_new_session=True,
                env=thread_limit(max(1, usable_cores() // len(commands))),
            )
            for cmd, log in zip(commands, logs, strict=True)
        ]
        passed = [False] * len(procs)
        while any(p.poll() is None for p in procs):
            for k, p in enumerate(procs):
                if request and not passed[k] and p.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        p.send_signal(request.signum)
                    passed[k] = True
            with contextlib.suppress(Exception):  # a count caught mid-write: the next poll reads it
                bar.update(min(progress(), total) - bar.n)
            time.sleep(0.3)
        with contextlib.suppress(Exception):
            bar.update(min(progress(), total) - bar.n)
    return [p.returncode for p in procs], request if request else None


def _finish(args, output: Path, folder: Path, specs, results, stopped, before: int, workers: int) -> int:
    """Merge the shards into the output (when complete, or stopped by a signal), remove the folder, print the
    summary; or keep the folder and say why the run ends short."""
    import sys

    from l2.recording import collect
    from l2.recording.shards import last_error
    from l2.tools.merge import MergeError

    total = sum(r.demos for r in results)
    # Shards short of their demos because their episodes ran out end as one process does: with what they hold.
    if (
        total < args.num_demos
        and not stopped
        and not all(r.exhausted or r.demos >= s.target for s, r in zip(specs, results, strict=True))
    ):
        pairs = zip(specs, results, strict=True)
        lines = [_as_output(last_error(s.log), s, output) if r.refused else r.error for s, r in pairs]
        for line in dict.fromkeys(line for line in lines if line):  # the collectors' own lines, each once
            print(f"error: {line}", file=sys.stderr)
        if total == 0 and all(r.refused for r in results):
            shutil.rmtree(folder, ignore_errors=True)  # the lines say it all
        else:
            print(
                f"error: {total} of {args.num_demos} demos; the shards and the collectors' logs are kept in {folder}: "
                "rerun the same command to finish, or remove the folder",
                file=sys.stderr,
            )
        return 2 if any(r.refused for r in results) else 1
    start = time.perf_counter()
    shards = [Path(s.path) for s in specs]
    try:
        merge_into(output, shards, args.append, args.num_envs)
        if args.keep_failed:
            merge_into(failed_path(output), [failed_path(p) for p in shards], args.append, args.num_envs)
    except KeyboardInterrupt:
        print(
            f"error: interrupted while merging; nothing written to {output}, the shards are kept in {folder}: "
            "rerun the same command to finish",
            file=sys.stderr,
        )
        return 130
    except (MergeError, OSError, RuntimeError) as exc:  # demos unlike the file's, a full disk: nothing written
        if not isinstance(exc, MergeError) and atomic.os_error(exc) is None:
            raise
        line = str(exc) if isinstance(exc, MergeError) else atomic.io_error_line(exc, output, "nothing written")
        print(f"error: {line}; the shards are kept in {folder}", file=sys.stderr)
        return 2
    merge_seconds = time.perf_counter() - start
    shutil.rmtree(folder)
    stats = collect.CollectionStats(
        written=total,
        in_file_before=before,
        attempts=sum(r.attempts for r in results),
        successes=sum(r.successes for r in results),
        frames=sum(r.frames for r in results),
        seconds=max((r.sim_seconds for r in results), default=0.0),
        interrupted=stopped,
        workers=workers,
        merge_seconds=merge_seconds,
    )
    return collect.finish(args, stats, output)


def _as_output(line: str, spec, output: Path) -> str:
    """A collector's error line naming the user's output (and failed file) instead of its shard's."""
    shard = Path(spec.path)
    for own, users in ((failed_path(shard), failed_path(output)), (shard, output)):
        line = line.replace(str(own), str(users)).replace(own.name, users.name)
    return line


def failed_path(output: Path) -> Path:
    """The file of the failed episodes of a run writing ``output`` (``--keep-failed``)."""
    return output.with_name(output.stem + "_failed.hdf5")


def merge_into(output: Path, shards: list[Path], append: bool, num_envs: int) -> None:
    """The shards' demos after the output's own (with ``append``), renamed into place; nothing to do without new
    demos."""
    from l2.format.interrupts import terminate_as_interrupt
    from l2.tools.merge import merge

    shards = [p for p in shards if p.exists() and count_demos(p)]
    if not shards:
        return
    if append and output.exists():
        inputs, env_args = [output, *shards], None  # the file keeps its own
    else:  # as one process with all the envs would have written it
        inputs, env_args = shards, _env_args(shards[0], num_envs)
    with terminate_as_interrupt():
        merge(inputs, output, overwrite=True, action_dim=None, provenance=False, env_args=env_args)


def _env_args(shard: Path, num_envs: int) -> dict:
    from l2.format.l2file import L2File

    with L2File(shard, guard=False) as f:  # validated by its worker
        env_args = dict(f.env_args)
    if isinstance(env_args.get("sim_args"), dict):
        env_args["sim_args"] = {**env_args["sim_args"], "num_envs": num_envs}
    return env_args


def run_collector(
    runner: Callable[[argparse.Namespace], int],
    args: argparse.Namespace,
    collector: str | list[str],
    *,
    desc: str,
    check: Callable[[argparse.Namespace], None] | None = None,
) -> int:
    """Run a collection in this process, or spread it over ``--workers`` collector processes, each started as
    ``python <collector> ...`` (a script's path, or ``["-m", module]``; :mod:`l2.recording.workers`); after the
    :func:`l2.recording.cli.preflight` checks, with the runner's ``check``."""
    from l2.recording import cli

    cli.preflight(args, check)
    workers = count(args)
    if workers > 1:
        command = [str(Path(collector).resolve())] if isinstance(collector, str) else collector
        return run(args, command, workers, desc=desc)
    return cli.run_reporting_errors(runner, args)
