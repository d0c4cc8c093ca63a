"""Command-line pieces shared by the demonstration runners (scripted, RL, teleop, Mimic)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from l2.format import cli_args
from l2.format.interrupts import StopRequest, stop_on_signals  # noqa: F401  (the runners' names for them)
from l2.recording.errors import OneLineError
from l2.recording.output import OnExists

AUTO = "auto"


def workers_arg(value: str) -> str | int:
    """``--workers``: ``auto`` or a count >= 1."""
    if value == AUTO:
        return AUTO
    try:
        count = int(value)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"{value!r}: give auto or a number of processes >= 1")
    return count


def add_workers_args(group) -> None:
    group.add_argument("--joins", default=None, help=argparse.SUPPRESS)  # a collector's: the file of --append
    group.add_argument(
        "--workers",
        type=workers_arg,
        default=AUTO,
        metavar="K",
        help="collector processes, each with num_envs/K envs and its share of the demos, merged into --output at "
        "the end (default: auto = one per usable CPU core on the CPU, at most num_envs and num_demos; 1 on CUDA; "
        "1 = everything in this process)",
    )


def runner_parser(doc: str, prog: str | None = None) -> argparse.ArgumentParser:
    """A runner's parser (errors in one line): first paragraph of its module docstring as description, its examples
    as epilog; ``prog`` names a module run with ``python -m`` (argparse would show its file name)."""
    return cli_args.Parser(
        prog=prog,
        description=doc.split("\n\n")[0],
        epilog="examples:" + doc.split("Examples::")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


DEMO_FOLDER = "data/demos"
VARIANT_WORDS = frozenset({"scripted", "teleop", "mimic", "rl", "play", "joint", "jointpos", "rel", "ik", "abs"})
"""Trailing words of a gym id that name a control mode or a source's variant, not the task."""


def demo_name(task: str) -> str:
    """The task's part of its demo files' names: the registration's ``demo_name`` kwarg, else the gym id in lower
    case without its version, its ``L2``/``Isaac``/``IsaacContrib`` prefix and its trailing variant words
    (``L2-Stack-Cube-SO101-Scripted-v0`` -> ``stack_cube_so101``, ``Isaac-Stack-Cube-Franka-IK-Rel-v0`` ->
    ``stack_cube_franka``), every other character than a letter or digit an underscore."""
    import re

    import gymnasium as gym

    from l2.recording import sim

    sim.register_tasks()
    name = gym.registry[task].kwargs.get("demo_name") if task in gym.registry else None
    if name is None:
        words = re.sub(r"-v\d+$", "", task.lower()).split("-")
        while len(words) > 1 and words[0] in ("l2", "isaac", "isaaccontrib"):
            words.pop(0)
        while len(words) > 1 and words[-1] in VARIANT_WORDS:
            words.pop()
        name = "_".join(words)
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "task"


def add_output_args(
    parser: argparse.ArgumentParser, *, source: str, num_demos: int, workers: bool = False, min_demos: int = 1
) -> None:
    """``--num_demos`` (at least ``min_demos``), ``--output`` (default: ``data/demos/<source>_<task>.hdf5``, filled
    in by :func:`parse` from ``--task``) and what to do with an existing one; ``workers``: also ``--workers``, for a
    runner that spreads its collection over collector processes (:func:`l2.recording.workers.run_collector`)."""
    parser.set_defaults(_source=source)
    group = parser.add_argument_group("dataset")
    group.add_argument(
        "--num_demos",
        type=cli_args.int_at_least(min_demos),
        default=num_demos,
        help="successful demos to write (default: %(default)s)",
    )
    group.add_argument(
        "--output",
        type=cli_args.output_file,
        default=None,
        help=f"HDF5 file to write (default: {DEMO_FOLDER}/{source}_<task>.hdf5, <task> from the gym id, e.g. "
        f"{source}_lift_cube.hdf5, {source}_stack_cube_so101.hdf5)",
    )
    group.add_argument(
        "--keep-failed", action="store_true", help="also write failed episodes, to <output stem>_failed.hdf5"
    )
    group.add_argument(
        "--stats-json",
        "--stats_json",
        dest="stats_json",
        type=cli_args.output_file,
        default=None,
        metavar="PATH",
        help="also write the run's figures (demos, attempts, env-frames, seconds) as JSON (read by l2.distributed)",
    )
    exists = group.add_mutually_exclusive_group()
    exists.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    exists.add_argument("--append", action="store_true", help="add demos to an existing output file")
    if workers:
        add_workers_args(group)


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """``parser.parse_args(argv)``, keeping the parser with the result: :mod:`l2.recording.workers` gives each
    collector process the user's arguments again."""
    args = parser.parse_args(argv)
    args._parser = parser
    fill_output(args)
    return args


