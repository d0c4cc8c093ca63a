"""Record lift-cube demonstrations by rolling out a trained PPO policy (rsl_rl checkpoint).

The env runs the RL variant (concatenated policy observation, joint-position actions); the
recorder writes the same schema as the other sources: ``obs/<term>`` split from the flat
observation, ``actions`` = the equivalent IK-absolute action (end-effector pose reached + gripper),
``policy_actions`` = the policy's own action, ``initial_state``, ``success``, ``seed``.

Examples::

    python l2/rl/rollout.py --num_demos 8                                  # the shipped policy
    python l2/rl/rollout.py --episodes 64 --num_envs 64 presets=no_cameras  # its success rate
    python l2/rl/rollout.py --checkpoint logs/rl/<run>/model_300.pt --num_demos 10
    python l2/rl/rollout.py --checkpoint policy.pt --num_demos 50 --keep-failed --append
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from l2.format import cli_args
from l2.recording import cli, sim, workers
from l2.rl.train import DEFAULT_TASK, check_rl_task, load_agent_cfg


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = cli.runner_parser(__doc__)
    parser.add_argument(
        "--checkpoint",
        type=cli_args.existing_file,
        default=None,
        help="rsl_rl checkpoint (model_<it>.pt) written by l2/rl/train.py (default: the task's shipped policy, "
        "on the Franka l2/lift/config/franka/policies/rl/model.pt)",
    )
    sim.add_sim_args(parser, num_envs=16, task=DEFAULT_TASK)
    cli.add_output_args(parser, source="rl", num_demos=10, workers=True)
    cli.add_attempt_args(parser)
    return cli.parse(parser, argv)


def rollout(args: argparse.Namespace) -> int:
    import torch

    from l2.recording import collect
    from l2.rl import checkpoint as ckpt
    from l2.rl.recorders import rl_recorders

    checkpoint_path = Path(args.checkpoint or ckpt.shipped_model(args.task))
    try:
        checkpoint = ckpt.load(checkpoint_path, args.device)
    except ckpt.LayoutError as exc:
        cli.fail(str(exc))
    env_cfg = sim.load_env_cfg(args.task, args.device, args.num_envs, args.seed, args.overrides)
    agent_cfg = load_agent_cfg(args.task, args.device, args.seed)
    num_demos, max_attempts = cli.attempt_limits(args)
    output = cli.record_to(env_cfg, args, max_successes=num_demos, recorders=rl_recorders(env_cfg))

    with sim.make_env(env_cfg, args.task) as env:
        try:
            vec_env, policy = ckpt.inference_policy(env, checkpoint_path, checkpoint, agent_cfg)
        except ckpt.LayoutError as exc:
            cli.fail(str(exc))
        obs = vec_env.get_observations()

        def step() -> None:
            nonlocal obs
            with torch.inference_mode():
                obs, _, _, _ = vec_env.step(policy(obs))

        stats = collect.collect(env, num_demos, max_attempts, step, lambda _ids: None, desc="rl demos")
    return collect.finish(args, stats, output)


def main(argv: list[str] | None = None) -> int:
    return workers.run_collector(rollout, parse_args(argv), __file__, desc="rl demos", check=_check_checkpoint)


def _check_checkpoint(args: argparse.Namespace) -> None:
    """Refuse, before any simulator starts, a task that is not an RL one, and a --checkpoint (or the task's shipped
    policy) that is not an rsl_rl checkpoint."""
    from l2.rl import checkpoint as ckpt

    try:
        check_rl_task(args.task)
        ckpt.load(args.checkpoint or ckpt.shipped_model(args.task), "cpu")
    except (ckpt.LayoutError, sim.TaskCfgError) as exc:
        cli.fail(str(exc))


if __name__ == "__main__":
    sys.exit(main())
