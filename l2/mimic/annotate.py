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


def _repeat(state: dict, n: int) -> dict:
    """A recorded ``initial_state`` (leading dim 1) repeated for ``n`` envs."""
    return {k: _repeat(v, n) if isinstance(v, dict) else v.repeat(n, *([1] * (v.dim() - 1))) for k, v in state.items()}


def held(actions: torch.Tensor, hold_steps: int) -> torch.Tensor:
    """The demo's actions with its last one repeated ``hold_steps`` times."""
    return torch.cat([actions, actions[-1:].expand(hold_steps, -1)]) if hold_steps else actions


def _stacked(frames: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    return {name: torch.stack([frame[name] for frame in frames]) for name in frames[0]}


def replay(
    env: TaskSpaceMimicEnv, episode: EpisodeData, success_term: TerminationTermCfg, hold_steps: int = 0
) -> tuple[dict, bool]:
    """Replay one demo's actions (the last one ``hold_steps`` more times) in every env from its initial
    state; env 0's ``datagen_info`` and whether the success term held at some step."""
    actions = held(episode.data[schema.ACTIONS].to(env.device), hold_steps)
    rec = env.recorder_manager
    rec.reset()  # nothing of the replay is exported as a demo
    env.reset_to(_repeat(episode.data["initial_state"], env.num_envs), None, is_relative=True)
    env.obs_buf = env.observation_manager.compute()  # reset_to leaves the observations of before
    info = {"eef_pose": [], "object_pose": [], "target_eef_pose": [], "subtask_term_signals": []}
    success = False
    eef = env.cfg.eef_name
    for action in actions:
        info["eef_pose"].append({eef: env.get_robot_eef_pose(eef)[0]})
        info["object_pose"].append({k: v[0] for k, v in env.get_object_poses().items()})
        info["target_eef_pose"].append({eef: env.action_to_target_eef_pose(action[None])[eef][0]})
        info["subtask_term_signals"].append({k: v[0].float() for k, v in env.get_subtask_term_signals().items()})
        env.step(action.expand(env.num_envs, -1))
        success |= bool(success_term.func(env, **success_term.params)[0])
    rec.record_pre_reset(None, force_export_or_skip=False)  # closes the replay's camera spool episodes
    rec.reset()
    return {key: _stacked(frames) for key, frames in info.items()}, success


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
        for name in demos:
            episode = src.load_episode(name, env.device)
            if episode is None:
                raise AnnotationError(f"{source}:/data/{name}: no such demo")
            info, success = replay(env, episode, success_term, hold_steps)
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
