"""Building lift-cube envs the same way for every source: task cfg, device, presets, offline asset."""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from l2.format import cli_args
from l2.recording.errors import OneLineError, RecordingIOError

if TYPE_CHECKING:
    from isaaclab.envs import ManagerBasedRLEnv, ManagerBasedRLEnvCfg

DEFAULT_TASK = "L2-Lift-Cube-Franka-IK-Abs"


class TaskCfgError(OneLineError):
    """A task, preset or override that the registered cfgs cannot take (found before any simulator starts)."""


def device_arg(text: str) -> str:
    """``--device``: ``cpu``, ``cuda`` or ``cuda:N``."""
    kind, _, index = text.partition(":")
    if kind not in ("cpu", "cuda") or (index and not (kind == "cuda" and index.isdigit())):
        raise argparse.ArgumentTypeError(f"{text!r}: give cpu, cuda or cuda:N")
    return text


def override_arg(text: str) -> str:
    """A Hydra-style override: ``key=value`` (``+key=value`` adds a key, ``~key`` removes one)."""
    key, sep, _ = text.partition("=")
    if not (sep or text.startswith("~")) or not key.strip("+~ "):
        raise argparse.ArgumentTypeError(f"{text!r}: give KEY=VALUE, e.g. presets=variety or env.episode_length_s=8")
    return text


TASK_MODULES = "L2_TASK_MODULES"
"""Environment variable: comma-separated Python modules that register more gym ids (a user's task package),
imported by :func:`register_tasks` in every process of a run."""


def task_arg(text: str) -> str:
    """``--task``: a gym id, or ``MODULE:ID`` (gymnasium's form): ``MODULE`` is imported first, here and, through
    :data:`TASK_MODULES`, in every process the run starts, so that it registers ``ID``."""
    import importlib
    import os

    module, sep, task = text.rpartition(":")
    if not sep:
        return text
    try:
        importlib.import_module(module)
    except Exception as exc:  # a user's module: whatever its import raises is its error, in one line
        raise argparse.ArgumentTypeError(f"cannot import {module} (from {text!r}): {exc}") from None
    modules = [m for m in os.environ.get(TASK_MODULES, "").split(",") if m]
    os.environ[TASK_MODULES] = ",".join(dict.fromkeys([*modules, module]))
    return task


def add_sim_args(
    parser: argparse.ArgumentParser,
    *,
    num_envs: int,
    task: str | None = DEFAULT_TASK,
    task_help: str = "gym id of the task, or MODULE:ID to import the module that registers it (default: %(default)s)",
) -> None:
    """Isaac Lab's usual flags, plus Hydra-style ``key=value`` overrides (e.g. ``physics=physx``)."""
    group = parser.add_argument_group("simulation")
    group.add_argument("--task", type=task_arg, default=task, help=task_help)
    group.add_argument(
        "--num_envs", type=cli_args.positive_int, default=num_envs, help="parallel envs (default: %(default)s)"
    )
    group.add_argument("--device", type=device_arg, default="cpu", help="cpu, cuda or cuda:N (default: %(default)s)")
    group.add_argument(
        "--seed", type=cli_args.seed, default=42, help="env seed, recorded on every episode (default: %(default)s)"
    )
    group.add_argument(
        "--headless", action="store_true", default=True, help="no viewer (always on kit-less; kept for Isaac Lab's CLI)"
    )
    group.add_argument(
        "overrides",
        nargs="*",
        type=override_arg,
        metavar="KEY=VALUE",
        help="Isaac Lab cfg overrides and presets, e.g. physics=physx, presets=franka_nucleus, env.episode_length_s=8",
    )


def register_tasks() -> None:
    """Register the gym ids of this package's tasks (each l2 subpackage registers its own in its ``__init__``,
    which imports nothing heavier than gymnasium), then those of the modules :data:`TASK_MODULES` names."""
    import importlib
    import os
    import pkgutil

    import l2

    for package in pkgutil.iter_modules(l2.__path__, "l2."):
        if package.ispkg:
            importlib.import_module(package.name)
    for module in filter(None, os.environ.get(TASK_MODULES, "").split(",")):
        try:
            importlib.import_module(module)
        except Exception as exc:
            raise TaskCfgError(f"{TASK_MODULES}: cannot import {module}: {exc}") from None


def load_env_cfg(
    task: str, device: str, num_envs: int, seed: int | None, overrides: Sequence[str] = ()
) -> ManagerBasedRLEnvCfg:
    """Parse the registered cfg with presets/overrides applied and make sure its robot asset exists."""
    from l2.assets.franka_build import ensure_franka_usd, franka_usd_path
    from l2.assets.so101_build import ensure_so101_usd, so101_usd_path

    env_cfg = parse_task_cfg(task, device, num_envs, overrides)
    env_cfg.seed = seed
    usd = getattr(env_cfg.scene.robot.spawn, "usd_path", None)
    for path, ensure in ((franka_usd_path(), ensure_franka_usd), (so101_usd_path(), ensure_so101_usd)):
        if usd == str(path):
            ensure()  # built offline when missing (l2/assets/)
    return env_cfg


def parse_task_cfg(task: str, device: str, num_envs: int, overrides: Sequence[str] = ()) -> ManagerBasedRLEnvCfg:
    """The registered cfg of ``task`` with ``overrides`` applied (Isaac Lab's ``parse_env_cfg``); a
    :class:`TaskCfgError` for an unknown task, preset or key, or a value of the wrong type. Starts no simulator."""
    init_warp(device)
    from isaaclab_tasks.utils import parse_env_cfg

    check_task(task)
    try:
        env_cfg = parse_env_cfg(task, device=device, num_envs=num_envs, overrides=list(overrides))
    except (ValueError, AttributeError, KeyError, TypeError, IndexError) as exc:  # what a bad preset or key raises
        raise TaskCfgError(_override_error(task, overrides, exc)) from None
    _check_override_types(task, overrides, env_cfg)
    return env_cfg


