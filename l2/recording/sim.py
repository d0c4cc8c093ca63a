"""Building lift-cube envs the same way for every source: task cfg, device, presets, offline asset."""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from isaaclab.envs import ManagerBasedRLEnv, ManagerBasedRLEnvCfg

DEFAULT_TASK = "L2-Lift-Cube-Franka-IK-Abs"


class OneLineError(RuntimeError):
    """An error a runner reports as one line (``error: ...``) and exit status 2, without a traceback, also from
    inside :func:`make_env` (where Isaac Lab's launcher would print one for any other exception)."""

    def line(self, env: ManagerBasedRLEnv) -> str:
        """The line to print, once ``env`` has stopped (a subclass may close or inspect what it wrote)."""
        return str(self)


def add_sim_args(
    parser: argparse.ArgumentParser,
    *,
    num_envs: int,
    task: str | None = DEFAULT_TASK,
    task_help: str = "gym id of the task (default: %(default)s)",
) -> None:
    """Isaac Lab's usual flags, plus Hydra-style ``key=value`` overrides (e.g. ``physics=physx``)."""
    group = parser.add_argument_group("simulation")
    group.add_argument("--task", default=task, help=task_help)
    group.add_argument("--num_envs", type=int, default=num_envs, help="parallel envs (default: %(default)s)")
    group.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default: %(default)s)")
    group.add_argument(
        "--seed", type=int, default=42, help="env seed, recorded on every episode (default: %(default)s)"
    )
    group.add_argument(
        "--headless", action="store_true", default=True, help="no viewer (always on kit-less; kept for Isaac Lab's CLI)"
    )
    group.add_argument(
        "overrides",
        nargs="*",
        metavar="KEY=VALUE",
        help="Isaac Lab cfg overrides and presets, e.g. physics=physx, presets=franka_nucleus, env.episode_length_s=8",
    )


def register_tasks() -> None:
    """Register the gym ids of the base task and of every variant: each l2 subpackage registers its own
    in its ``__init__`` (which imports nothing heavier than gymnasium)."""
    import importlib
    import pkgutil

    import l2

    for package in pkgutil.iter_modules(l2.__path__, "l2."):
        if package.ispkg:
            importlib.import_module(package.name)


def load_env_cfg(
    task: str, device: str, num_envs: int, seed: int | None, overrides: Sequence[str] = ()
) -> ManagerBasedRLEnvCfg:
    """Parse the registered cfg with presets/overrides applied and make sure its robot asset exists."""
    from isaaclab_tasks.utils import parse_env_cfg

    from l2.assets.franka_build import ensure_franka_usd, franka_usd_path

    register_tasks()
    env_cfg = parse_env_cfg(task, device=device, num_envs=num_envs, overrides=list(overrides))
    env_cfg.seed = seed
    if getattr(env_cfg.scene.robot.spawn, "usd_path", None) == str(franka_usd_path()):
        ensure_franka_usd()
    return env_cfg


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
            from l2.recording.handler import check_append_layout

            check_append_layout(env)  # before the first step: a mismatch is known now, not at the first demo
            yield env
        except OneLineError as exc:
            print(f"error: {exc.line(env)}", file=sys.stderr, flush=True)
            raise SystemExit(2) from None
        finally:
            env.close()
