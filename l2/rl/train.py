"""Train a PPO policy (rsl_rl, through Isaac Lab's ``isaaclab_rl`` wrapper) on the RL lift-cube task.

Checkpoints (``model_<iteration>.pt``), TensorBoard logs and the env/agent cfgs go to
``logs/rl/<run>/``. The cameras are off while training (``presets=no_cameras``): the policy's input is
the state observation only. From scratch, lifting needs ~10^8 env steps (a GPU with thousands of envs);
on the CPU, PPO starts from the DAgger warm start of ``l2/rl/pretrain.py`` (``--init``, with the
fine-tuning agent cfg), as ``scripts/train_rl.sh`` does in about half an hour.

Examples::

    python l2/rl/train.py --agent rsl_rl_finetune_cfg_entry_point --init logs/rl/cpu_seed42/model_bc.pt \
        --critic_warmup 20 --num_envs 64 --run_name cpu_seed42            # the shipped policy's PPO stage
    python l2/rl/train.py --num_envs 4 --max_iterations 2                       # CPU smoke run
    isaaclab.sh -p l2/rl/train.py --device cuda --num_envs 4096 --max_iterations 1500
    python l2/rl/train.py --resume logs/rl/<run>/model_100.pt --max_iterations 100
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from l2.assets.franka_build import cache_root
from l2.format import cli_args
from l2.lift.config.franka import RL_TASK_ID
from l2.recording import cli, sim

DEFAULT_TASK = RL_TASK_ID
AGENT_ENTRY_POINT = "rsl_rl_cfg_entry_point"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = cli.runner_parser(__doc__)
    sim.add_sim_args(parser, num_envs=16, task=DEFAULT_TASK)
    group = parser.add_argument_group("training")
    group.add_argument(
        "--agent",
        default=AGENT_ENTRY_POINT,
        help="registry key of the rsl_rl cfg: rsl_rl_cfg_entry_point (from scratch) or rsl_rl_finetune_cfg_entry_point "
        "(from a warm start, no entropy bonus) (default: %(default)s)",
    )
    group.add_argument(
        "--max_iterations",
        type=cli_args.positive_int,
        default=None,
        help="PPO iterations (default: the agent cfg's, 1500 from scratch, 120 fine-tuning)",
    )
    start = group.add_mutually_exclusive_group()
    start.add_argument(
        "--resume",
        type=cli_args.existing_file,
        default=None,
        metavar="CHECKPOINT",
        help="continue from this model_<it>.pt",
    )
    start.add_argument(
        "--init",
        type=cli_args.existing_file,
        default=None,
        metavar="CHECKPOINT",
        help="start PPO from this actor (e.g. the warm start of l2/rl/pretrain.py) with a new critic",
    )
    group.add_argument(
        "--critic_warmup",
        type=cli_args.non_negative_int,
        default=0,
        metavar="ITERS",
        help="first fit the new critic for ITERS iterations with the actor frozen (with --init; default: %(default)s)",
    )
    group.add_argument(
        "--log_root",
        type=cli_args.output_folder,
        default="logs/rl",
        help="runs are written to LOG_ROOT/<run> (default: %(default)s)",
    )
    group.add_argument("--run_name", default=None, help="run folder name (default: date_time)")
    return parser.parse_args(argv)


def check_rl_task(task: str, entry_point: str = AGENT_ENTRY_POINT) -> None:
    """Refuse, before any simulator starts, a task whose registration names no rsl_rl runner cfg."""
    import gymnasium as gym

    sim.check_task(task)
    if entry_point not in gym.registry[task].kwargs:
        rl = sorted(k for k, spec in gym.registry.items() if entry_point in spec.kwargs and k.startswith("L2-"))
        raise sim.TaskCfgError(
            f"--task {task}: not an RL task, its registration names no {entry_point} (an rsl_rl runner cfg; "
            f"this package's RL tasks: {', '.join(rl)})"
        )


def load_agent_cfg(task: str, device: str, seed: int | None, entry_point: str = AGENT_ENTRY_POINT):
    """The task's registered rsl_rl runner cfg, adapted to the installed rsl-rl version."""
    import importlib.metadata

    from isaaclab_rl.rsl_rl import handle_deprecated_rsl_rl_cfg
    from isaaclab_tasks.utils import load_cfg_from_registry

    agent_cfg = load_cfg_from_registry(task, entry_point)
    agent_cfg = handle_deprecated_rsl_rl_cfg(agent_cfg, importlib.metadata.version("rsl-rl-lib"))
    agent_cfg.device = device
    if seed is not None:
        agent_cfg.seed = seed
    return agent_cfg


