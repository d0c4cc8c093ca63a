"""What ``presets=variety`` costs collection: the scripted loop with recording and both 224 x 224 cameras, on the
plain scene (the named baseline) and with ``presets=variety`` (three cubes, a table mat, colors, shade and a
camera offset drawn per episode), side by side in one run.

    python bench/variety.py                          # 8 envs, 60 timed steps, 2 rounds (about 5 min on 2 cores)
    python bench/variety.py --envs 2 --steps 10 --rounds 1   # quicker, noisier

Each measurement runs in its own process (one simulator per process), the two scenes in turns; the best of each
scene's rounds is compared. Target: variety <= 1.15x the plain scene's time per env-frame.
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

SCENES = {"plain": (), "variety": ("variety",)}


def main(argv: list[str] | None = None) -> int:
    from l2.format import cli_args

    parser = cli_args.Parser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("--envs", type=int, default=8, help="parallel envs (default: %(default)s)")
    parser.add_argument("--steps", type=int, default=60, help="timed steps per run (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each scene, in turns (default: %(default)s)")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:  # one measurement in this process
        from bench.cameras import measure_rate

        scene, n, steps, out = args.child
        print(json.dumps(measure_rate(int(n), True, int(steps), Path(out), SCENES[scene])))
        return 0

    best: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.rounds):
            for scene in SCENES:
                out = Path(tmp) / f"{scene}_{k}" / "scripted_lift_cube.hdf5"
                cmd = [sys.executable, __file__, "--child", scene, str(args.envs), str(args.steps), str(out)]
                proc = subprocess.run(cmd, capture_output=True, text=True)
                if proc.returncode != 0:
                    raise RuntimeError(f"{scene}: {proc.stderr[-3000:]}")
                r = json.loads(proc.stdout.strip().splitlines()[-1])
                print(f"  round {k + 1}  {scene:<8} {r['frames_per_s']:6.1f} env-frames/s", flush=True)
                if scene not in best or r["frames_per_s"] > best[scene]["frames_per_s"]:
                    best[scene] = r
    plain, var = best["plain"], best["variety"]
    ratio = plain["frames_per_s"] / var["frames_per_s"]
    print(f"\nvariety vs the plain scene (baseline), {args.envs} envs, both 224x224 cameras, best of {args.rounds}:")
    print(f"  {'scene':<8} {'env-frames/s':>13} {'render share':>13}")
    for name, r in best.items():
        print(f"  {name:<8} {r['frames_per_s']:13.1f} {100 * r['render_s'] / r['total_s']:12.0f}%")
    print(f"  time per env-frame, variety / plain: {ratio:.2f}x (target <= 1.15x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
