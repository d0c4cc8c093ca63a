"""Automatic annotation: replay source demos in the Mimic env and record Mimic's ``datagen_info``.

Isaac Lab Mimic's generator reads, per source demo, ``obs/datagen_info/{eef_pose, object_pose,
target_eef_pose, subtask_term_signals}`` (4x4 poses in the action's frame, 0/1 signals) beside the
demo's ``actions``. This module replays each demo's actions from its ``initial_state`` (the env
recomputes the signals from the task's ``subtask_terms`` observation group, so no human marks where a subtask
ends) and writes such an annotated file with Isaac Lab's own HDF5 handler, for ``DataGenInfoPool``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from isaaclab.utils.datasets import EpisodeData, HDF5DatasetFileHandler

from l2.format import schema

if TYPE_CHECKING:
    from isaaclab.managers import TerminationTermCfg

    from l2.mimic.env import TaskSpaceMimicEnv


class AnnotationError(RuntimeError):
    """A source demo that cannot be annotated (reported in one line, exit status 2)."""


@dataclass
class Annotation:
    demo: str
    steps: int
    subtask_ends: dict[str, int]
    """Per subtask signal, the first step where it is 1 (its subtask ends there, before Mimic's offset)."""
    replay_success: bool


def _stack_states(states: list[dict], n: int) -> dict:
    """Recorded ``initial_state`` s (leading dim 1) stacked one per env, the last repeated up to ``n`` envs."""
    states = states + [states[-1]] * (n - len(states))
    return {
        k: _stack_states([s[k] for s in states], n) if isinstance(v, dict) else torch.cat([s[k] for s in states])
        for k, v in states[0].items()
    }


def held(actions: torch.Tensor, hold_steps: int) -> torch.Tensor:
    """The demo's actions with its last one repeated ``hold_steps`` times."""
    return torch.cat([actions, actions[-1:].expand(hold_steps, -1)]) if hold_steps else actions


def _stacked(frames: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    return {name: torch.stack([frame[name] for frame in frames]) for name in frames[0]}


def replay(
    env: TaskSpaceMimicEnv, episodes: list[EpisodeData], success_term: TerminationTermCfg, hold_steps: int = 0
) -> list[tuple[dict, bool]]:
    """Replay up to ``num_envs`` demos at once, demo ``i`` in env ``i`` from its initial state (its actions, the
    last one ``hold_steps`` more times, then held while the longer ones go on); per demo its ``datagen_info`` and
    whether the success term held at one of its steps. The envs do not interact: a demo replays as it would alone."""
    actions = [held(e.data[schema.ACTIONS].to(env.device), hold_steps) for e in episodes]
    lengths = [len(a) for a in actions]
    padded = torch.stack([torch.cat([a, a[-1:].expand(max(lengths) - len(a), -1)]) for a in actions])
    padded = torch.cat([padded, padded[-1:].expand(env.num_envs - len(episodes), -1, -1)])
    rec = env.recorder_manager
    rec.reset()  # nothing of the replay is exported as a demo
    env.reset_to(_stack_states([e.data["initial_state"] for e in episodes], env.num_envs), None, is_relative=True)
    env.obs_buf = env.observation_manager.compute()  # reset_to leaves the observations of before
    info = {"eef_pose": [], "object_pose": [], "target_eef_pose": [], "subtask_term_signals": []}
    success = torch.zeros(env.num_envs, dtype=torch.bool, device=env.device)
    running = torch.tensor(lengths + [0] * (env.num_envs - len(episodes)), device=env.device)
    eef = env.cfg.eef_name
    for t in range(max(lengths)):
        action = padded[:, t]
        info["eef_pose"].append({eef: env.get_robot_eef_pose(eef)})
        info["object_pose"].append(env.get_object_poses())
        info["target_eef_pose"].append(env.action_to_target_eef_pose(action))
        info["subtask_term_signals"].append({k: v.float() for k, v in env.get_subtask_term_signals().items()})
        env.step(action)
        success |= success_term.func(env, **success_term.params).bool() & (t < running)
    rec.record_pre_reset(None, force_export_or_skip=False)  # closes the replay's camera spool episodes
    rec.reset()
    out = []
    for i, n in enumerate(lengths):
        frames = {key: [{k: v[i] for k, v in frame.items()} for frame in steps[:n]] for key, steps in info.items()}
        out.append(({key: _stacked(f) for key, f in frames.items()}, bool(success[i])))
    return out


def subtask_ends(env: TaskSpaceMimicEnv, signals: dict[str, torch.Tensor], where: str) -> dict[str, int]:
    """Where each subtask that has an end signal ends: the first 0 -> 1 rise of its signal, as Mimic's
    ``DataGenInfoPool`` takes the first change; an :class:`AnnotationError` when a signal never rises, changes
    first by falling, or the ends are not in the subtasks' order (the pool refuses such a demo)."""
    ends: dict[str, int] = {}
    for config in env.cfg.subtask_configs[env.cfg.eef_name]:
        name = config.subtask_term_signal
        if name is None:
            continue
        signal = signals[name] > 0.5
        changes = (signal[1:] != signal[:-1]).nonzero()
        if len(changes) == 0 or signal[int(changes[0])]:
            raise AnnotationError(
                f"{where}: replayed, its subtask '{config.description}' never ends "
                f"(no 0 -> 1 rise of the '{name}' subtask signal first)"
            )
        ends[name] = int(changes[0]) + 1
    order = list(ends.values())
    if order != sorted(set(order)):
        raise AnnotationError(f"{where}: replayed, its subtask signals rise out of the subtasks' order: {ends}")
    return ends


def annotate(
    env: TaskSpaceMimicEnv,
    source: str,
    demos: Sequence[str],
    output: str,
    success_term: TerminationTermCfg,
    hold_steps: int = 0,
) -> list[Annotation]:
    """Write ``demos`` of ``source`` with their ``datagen_info`` to ``output``; refuse a demo whose replay
    never ends one of its subtasks, or never succeeds (its segments would teach Mimic a failure).

    ``hold_steps``: the demo's last action is repeated this many times. A recorded demo ends at its first
    success step, so a generated attempt that lags behind its source (a farther cube) would end still
    rising; the hold gives it the time to reach the height."""
    src = HDF5DatasetFileHandler()
    src.open(source)
    out = HDF5DatasetFileHandler()
    out.create(output, env_name=env.cfg.env_name)
    done = []
    try:
        for first in range(0, len(demos), env.num_envs):
            names = demos[first : first + env.num_envs]
            episodes = []
            for name in names:
                episode = src.load_episode(name, env.device)
                if episode is None:
                    raise AnnotationError(f"{source}:/data/{name}: no such demo")
                episodes.append(episode)
            for name, episode, (info, success) in zip(
                names, episodes, replay(env, episodes, success_term, hold_steps), strict=True
            ):
                ends = subtask_ends(env, info["subtask_term_signals"], f"{source}:/data/{name}")
                if not success:
                    raise AnnotationError(
                        f"{source}:/data/{name}: replayed, the demo does not succeed (the replay "
                        "diverges from the recording); pick another demo"
                    )
                annotated = EpisodeData()
                annotated.data = {
                    schema.ACTIONS: held(episode.data[schema.ACTIONS], hold_steps),
                    "initial_state": episode.data["initial_state"],
                    schema.OBS: {"datagen_info": info},
                }
                annotated.success = True
                out.write_episode(annotated)
                done.append(Annotation(name, len(info["eef_pose"][env.cfg.eef_name]), ends, success))
        out.flush()
    finally:
        out.close()
        src.close()
    return done