NO_CUDA_NOTE = "Warp CUDA warning: Could not find or load the NVIDIA CUDA driver."


def init_warp(device: str) -> None:
    """Initialise Warp (Isaac Lab does on import); for a CPU run, without the line Warp's native code prints on
    stderr on every machine without a CUDA driver (anything else it prints is passed on)."""
    import os
    import tempfile

    import warp as wp

    if not device.startswith("cpu"):
        wp.init()
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:
            wp.init()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        caught.seek(0)
        text = caught.read().decode(errors="replace")
    rest = [line for line in text.splitlines() if line and not line.startswith(NO_CUDA_NOTE)]
    if rest:
        print("\n".join(rest), file=sys.stderr, flush=True)


def check_task(task: str) -> None:
    """Raise :class:`TaskCfgError` unless ``task`` is a registered gym id (ours are registered first)."""
    import gymnasium as gym

    register_tasks()
    if task not in gym.registry:
        ours = sorted(k for k in gym.registry if k.startswith("L2-"))
        raise TaskCfgError(f"--task {task}: no such registered task (this package's: {', '.join(ours)})")


def _override_error(task: str, overrides: Sequence[str], exc: Exception) -> str:
    """One line for what ``parse_env_cfg`` raised on ``overrides``: the overrides, Isaac Lab's first line, and for an
    unknown preset the task's preset names."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    line = f"{' '.join(overrides)}: {first}"
    if "preset" in first.lower():
        from isaaclab_tasks.utils.hydra import collect_presets
        from isaaclab_tasks.utils.parse_cfg import load_cfg_from_registry

        names = {
            n
            for fields in collect_presets(load_cfg_from_registry(task, "env_cfg_entry_point")).values()
            for n in fields
        }
        line += f" (the presets of {task}: {', '.join(sorted(names - {'default'}))})"
    return line


def _check_override_types(task: str, overrides: Sequence[str], env_cfg) -> None:
    """Raise :class:`TaskCfgError` for an ``env.<path>=VALUE`` override whose value is not of the type the task's
    cfg holds there (Isaac Lab sets any value it is given, e.g. ``env.episode_length_s=abc`` as a string, and the
    run would fail only once the env is built)."""
    from isaaclab_tasks.utils.parse_cfg import load_cfg_from_registry

    default = None
    for text in overrides:
        key, _, value = text.partition("=")
        if not key.startswith("env."):
            continue
        *parents, leaf = key[4:].split(".")
        parent = _at(env_cfg, ".".join(parents)) if parents else env_cfg
        fields = getattr(parent, "__dataclass_fields__", None)
        if fields is not None and leaf not in fields:  # Isaac Lab would set it as a new attribute nothing reads
            raise TaskCfgError(f"{text}: {task}'s cfg has no {key} (+{key}=... adds a key on purpose)")
        if default is None:
            default = load_cfg_from_registry(task, "env_cfg_entry_point")
        before, after = _at(default, key[4:]), _at(env_cfg, key[4:])
        if before is None or after is None:
            continue
        number = isinstance(before, int | float) and not isinstance(before, bool)
        if (number and not (isinstance(after, int | float) and not isinstance(after, bool))) or (
            isinstance(before, bool) and not isinstance(after, bool)
        ):
            raise TaskCfgError(f"{text}: {key} holds a {type(before).__name__} ({before!r}), not {value!r}")


def _at(cfg, path: str):
    """The value at a dotted ``path`` of a cfg (None when a part is missing)."""
    for part in path.split("."):
        cfg = cfg.get(part) if isinstance(cfg, dict) else getattr(cfg, part, None)
        if cfg is None:
            return None
    return cfg


@contextlib.contextmanager
def make_env(env_cfg: ManagerBasedRLEnvCfg, task: str, **launcher_args) -> Iterator[ManagerBasedRLEnv]:
    """Launch the runtime the cfg needs (nothing of Kit for Newton) and yield the unwrapped env.

    ``launcher_args`` go to Isaac Lab's ``launch_simulation`` over the defaults (headless, the cfg's
    device), e.g. ``headless=False, visualizer=["kit"]`` for an Isaac Sim window.
    """
    import gymnasium as gym
    from isaaclab.app import launch_simulation

    # One line per finger capsule of the offline Franka, harmless: MuJoCo's CCD ignores geom margins.
    warnings.filterwarnings("ignore", message=".*authored margin.*zeroed", category=UserWarning)

    with launch_simulation(env_cfg, {"headless": True, "device": env_cfg.sim.device, **launcher_args}):
        env = gym.make(task, cfg=env_cfg).unwrapped
        try:
            from l2.recording.handler import add_file_metadata, check_append_layout, close_after_io_error

            check_append_layout(env)  # before the first step: a mismatch is known now, not at the first demo
            add_file_metadata(env)
            yield env
        except RecordingIOError as exc:
            print(f"error: {exc.line(close_after_io_error(env))}", file=sys.stderr, flush=True)
            raise SystemExit(2) from None
        except OneLineError as exc:
            print(f"error: {exc}", file=sys.stderr, flush=True)
            raise SystemExit(2) from None
        finally:
            env.close()
