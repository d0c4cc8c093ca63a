"""Collection speed per robot: the scripted loop with recording on the SO-101's lift task, side by side with the
Franka's (the named baseline), state-only and with both 224 x 224 cameras, in one run.

    python bench/robots.py                              # 16 envs, 60 timed steps, 2 rounds (about 10 min on 2 cores)
    python bench/robots.py --envs 2 --steps 10 --rounds 1   # quicker, noisier

Each measurement runs in its own process (one simulator per process), the robots in turns; the best of each
robot's rounds is compared. Both take 4 physics steps per env-frame, but an SO-101 frame covers 1/30 s (physics at
120 Hz) and a Franka frame 1/50 s (200 Hz): the last column is simulated seconds per wall second.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

ROBOTS = {
    "franka": "L2-Lift-Cube-Franka-IK-Abs-Scripted",
    "so101": "L2-Lift-Cube-SO101-JointPos-Scripted",
}
"""The robots' scripted tasks; the first is the baseline."""


def main(argv: list[str] | None = None) -> int:
    from l2.format import cli_args

    parser = cli_args.Parser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("--envs", type=cli_args.positive_int, default=16, help="parallel envs (default: %(default)s)")
    parser.add_argument(
        "--steps", type=cli_args.positive_int, default=60, help="timed steps per run (default: %(default)s)"
    )
    parser.add_argument(
        "--rounds", type=cli_args.positive_int, default=2, help="runs of each case, in turns (default: %(default)s)"
    )
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:  # one measurement in this process
        from bench.cameras import measure_rate

        case, n, steps, out = args.child
        robot, mode = case.split(":")
        print(json.dumps(measure_rate(int(n), mode == "cameras", int(steps), Path(out), task=ROBOTS[robot])))
        return 0

    cases = [f"{robot}:{mode}" for mode in ("state", "cameras") for robot in ROBOTS]
    best: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.rounds):
            for case in cases:
                out = Path(tmp) / f"{case.replace(':', '_')}_{k}" / "scripted.hdf5"
                cmd = [sys.executable, __file__, "--child", case, str(args.envs), str(args.steps), str(out)]
                proc = subprocess.run(cmd, capture_output=True, text=True)
                if proc.returncode != 0:
                    raise RuntimeError(f"{case}: {proc.stderr[-3000:]}")
                r = json.loads(proc.stdout.strip().splitlines()[-1])
                print(f"  round {k + 1}  {case:<14} {r['frames_per_s']:7.1f} env-frames/s", flush=True)
                if case not in best or r["frames_per_s"] > best[case]["frames_per_s"]:
                    best[case] = r
    baseline = next(iter(ROBOTS))
    print(f"\nSO-101 vs the Franka (baseline), {args.envs} envs, scripted loop with recording, best of {args.rounds}:")
    print(f"  {'robot':<8} {'mode':<8} {'env-frames/s':>13} {'vs franka':>10} {'sim s / wall s':>15}")
    for case, r in best.items():
        robot, mode = case.split(":")
        ratio = r["frames_per_s"] / best[f"{baseline}:{mode}"]["frames_per_s"]
        sim_rate = r["frames_per_s"] * r["step_dt"]
        print(f"  {robot:<8} {mode:<8} {r['frames_per_s']:13.1f} {ratio:9.2f}x {sim_rate:15.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
