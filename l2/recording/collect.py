"""The demo-collection loop and end-of-run summary shared by the automatic sources (scripted, RL)."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from l2.recording import cli

if TYPE_CHECKING:
    import torch
    from isaaclab.envs import ManagerBasedRLEnv


@dataclass
class CollectionStats:
    written: int = 0
    """Successful demos this run wrote to the main file."""
    in_file_before: int = 0
    attempts: int = 0
    """Finished episodes (success, failure or time-out)."""
    successes: int = 0
    frames: int = 0
    seconds: float = 0.0
    interrupted: cli.StopRequest | None = None
    """Set when SIGINT or SIGTERM stopped the run (the episodes in flight were not written)."""
    workers: int = 1
    """Collector processes (l2.recording.workers); ``seconds`` is then the longest one's stepping time."""
    merge_seconds: float = 0.0
    """Seconds spent merging the workers' shards into the output."""


def frame_rate(frames: int, seconds: float) -> str:
    """Env-frames/s as the progress bar and the summary print it: a decimal below 100 (camera runs make 5-30)."""
    rate = frames / max(seconds, 1e-9)
    return f"{rate:.1f}" if rate < 100 else f"{rate:.0f}"


def collect(
    env: ManagerBasedRLEnv,
    num_demos: int | None,
    max_attempts: int,
    step: Callable[[], None],
    on_done: Callable[[torch.Tensor], None],
    desc: str,
) -> CollectionStats:
    """Call ``step()`` (one env step for all envs) until ``num_demos`` successful demos are written, or
    until ``max_attempts`` episodes have finished (with ``num_demos=None``: until then, whatever succeeds).

    Episodes are counted per env in the order they start: each env counts its first
    ``ceil(max_attempts / num_envs)`` episodes, so the success rate is not biased towards short episodes
    (a fast env would otherwise count several quick successes while a slow one is still running).

    After each step, ``on_done(env_ids)`` gets the envs whose episode just ended (Isaac Lab has
    already reset them and the RecorderManager has exported them).
    """
    import torch
    from tqdm import tqdm

    from l2.recording.handler import dataset_handler

    handler = dataset_handler(env)
    stats = CollectionStats(in_file_before=handler.get_num_episodes())
    quota = -(-max_attempts // env.num_envs)
    episodes = torch.zeros(env.num_envs, dtype=torch.long, device=env.device)
    target, unit = (num_demos, "demo") if num_demos is not None else (quota * env.num_envs, "episode")
    start = time.perf_counter()
    with (
        tqdm(total=target, unit=unit, desc=desc, dynamic_ncols=True, mininterval=0.5) as bar,
        stop_after_step(bar) as stop,
    ):
        while (
            not stop and (num_demos is None or handler.successes_written < num_demos) and bool((episodes < quota).any())
        ):
            step()
            stats.frames += env.num_envs
            done = env.termination_manager.dones
            if done.any():
                done_ids = done.nonzero().flatten()
                counted = done_ids[episodes[done_ids] < quota]
                episodes[done_ids] += 1
                stats.attempts += len(counted)
                stats.successes += int(env.termination_manager.get_term("success")[counted].sum())
                on_done(done_ids)
            stats.seconds = time.perf_counter() - start
            bar.set_postfix(
                success=f"{stats.successes}/{stats.attempts}",
                fps=frame_rate(stats.frames, stats.seconds),
                refresh=False,
            )
            progress = handler.successes_written if num_demos is not None else stats.attempts
            bar.update(progress - bar.n)  # redraws at most every 0.1 s, also when 0
    stats.written = handler.successes_written
    stats.interrupted = stop if stop else None
    return stats


def stop_after_step(bar) -> contextlib.AbstractContextManager[cli.StopRequest]:
    """:func:`l2.recording.cli.stop_on_signals`, saying so under the progress bar ``bar``."""
    return cli.stop_on_signals(lambda req: bar.write(f"{req.name}: stopping after this step (again: at once)"))


def finish(args: argparse.Namespace, stats: CollectionStats, output: Path) -> int:
    """Print the end summary (with the validator's verdict); exit code 0 only for N valid demos."""
    ok, verdict = cli.validator_verdict(output) if output.exists() else (False, "no file written")
    cli.write_stats(
        args,
        demos=stats.written,
        attempts=stats.attempts,
        successes=stats.successes,
        frames=stats.frames,
        seconds=stats.seconds,
    )
    rate = stats.successes / stats.attempts if stats.attempts else 0.0
    in_file = f" (file now holds {stats.in_file_before + stats.written})" if stats.in_file_before else ""
    if stats.written > stats.successes:  # --episodes: envs that finish early run (and record) further episodes
        in_file += f", {stats.written - stats.successes} of them from episodes after the {stats.attempts} counted"
    interrupted = (
        [
            (
                "interrupted",
                f"by {stats.interrupted.name}: the episodes in flight were dropped, the demos written are kept",
            )
        ]
        if stats.interrupted
        else []
    )
    spread = f" in {stats.workers} processes" if stats.workers > 1 else ""
    merged = (
        f" (the {stats.workers} workers' shards merged in {stats.merge_seconds:.1f} s)" if stats.workers > 1 else ""
    )
    fps = f"{frame_rate(stats.frames, stats.seconds)} ({args.num_envs} envs{spread}, {args.device})"
    cli.print_summary(
        [
            *interrupted,
            ("demos written", f"{stats.written}{in_file}"),
            ("success rate", f"{stats.successes}/{stats.attempts} episodes ({100 * rate:.1f} %)"),
            ("env-frames/s", fps),
            ("file", str(output) + merged),
            (
                "failed episodes",
                str(output.with_name(output.stem + "_failed.hdf5")) if args.keep_failed else "not kept",
            ),
            ("validator", verdict),
        ]
    )
    if stats.interrupted:
        return stats.interrupted.exit_code
    if args.episodes is None and stats.written < args.num_demos:
        print(f"error: only {stats.written} of {args.num_demos} demos after {stats.attempts} episodes", file=sys.stderr)
        return 1
    return 0 if ok else 1
