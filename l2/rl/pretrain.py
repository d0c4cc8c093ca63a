"""Warm-start the PPO actor from the scripted expert: behaviour cloning with DAgger, saved as an rsl_rl checkpoint.

Round 0 lets the scripted expert act (its targets as a function of the state, in the RL variant's
joint-position action space: ``l2/rl/expert.py``); every later round lets the policy trained so far act in
a growing share of the episodes while the expert labels each state visited (DAgger), so the policy also
learns to recover from its own mistakes. After each round
the actor is fitted to all labels gathered so far. The checkpoint is a normal rsl_rl one (actor and an
untrained critic): ``l2/rl/train.py --init`` continues from it with PPO.

Examples::

    python l2/rl/pretrain.py --output logs/rl/lift/model_bc.pt
    python l2/rl/pretrain.py --num_envs 16 --rounds 2 --output /tmp/bc.pt      # quick check
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from l2.format import cli_args
from l2.recording import cli, sim
from l2.rl.train import DEFAULT_TASK, load_agent_cfg


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = cli.runner_parser(__doc__)
    sim.add_sim_args(parser, num_envs=64, task=DEFAULT_TASK)
    group = parser.add_argument_group("behaviour cloning")
    group.add_argument(
        "--output", type=cli_args.output_file, required=True, help="checkpoint to write (refused if it exists)"
    )
    group.add_argument(
        "--rounds",
        type=cli_args.positive_int,
        default=8,
        help="data rounds: 1 expert + DAgger rounds (default: %(default)s)",
    )
    group.add_argument(
        "--steps",
        type=cli_args.positive_int,
        default=250,
        help="env steps per round (default: %(default)s, one episode)",
    )
    group.add_argument(
        "--epochs",
        type=cli_args.positive_int,
        default=40,
        help="passes over the data after each round (default: %(default)s)",
    )
    group.add_argument(
        "--batch", type=cli_args.positive_int, default=2048, help="minibatch size (default: %(default)s)"
    )
    group.add_argument(
        "--lr", type=cli_args.positive_float, default=1e-3, help="Adam learning rate (default: %(default)s)"
    )
    group.add_argument(
        "--beta",
        type=cli_args.fraction,
        default=0.5,
        help="round r lets the expert act in a share beta^r of the episodes, the policy in the rest "
        "(default: %(default)s)",
    )
    group.add_argument(
        "--std",
        type=cli_args.positive_float,
        default=0.05,
        help="action std the saved actor starts PPO with (default: %(default)s)",
    )
    return parser.parse_args(argv)


def fit(actor, obs, labels, last_action: slice, args: argparse.Namespace, generator) -> float:
    """Minimise the squared error between the actor's mean action and the expert's; returns the last loss.

    The previous action is part of the observation and nearly equals the next expert action, so a cloned
    policy would learn to repeat it and never react (the "copycat" problem of behaviour cloning). Its
    columns are shuffled across each minibatch: same distribution, no information.
    """
    import torch
    from tensordict import TensorDict

    actor.train()
    actor.update_normalization(TensorDict({"policy": obs}, batch_size=[len(obs)]))
    params = [p for name, p in actor.named_parameters() if not name.startswith("distribution")]
    optimizer = torch.optim.Adam(params, lr=args.lr)
    loss = torch.zeros(())
    for _ in range(args.epochs):
        for idx in torch.randperm(len(obs), generator=generator).split(args.batch):
            batch = obs[idx]
            batch[:, last_action] = batch[torch.randperm(len(idx), generator=generator), last_action]
            mean = actor(TensorDict({"policy": batch}, batch_size=[len(idx)]))
            loss = torch.nn.functional.mse_loss(mean, labels[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    actor.eval()
    return loss.item()


def _set_std(actor, std: float) -> None:
    import torch

    with torch.no_grad():
        dist = actor.distribution
        if hasattr(dist, "std_param"):
            dist.std_param.fill_(std)
        else:
            dist.log_std_param.fill_(math.log(std))


def _term_columns(terms: list[list], name: str) -> slice:
    start = 0
    for term, width in terms:
        if term == name:
            return slice(start, start + width)
        start += width
    raise ValueError(f"no observation term '{name}' in {terms}")


def pretrain(args: argparse.Namespace) -> int:
    import torch
    from isaaclab_rl.rsl_rl import RslRlVecEnvWrapper, create_rsl_rl_runner
    from tqdm import tqdm

    from l2.lift.camera_cfg import NO_CAMERAS
    from l2.rl.checkpoint import env_layout
    from l2.rl.expert import JointSpaceExpert

    output = Path(args.output)
    if output.exists():
        cli.fail(f"{output} exists; choose another --output")
    output.parent.mkdir(parents=True, exist_ok=True)
    env_cfg = sim.load_env_cfg(
        args.task, args.device, args.num_envs, args.seed, [f"presets={NO_CAMERAS}", *args.overrides]
    )
    agent_cfg = load_agent_cfg(args.task, args.device, args.seed)
    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    rows = []
    start = time.perf_counter()
    with sim.make_env(env_cfg, args.task) as env:
        vec_env = RslRlVecEnvWrapper(env, clip_actions=agent_cfg.clip_actions)
        runner = create_rsl_rl_runner(vec_env, agent_cfg, log_dir=None)
        actor = runner.alg.actor
        expert = JointSpaceExpert(env, args.task)
        last_action = _term_columns(env_layout(env)["observation"], "actions")
        obs = vec_env.get_observations()
        expert_acts = torch.ones(env.num_envs, dtype=torch.bool, device=env.device)
        data_obs, data_labels = [], []
        for rnd in range(args.rounds):
            beta = args.beta**rnd
            finished = {True: [0, 0], False: [0, 0]}  # controller -> [successes, episodes]
            for _ in tqdm(range(args.steps), desc=f"round {rnd} (expert share {beta:.2f})", leave=False):
                label = expert.act()
                with torch.inference_mode():
                    policy_action = actor(obs)
                data_obs.append(obs["policy"].clone())
                data_labels.append(label.clone())
                action = torch.where(expert_acts.unsqueeze(-1), label, policy_action)
                obs, _, dones, _ = vec_env.step(action)
                done_ids = dones.nonzero().flatten()
                if len(done_ids):
                    success = env.termination_manager.get_term("success")[done_ids]
                    for by_expert in (True, False):
                        mask = expert_acts[done_ids] == by_expert
                        finished[by_expert][0] += int(success[mask].sum())
                        finished[by_expert][1] += int(mask.sum())
                    expert.reset(done_ids)
                    expert_acts[done_ids] = torch.rand(len(done_ids), device=env.device) < beta
            loss = fit(actor, torch.cat(data_obs), torch.cat(data_labels), last_action, args, generator)
            row = {
                "round": rnd,
                "samples": sum(len(o) for o in data_obs),
                "loss": loss,
                "expert_successes": finished[True][0],
                "expert_episodes": finished[True][1],
                "policy_successes": finished[False][0],
                "policy_episodes": finished[False][1],
                "seconds": round(time.perf_counter() - start, 1),
            }
            rows.append(row)
            _set_std(actor, args.std)
            runner.save(
                str(output.with_name(f"{output.stem}_round{rnd}.pt")),
                infos={"pretrain": rows, "layout": env_layout(env)},
            )
            print(
                f"round {rnd}: {row['samples']} samples, loss {loss:.4f}, "
                f"expert {finished[True][0]}/{finished[True][1]}, "
                f"policy {finished[False][0]}/{finished[False][1]} episodes succeeded",
                flush=True,
            )
        runner.save(str(output), infos={"pretrain": rows, "layout": env_layout(env)})
    log = output.with_suffix(".csv")
    with log.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    cli.print_summary(
        [
            ("rounds", f"{args.rounds} ({rows[-1]['samples']} labelled states, {args.num_envs} envs)"),
            ("wall time", f"{time.perf_counter() - start:.0f} s"),
            ("checkpoint", str(output)),
            ("round log", str(log)),
        ]
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    return cli.run_reporting_errors(pretrain, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
