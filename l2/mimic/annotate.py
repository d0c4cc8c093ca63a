"""Automatic annotation: replay source demos in the Mimic env and record Mimic's ``datagen_info``.

Isaac Lab Mimic's generator reads, per source demo, ``obs/datagen_info/{eef_pose, object_pose,
target_eef_pose, subtask_term_signals}`` (4x4 poses in the action's frame, 0/1 signals) beside the
demo's ``actions``. This module replays each demo's actions from its ``initial_state`` (the env
recomputes the signals from the ``subtask_terms`` observation group, so no human marks the grasp) and
writes such an annotated file with Isaac Lab's own HDF5 handler, for ``DataGenInfoPool``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from isaaclab.utils.datasets import EpisodeData, HDF5DatasetFileHandler

from l2.format import schema
from l2.lift.variants import GRASP_SIGNAL, OBJECT_NAME

if TYPE_CHECKING:
    from isaaclab.managers import TerminationTermCfg

    from l2.mimic.env import LiftCubeMimicEnv


class AnnotationError(RuntimeError):
    """A source demo that cannot be annotated (reported in one line, exit status 2)."""


@dataclass
class Annotation:
    demo: str
    steps: int
    grasp_step: int
    """First step whose ``grasp`` signal is 1 (the grasp subtask ends there, before Mimic's offset)."""
    replay_success: bool


def _repeat(state: dict, n: int) -> dict:
    """A recorded ``initial_state`` (leading dim 1) repeated for ``n`` envs."""
    return {k: _repeat(v, n) if isinstance(v, dict) else v.repeat(n, *([1] * (v.dim() - 1))) for k, v in state.items()}


def held(actions: torch.Tensor, hold_steps: int) -> torch.Tensor:
    """The demo's actions with its last one repeated ``hold_steps`` times."""
    return torch.cat([actions, actions[-1:].expand(hold_steps, -1)]) if hold_steps else actions


def replay(
    env: LiftCubeMimicEnv, episode: EpisodeData, success_term: TerminationTermCfg, hold_steps: int = 0
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
    for action in actions:
        info["eef_pose"].append(env.get_robot_eef_pose(env.cfg.eef_name)[0])
        info["object_pose"].append(env.get_object_poses()[OBJECT_NAME][0])
        info["target_eef_pose"].append(env.action_to_target_eef_pose(action[None])[env.cfg.eef_name][0])
        info["subtask_term_signals"].append(env.get_subtask_term_signals()[GRASP_SIGNAL][0].float())
        env.step(action.expand(env.num_envs, -1))
        success |= bool(success_term.func(env, **success_term.params)[0])
    rec.record_pre_reset(None, force_export_or_skip=False)  # closes the replay's camera spool episodes
    rec.reset()
    stack = {k: torch.stack(v) for k, v in info.items()}
    datagen_info = {
        "eef_pose": {env.cfg.eef_name: stack["eef_pose"]},
        "object_pose": {OBJECT_NAME: stack["object_pose"]},
        "target_eef_pose": {env.cfg.eef_name: stack["target_eef_pose"]},
        "subtask_term_signals": {GRASP_SIGNAL: stack["subtask_term_signals"]},
    }
    return datagen_info, success


def annotate(
    env: LiftCubeMimicEnv,
    source: str,
    demos: Sequence[str],
    output: str,
    success_term: TerminationTermCfg,
    hold_steps: int = 0,
) -> list[Annotation]:
    """Write ``demos`` of ``source`` with their ``datagen_info`` to ``output``; refuse a demo whose replay
    never grasps the cube or never succeeds (its segments would teach Mimic a failure).

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
            grasp = info["subtask_term_signals"][GRASP_SIGNAL]
            # Mimic ends the grasp subtask at the first 0 -> 1 rise of its signal.
            rises = ((grasp[1:] > 0.5) & (grasp[:-1] < 0.5)).nonzero()
            if len(rises) == 0:
                raise AnnotationError(
                    f"{source}:/data/{name}: replayed, the cube is never grasped "
                    "(no 0 -> 1 rise of the 'grasp' subtask signal)"
                )
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
            done.append(Annotation(name, len(grasp), int(rises[0]) + 1, success))
        out.flush()
    finally:
        out.close()
        src.close()
    return done
