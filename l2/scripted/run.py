"""Collect demonstrations with the task's scripted expert (its gym registration's ``scripted_expert_entry_point``:
the lift's pick-and-lift state machine, the SO-101 stack's stacking expert).

Runs kit-less on the CPU by default (Newton/MuJoCo-Warp) and writes Isaac Lab's HDF5 schema through
its RecorderManager: one ``data/demo_<i>`` group per successful episode, with ``actions`` (the task's own: the
Franka's IK-absolute ``x, y, z, qx, qy, qz, qw, gripper``, the SO-101's joint targets), ``obs/<term>``,
``initial_state``, ``success`` and ``seed``.

Examples::

    python l2/scripted/run.py --num_demos 10
    python l2/scripted/run.py --num_envs 64 --num_demos 200 --append
    python l2/scripted/run.py --task L2-Stack-Cube-SO101-Scripted-v0 --num_envs 16 --num_demos 32
    isaaclab.sh -p l2/scripted/run.py --device cuda --num_envs 1024 --num_demos 5000 --overwrite
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from l2.recording import cli, sim, workers

DEFAULT_TASK = f"{sim.DEFAULT_TASK}-Scripted"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = cli.runner_parser(__doc__)
    sim.add_sim_args(parser, num_envs=16, task=DEFAULT_TASK)
    cli.add_output_args(parser, source="scripted", num_demos=10, workers=True)
    cli.add_attempt_args(parser)
    parser.add_argument("--log_actions", default=None, help="also save every action the expert emits (.npz)")
    return cli.parse(parser, argv)


def collect(args: argparse.Namespace) -> int:
    import numpy as np

    from l2.recording import collect
    from l2.recording.task_space import TaskSpaceDriver
    from l2.scripted.expert import make_expert

    env_cfg = sim.load_env_cfg(args.task, args.device, args.num_envs, args.seed, args.overrides)
    num_demos, max_attempts = cli.attempt_limits(args)
    output = cli.record_to(env_cfg, args, max_successes=num_demos)
    log: list[np.ndarray] = []

    with sim.make_env(env_cfg, args.task) as env:
        expert = make_expert(args.task, env)
        driver = TaskSpaceDriver(env)  # the robot's own action: its IK-absolute pose, or its joint targets

        def step() -> None:
            actions = driver.action(expert.act(env))
            if args.log_actions:
                log.append(actions.cpu().numpy().copy())
            env.step(actions)

        env.reset()
        stats = collect.collect(env, num_demos, max_attempts, step, expert.reset, desc="scripted demos")

    if args.log_actions:
        np.savez_compressed(args.log_actions, actions=np.stack(log) if log else np.zeros((0, args.num_envs, 8)))
    return collect.finish(args, stats, output)


def main(argv: list[str] | None = None) -> int:
    from l2.scripted.expert import check_expert

    return workers.run_collector(
        collect, parse_args(argv), __file__, desc="scripted demos", check=lambda args: check_expert(args.task)
    )


if __name__ == "__main__":
    sys.exit(main())