def fill_output(args: argparse.Namespace) -> None:
    """``--output``'s default, ``data/demos/<source>_<task>.hdf5`` (:func:`demo_name`), where none was given."""
    if getattr(args, "output", "") is None:
        args.output = f"{DEMO_FOLDER}/{args._source}_{demo_name(args.task)}.hdf5"


def add_attempt_args(parser: argparse.ArgumentParser) -> None:
    """``--max_attempts`` and ``--episodes`` of the automatic sources (see :func:`l2.recording.collect.collect`)."""
    group = parser.add_argument_group("episodes")
    limit = group.add_mutually_exclusive_group()
    limit.add_argument(
        "--max_attempts",
        type=cli_args.positive_int,
        default=None,
        help="give up after this many finished episodes (default: 4 x num_demos + num_envs)",
    )
    limit.add_argument(
        "--episodes",
        type=cli_args.positive_int,
        default=None,
        metavar="N",
        help="evaluate instead: run N episodes (rounded up to a multiple of num_envs, the first ones of each env), "
        "write their successes and report the success rate; --num_demos is ignored",
    )


def attempt_limits(args: argparse.Namespace) -> tuple[int | None, int]:
    """``(num_demos or None, max_attempts)`` for :func:`l2.recording.collect.collect` from the runner's arguments."""
    if args.episodes is not None:
        return None, args.episodes
    return args.num_demos, args.max_attempts or 4 * args.num_demos + args.num_envs


def on_exists(args: argparse.Namespace) -> OnExists:
    return "overwrite" if args.overwrite else "append" if args.append else "refuse"


def record_to(env_cfg, args: argparse.Namespace, *, max_successes: int | None = None, recorders=None) -> Path:
    """Point the env cfg's recorder at ``args.output`` (see :func:`l2.recording.handler.configure_recording`); an
    existing file that the flags do not allow touching, or a bad path, ends the run with a one-line error."""
    from l2.recording.handler import configure_recording

    try:
        return configure_recording(
            env_cfg,
            args.output,
            args.task,
            on_exists(args),
            keep_failed=args.keep_failed,
            max_successes=max_successes,
            recorders=recorders,
            joins=getattr(args, "joins", None),
        )
    except (FileExistsError, ValueError) as exc:
        fail(str(exc))


def write_stats(args: argparse.Namespace, **figures: int | float) -> None:
    """Write a run's figures to ``--stats-json`` (when given): written demos, finished attempts, env-frames
    stepped and seconds of stepping, for the driver of a distributed collection to add up."""
    if getattr(args, "stats_json", None):
        import json

        Path(args.stats_json).write_text(json.dumps(figures))


def print_summary(rows: list[tuple[str, object]]) -> None:
    """Aligned ``key: value`` block at the end of a run."""
    width = max(len(k) for k, _ in rows)
    print("\n" + "\n".join(f"  {k:<{width}}  {v}" for k, v in rows), flush=True)


def validator_verdict(path: Path) -> tuple[bool, str]:
    """Run ``l2.format.validate`` on a written file: (ok, one-line verdict)."""
    from l2.format.validate import validate_file

    report = validate_file(path)
    if report.ok:
        return True, "valid (python -m l2.format.validate)"
    return False, f"INVALID: {len(report.violations)} violation(s), first: {report.violations[0]}"


def run_reporting_errors(runner: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run a runner; a :class:`~l2.recording.errors.OneLineError` (e.g. demos that do not match the file they would be
    appended to, an unknown preset) becomes one line on stderr and exit status 2, with nothing written."""
    try:
        return runner(args)
    except OneLineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def preflight(args: argparse.Namespace, check: Callable[[argparse.Namespace], None] | None = None) -> None:
    """What a run can be refused for before any simulator starts: the task, its presets and overrides (parsed as the
    run would), then the runner's own ``check`` (a checkpoint, a trace); a one-line error and exit status 2."""
    from l2.recording import sim

    try:
        sim.parse_task_cfg(args.task, args.device, args.num_envs, args.overrides)
        if check is not None:
            check(args)
    except OneLineError as exc:
        fail(str(exc))


fail = cli_args.fail
