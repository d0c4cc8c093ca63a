"""Closed-loop evaluation: run a policy in the lift task, measure its success rate, keep its rollouts.

The policy is an rsl_rl checkpoint run in-process (by default the shipped PPO policy), any server that
speaks Isaac-GR00T's policy-server protocol (a fine-tuned GR00T N1.6 on a GPU machine, or ``python -m
l2.serve``), or the recorded actions of a GR00T LeRobot dataset (``replay:``, served in-process over the
same protocol). A served policy sees the env's obs terms through the mapping config L3 built its training
dataset with (modality keys, columns, quaternion order, cameras, instruction), and its action chunk goes
back to the env's action through the inverse of the same config (docs/evaluate.md).

Episodes run in waves of --num_envs: the envs start their episodes together (one ``reset`` request per
wave) and an env whose episode has ended holds still until the wave is over, so every episode is counted
once, from its first step, whatever its length.

Examples::

    python -m l2.evaluate                                     # the shipped PPO policy, 16 episodes
    python -m l2.evaluate --episodes 64 --num_envs 32 --report outputs/eval/ppo.json --videos outputs/eval
    python -m l2.evaluate --policy server:gpu-box:5555 --episodes 50 --num_envs 10
    python -m l2.evaluate --policy replay:outputs/lift_cube_gr00t --reset-from data/demos/scripted_lift_cube.hdf5
    python -m l2.evaluate --policy rsl_rl:logs/rl/run/model_119.pt --record data/demos/policy_lift_cube.hdf5
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from l2.evaluate.run import evaluate
from l2.evaluate.spec import DEFAULT_CONFIG, DEFAULT_EPISODES, EvaluationError, PolicySpec, parse_policy
from l2.evaluate.spread import evaluate_spread, planned_episodes, process_count
from l2.format import cli_args
from l2.recording import cli, sim
from l2.recording.cli import AUTO, workers_arg


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = cli.runner_parser(__doc__, "python -m l2.evaluate")
    group = parser.add_argument_group("policy")
    group.add_argument(
        "--policy",
        type=parse_policy,
        default=None,
        metavar="SPEC",
        help="rsl_rl:PATH (an rsl_rl checkpoint), server:HOST:PORT (a GR00T policy server) or "
        "replay:DATASET (a GR00T LeRobot dataset's actions) (default: the task's shipped PPO policy)",
    )
    group.add_argument(
        "--config",
        type=cli_args.existing_file,
        default=None,
        help="served policies: the L3 mapping config the training dataset was converted with (default: with "
        "replay:DATASET the mapping written in it, meta/l3_mapping.yaml, when it was converted without one; "
        "else config/lift_cube.yaml)",
    )
    group.add_argument(
        "--action-horizon",
        type=cli_args.positive_int,
        default=None,
        metavar="H",
        help="actions of each answered chunk to apply before asking again (default: the whole chunk)",
    )
    group.add_argument(
        "--one-env-per-request",
        action="store_true",
        help="one request per env (batch of 1), for servers that answer one episode per call "
        "(Isaac-GR00T's replay policy); default: one request for all envs",
    )
    group.add_argument(
        "--timeout",
        type=cli_args.positive_float,
        default=60.0,
        help="seconds to wait for each server answer (default: %(default)s)",
    )
    group.add_argument("--api-token", default=None, help="the token a server was started with")
    group = parser.add_argument_group("episodes")
    group.add_argument(
        "--episodes",
        type=cli_args.positive_int,
        default=None,
        metavar="N",
        help=f"episodes to run (default: {DEFAULT_EPISODES}; with --reset-from, one per demo)",
    )
    group.add_argument(
        "--reset-from",
        type=cli_args.existing_file,
        default=None,
        metavar="L2FILE",
        help="start episode i in demo i's initial_state of this L2 file (paired comparisons, replays)",
    )
    group.add_argument(
        "--min-success",
        type=cli_args.fraction,
        default=None,
        metavar="RATE",
        help="exit 1 when the success rate is below this (e.g. 0.8)",
    )
    group = parser.add_argument_group("outputs")
    group.add_argument(
        "--report",
        type=cli_args.output_file,
        default=None,
        metavar="FILE.json",
        help="write the report (per episode) as JSON",
    )
    group.add_argument(
        "--videos",
        type=cli_args.output_folder,
        default=None,
        metavar="DIR",
        help="write MP4s of the first episodes, per camera",
    )
    group.add_argument(
        "--video-episodes",
        type=cli_args.positive_int,
        default=2,
        metavar="M",
        help="how many episodes --videos films (default: %(default)s)",
    )
    group.add_argument(
        "--record",
        type=cli_args.output_file,
        default=None,
        metavar="FILE",
        help="record the rollouts in the L2 schema (source tag 'policy'), e.g. data/demos/policy_lift_cube.hdf5",
    )
    group.add_argument(
        "--keep-failed", action="store_true", help="also record failed rollouts, to <FILE stem>_failed.hdf5"
    )
    exists = group.add_mutually_exclusive_group()
    exists.add_argument("--overwrite", action="store_true", help="replace an existing --record file")
    exists.add_argument("--append", action="store_true", help="add rollouts to an existing --record file")
    sim.add_sim_args(
        parser,
        num_envs=16,
        task=None,
        task_help="gym id of the task (default: the RL task for rsl_rl policies; the --reset-from file's "
        f"task, else {sim.DEFAULT_TASK}, for served policies)",
    )
    parser.add_argument(
        "--workers",
        type=workers_arg,
        default=AUTO,
        metavar="K",
        help="evaluation processes, each running its share of the episodes with its share of the envs; one report "
        "(default: auto = one per usable CPU core on the CPU for in-process policies, at most num_envs and the "
        "episodes; 1 on CUDA and for served policies, whose server may keep state between requests; K > 1 with "
        "server: only for a server that answers each request on its own)",
    )
    parser.add_argument("--first-episode", type=int, default=0, help=argparse.SUPPRESS)  # a worker's share
    parser.add_argument("--progress-file", default=None, help=argparse.SUPPRESS)
    args = cli.parse(parser, argv)
    if args.config is None:
        written = Path(args.policy.target) / "meta" / "l3_mapping.yaml" if args.policy else None
        use_written = args.policy is not None and args.policy.kind == "replay" and written.is_file()
        args.config = str(written if use_written else DEFAULT_CONFIG)
    if args.policy is None:
        from l2.rl.checkpoint import shipped_model
        from l2.rl.train import DEFAULT_TASK as RL_TASK

        try:
            args.policy = PolicySpec("rsl_rl", str(shipped_model(args.task or RL_TASK)))
        except sim.OneLineError as exc:
            parser.error(f"{exc} (--policy)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        _check_config(args.config)  # read by served policies only, but a bad one given is refused for every policy
        count = process_count(args)
        if count > 1:
            _preflight(args)
            return evaluate_spread(args, count, planned_episodes(args))
        return evaluate(args)
    except sim.OneLineError as exc:  # an EvaluationError, or the task's cfg refusing an override
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _check_config(path: str) -> None:
    from l3.config_file import load_mapping
    from l3.errors import ConfigError

    try:
        load_mapping(path)
    except ConfigError as exc:
        raise EvaluationError(str(exc)) from None
    except (UnicodeDecodeError, ValueError) as exc:  # a file that is not text
        raise EvaluationError(f"{path}: not a mapping config ({type(exc).__name__})") from None


def _preflight(args: argparse.Namespace) -> None:
    """What a spread evaluation is refused for before its processes start: an rsl_rl checkpoint that is not one, and
    the task's presets and overrides (a --reset-from file's task, when --task is not given, each process reads)."""
    if args.policy.kind == "rsl_rl":
        from l2.rl import checkpoint as ckpt
        from l2.rl.train import DEFAULT_TASK as RL_TASK

        try:
            ckpt.load(args.policy.target, "cpu")
        except ckpt.LayoutError as exc:
            raise EvaluationError(str(exc)) from None
        sim.parse_task_cfg(args.task or RL_TASK, args.device, args.num_envs, args.overrides)
    elif args.task or not args.reset_from:
        sim.parse_task_cfg(args.task or sim.DEFAULT_TASK, args.device, args.num_envs, args.overrides)
