"""Compile Warp/MuJoCo-Warp kernels once (about 1-2 min on a fresh CPU machine; cached in ~/.cache/warp).

Builds a one-env lift-cube task and steps it, so the first real run or test does not pay the
compilation. A marker in the L2L3 cache records that it was done for these package versions.
"""

from __future__ import annotations

import importlib.metadata
import sys
import time

from l2.assets.franka_build import cache_root
from l2.format import cli_args


def _marker():
    versions = "-".join(importlib.metadata.version(p) for p in ("isaaclab", "warp-lang", "mujoco-warp", "newton"))
    return cache_root() / f"warmup-{versions}.done"


def warm_up(device: str = "cpu") -> float:
    """Build and step the task once; returns the seconds it took."""
    import torch

    from l2.recording import sim

    start = time.perf_counter()
    env_cfg = sim.load_env_cfg(sim.DEFAULT_TASK, device, 1, seed=0)
    with sim.make_env(env_cfg, sim.DEFAULT_TASK) as env:
        env.reset()
        for _ in range(2):
            env.step(torch.zeros(env.num_envs, env.action_manager.total_action_dim, device=env.device) + 0.5)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = cli_args.Parser(prog="python -m l2.recording.warmup", description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="run even if the kernels were warmed up before")
    parser.add_argument("--quiet", action="store_true", help="print nothing when already warm")
    args = parser.parse_args(argv)
    marker = _marker()
    if marker.exists() and not args.force:
        if not args.quiet:
            print(f"warp kernels already compiled ({marker})")
        return 0
    print("setup: compiling Warp/MuJoCo-Warp CPU kernels (one-time, 1-2 min)...", flush=True)
    seconds = warm_up()
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(f"{seconds:.1f}\n")
    print(f"setup: kernels ready in {seconds:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