@contextlib.contextmanager
def frozen_actor(ppo) -> Iterator[None]:
    """PPO updates only the critic inside; after it the learning rate is back at its start value (the adaptive
    schedule raises it while the frozen actor's KL divergence is zero)."""
    params = list(ppo.actor.parameters())
    learning_rate = ppo.learning_rate
    for p in params:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p in params:
            p.requires_grad_(True)
        ppo.learning_rate = learning_rate
        for group in ppo.optimizer.param_groups:
            group["lr"] = learning_rate


def resume_parts(checkpoint: str) -> dict | None:
    """What to load from a checkpoint to continue from it: all of a run's own; actor and critic of a shipped one.

    Shipped checkpoints (l2/lift/config/<robot>/policies/) carry no optimizer state, so a fine-tune from one starts
    Adam afresh.
    """
    import torch

    saved = torch.load(checkpoint, map_location="cpu", weights_only=False)
    if "optimizer_state_dict" in saved:
        return None
    print(f"note: {checkpoint} holds no optimizer state (a shipped policy): Adam starts afresh")
    return {"actor": True, "critic": True, "iteration": True}


def train(args: argparse.Namespace) -> int:
    from isaaclab.utils.io import dump_yaml
    from isaaclab_rl.rsl_rl import RslRlVecEnvWrapper, create_rsl_rl_runner

    from l2.lift.camera_cfg import NO_CAMERAS
    from l2.rl.checkpoint import env_layout

    check_rl_task(args.task, args.agent)
    if args.init or args.resume:  # before the simulator starts
        from l2.rl.checkpoint import LayoutError, load

        try:
            load(args.init or args.resume, "cpu")
        except LayoutError as exc:
            cli.fail(str(exc))
    # The policy takes no images: render none while training (rollouts record the cameras).
    overrides = [f"presets={NO_CAMERAS}", *args.overrides]
    env_cfg = sim.load_env_cfg(args.task, args.device, args.num_envs, args.seed, overrides)
    agent_cfg = load_agent_cfg(args.task, args.device, args.seed, args.agent)
    if args.max_iterations is not None:
        agent_cfg.max_iterations = args.max_iterations
    run = args.run_name or datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    log_dir = Path(args.log_root) / run
    if log_dir.exists() and any(log_dir.glob("events.*")) and not args.resume:
        print(f"error: {log_dir} exists; choose another --run_name", file=sys.stderr)
        return 2
    log_dir.mkdir(parents=True, exist_ok=True)
    dump_yaml(str(log_dir / "params" / "env.yaml"), env_cfg)
    env_yaml = log_dir / "params" / "env.yaml"  # no machine paths in what may be shipped
    env_yaml.write_text(env_yaml.read_text().replace(str(cache_root()), "<L2L3_CACHE>"))
    dump_yaml(str(log_dir / "params" / "agent.yaml"), agent_cfg)
    dump_yaml(str(log_dir / "params" / "train.yaml"), {**vars(args), "argv": sys.argv})

    start = time.perf_counter()
    with sim.make_env(env_cfg, args.task) as env:
        vec_env = RslRlVecEnvWrapper(env, clip_actions=agent_cfg.clip_actions)
        runner = create_rsl_rl_runner(vec_env, agent_cfg, log_dir=str(log_dir))
        if args.resume:
            runner.load(args.resume, load_cfg=resume_parts(args.resume))
        if args.init:
            runner.load(args.init, load_cfg={"actor": True})
        warmup = min(args.critic_warmup, agent_cfg.max_iterations) if args.init else 0
        if warmup:
            with frozen_actor(runner.alg):
                runner.learn(num_learning_iterations=warmup, init_at_random_ep_len=True)
            runner.current_learning_iteration += 1  # learn() leaves it at its last iteration, not the next
        runner.learn(num_learning_iterations=agent_cfg.max_iterations - warmup, init_at_random_ep_len=not warmup)
        # rsl_rl saved the last model already; save it again with the layout a rollout checks it against.
        runner.save(str(log_dir / f"model_{runner.current_learning_iteration}.pt"), infos={"layout": env_layout(env)})
        steps = agent_cfg.max_iterations * agent_cfg.num_steps_per_env * env.num_envs
    seconds = time.perf_counter() - start
    checkpoints = sorted(log_dir.glob("model_[0-9]*.pt"), key=lambda p: int(p.stem.split("_")[1]))
    cli.print_summary(
        [
            ("iterations", f"{agent_cfg.max_iterations} ({steps} env steps, {args.num_envs} envs, {args.device})"),
            ("wall time", f"{seconds:.0f} s ({steps / seconds:.0f} env steps/s)"),
            ("logs", f"{log_dir}  (tensorboard --logdir {args.log_root}; plot: python -m l2.rl.plot {log_dir})"),
            ("checkpoint", str(checkpoints[-1]) if checkpoints else "none written"),
        ]
    )
    return 0 if checkpoints else 1


def main(argv: list[str] | None = None) -> int:
    return cli.run_reporting_errors(train, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
