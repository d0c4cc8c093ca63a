"""A task's scripted expert, named by its gym registration as Isaac Lab names agent cfgs.

A task registers ``scripted_expert_entry_point="module:factory"`` in its gym kwargs; ``factory(env, task)`` returns
an object with ``reset(env_ids=None)`` (restart those envs, all when None) and ``act(env) -> (N, 8)``: task-space
commands ``[x, y, z, qx, qy, qz, qw, gripper]`` for every env at once, the grasp point's pose in the robot root
frame, gripper +1 open … -1 closed (values between: part open). :class:`l2.recording.task_space.TaskSpaceDriver`
turns them into the env's own action.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from l2.recording.errors import OneLineError

if TYPE_CHECKING:
    import torch
    from isaaclab.envs import ManagerBasedRLEnv

ENTRY_POINT = "scripted_expert_entry_point"


class ScriptedExpert(Protocol):
    """What a task's expert factory returns."""

    def reset(self, env_ids: Sequence[int] | torch.Tensor | None = None) -> None: ...

    def act(self, env: ManagerBasedRLEnv) -> torch.Tensor: ...


class NoExpertError(OneLineError):
    """A task without a scripted expert (found before any simulator starts)."""


def tasks_with_expert() -> list[str]:
    """This package's gym ids that register a scripted expert."""
    import gymnasium as gym

    return sorted(k for k, spec in gym.registry.items() if k.startswith("L2-") and ENTRY_POINT in spec.kwargs)


def check_expert(task: str) -> None:
    """Raise :class:`NoExpertError` unless ``task`` (a registered gym id) names a scripted expert that imports."""
    import gymnasium as gym

    entry = gym.spec(task).kwargs.get(ENTRY_POINT)
    if entry is None:
        raise NoExpertError(
            f"{task} has no scripted expert: register {ENTRY_POINT}='module:factory' in its gym kwargs, "
            f"factory(env, task) -> an expert with reset(env_ids) and act(env) (tasks with one: "
            f"{', '.join(tasks_with_expert())})"
        )
    _factory(task, entry)


def _factory(task: str, entry: str | Callable) -> Callable:
    if callable(entry):
        return entry
    module, _, name = entry.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise NoExpertError(f"{task}: its {ENTRY_POINT} {entry!r} does not load: {exc}") from None


def make_expert(task: str, env: ManagerBasedRLEnv) -> ScriptedExpert:
    """The scripted expert ``task`` registers, built for ``env`` (all its envs)."""
    import gymnasium as gym

    check_expert(task)
    return _factory(task, gym.spec(task).kwargs[ENTRY_POINT])(env, task)
