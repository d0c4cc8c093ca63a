"""What ``presets=variety`` costs, side by side in one run against the plain scene (the named baseline).

    python bench/variety.py                          # both parts, the Franka (about 9 min on 2 cores)
    python bench/variety.py --part state --robot so101
    python bench/variety.py --envs 2 --steps 10 --rounds 1 --state-envs 4 --state-steps 20   # quicker, noisier
    python bench/variety.py --part state env.sim.physics.solver_cfg.jacobian=auto   # MuJoCo's dense Jacobian

  cameras  the scripted loop with recording and both 224 x 224 cameras, 8 envs: the variety scene (three cubes,
           a table mat, colors, shade and a camera offset drawn per episode) against the plain one.
           Target: variety <= 1.15x the plain scene's time per env-frame.
  state    without cameras, where physics is all a step costs, 32 envs: scripted collection (with recording)
           and holding still (the robot's relative joint-position task, zero actions).
           Target: variety >= 0.8x the plain scene's env-frames/s.

Each measurement runs in its own process (one simulator per process), the two scenes in turns, round after
round; the best of each setting's rounds is compared.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

SCENES = {"plain": (), "variety": ("variety",)}
SCRIPTED_TASKS = {"franka": "L2-Lift-Cube-Franka-IK-Abs-Scripted", "so101": "L2-Lift-Cube-SO101-JointPos-Scripted"}
HOLD_TASKS = {"franka": "L2-Lift-Cube-Franka-JointPos-Rel", "so101": "L2-Lift-Cube-SO101-JointPos-Rel"}
CAMERA_TARGET, STATE_TARGET = 1.15, 0.8


def measure_hold(task: str, num_envs: int, steps: int, presets: tuple[str, ...], overrides: tuple[str, ...]) -> dict:
    """env-frames/s of ``task`` (relative joint targets) under zero actions: the robot holds still, the cubes rest."""
    import torch

    from l2.recording import sim

    overrides = [f"presets={','.join((*presets, 'no_cameras'))}", *overrides]
    env_cfg = sim.load_env_cfg(task, "cpu", num_envs, seed=0, overrides=overrides)
    with sim.make_env(env_cfg, task) as env:
        action = torch.zeros(env.num_envs, env.action_manager.total_action_dim, device=env.device)
        env.reset()
        for _ in range(5):  # warm-up
            env.step(action)
        start = time.perf_counter()
        for _ in range(steps):
            env.step(action)
        total = time.perf_counter() - start
    return {"frames_per_s": steps * num_envs / total, "total_s": total}


def child(part: str, scene: str, robot: str, num_envs: int, steps: int, out: Path, overrides: list[str]) -> dict:
    """One measurement, in this process."""
    from bench.cameras import measure_rate

    if part == "hold":
        return measure_hold(HOLD_TASKS[robot], num_envs, steps, SCENES[scene], tuple(overrides))
    return measure_rate(num_envs, part == "cameras", steps, out, SCENES[scene], SCRIPTED_TASKS[robot], tuple(overrides))


def run_rounds(
    parts: list[str], robot: str, num_envs: int, steps: int, rounds: int, overrides: list[str]
) -> dict[tuple[str, str], dict]:
    """Each (part, scene) once per round, in turns; the fastest run of each."""
    best: dict[tuple[str, str], dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(rounds):
            for part in parts:
                for scene in SCENES:
                    out = Path(tmp) / f"{part}_{scene}_{k}" / "scripted_lift_cube.hdf5"
                    spec = json.dumps([part, scene, robot, num_envs, steps, str(out), overrides])
                    proc = subprocess.run([sys.executable, __file__, "--child", spec], capture_output=True, text=True)
                    if proc.returncode != 0:
                        raise RuntimeError(f"{part} {scene}: {proc.stderr[-3000:]}")
                    r = json.loads(proc.stdout.strip().splitlines()[-1])
                    print(f"  round {k + 1}  {part:<8} {scene:<8} {r['frames_per_s']:7.1f} env-frames/s", flush=True)
                    if (part, scene) not in best or r["frames_per_s"] > best[part, scene]["frames_per_s"]:
                        best[part, scene] = r
    return best


def main(argv: list[str] | None = None) -> int:
    from l2.format import cli_args

    parser = cli_args.Parser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("--part", choices=("all", "cameras", "state"), default="all", help="(default: %(default)s)")
    parser.add_argument("--robot", choices=tuple(SCRIPTED_TASKS), default="franka", help="(default: %(default)s)")
    parser.add_argument("--envs", type=int, default=8, help="parallel envs, cameras part (default: %(default)s)")
    parser.add_argument("--steps", type=int, default=60, help="timed steps, cameras part (default: %(default)s)")
    parser.add_argument("--state-envs", type=int, default=32, help="parallel envs, state part (default: %(default)s)")
    parser.add_argument("--state-steps", type=int, default=150, help="timed steps, state part (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each setting, in turns (default: %(default)s)")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="cfg overrides for every measurement")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        part, scene, robot, n, steps, out, overrides = json.loads(args.child)
        print(json.dumps(child(part, scene, robot, n, steps, Path(out), overrides)))
        return 0

    if args.part in ("all", "cameras"):
        best = run_rounds(["cameras"], args.robot, args.envs, args.steps, args.rounds, args.overrides)
        plain, var = best["cameras", "plain"], best["cameras", "variety"]
        print(f"\nvariety vs the plain scene (baseline), {args.envs} envs, 224x224 cameras, best of {args.rounds}:")
        print(f"  {'scene':<8} {'env-frames/s':>13} {'render share':>13}")
        for name, r in (("plain", plain), ("variety", var)):
            print(f"  {name:<8} {r['frames_per_s']:13.1f} {100 * r['render_s'] / r['total_s']:12.0f}%")
        ratio = plain["frames_per_s"] / var["frames_per_s"]
        print(f"  time per env-frame, variety / plain: {ratio:.2f}x (target <= {CAMERA_TARGET}x)\n")
    if args.part in ("all", "state"):
        loops = ["scripted", "hold"]
        best = run_rounds(loops, args.robot, args.state_envs, args.state_steps, args.rounds, args.overrides)
        extra = f" ({' '.join(args.overrides)})" if args.overrides else ""
        print(f"\nstate-only, {args.robot}, {args.state_envs} envs, best of {args.rounds}{extra}:")
        print(f"  {'loop':<22} {'plain':>8} {'variety':>8} {'variety / plain':>16}")
        for part, name in (("scripted", "scripted collection"), ("hold", "holding still")):
            plain, var = best[part, "plain"]["frames_per_s"], best[part, "variety"]["frames_per_s"]
            print(f"  {name:<22} {plain:8.1f} {var:8.1f} {var / plain:15.2f}x")
        print(f"  (env-frames/s; target: variety >= {STATE_TARGET}x the plain scene)")
        won = {scene: best["scripted", scene]["episodes"] for scene in SCENES}
        print(f"  scripted episodes that succeeded: plain {won['plain']}, variety {won['variety']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
