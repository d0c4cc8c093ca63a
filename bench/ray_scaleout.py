"""Scale-out benchmark: distributed collection with 1 vs 2 Ray workers, and conversion on Ray vs local.

    python bench/ray_scaleout.py                         # defaults sized for a 2-core machine (~5 min)
    python bench/ray_scaleout.py --demos 8 --num-envs 2 --episodes 12 --json out.json

Measures, side by side in one run:
  collect  `python -m l2.distributed --source scripted` (state only, presets=no_cameras) for the same
           --demos with --workers 1 (the baseline) and --workers 2, each into a fresh folder on a fresh
           local Ray instance: demos/min (from the tasks' submission to the last result), env-frames/s
           (all workers' frames over the longest worker's stepping time), Ray's start-up (ray.init), and
           Ray's overhead per shard: the task's wall time seen by the driver minus its collector
           processes' wall time (scheduling, worker start-up, reading the shard before and after).
  convert  `l3/convert.py --engine ray` vs `--engine local` (the baseline) at the same --workers on
           camera episodes (two 224x224 cameras, H.264): the ratio of wall times, and the fixed cost of
           the Ray engine: both engines on a single short episode, where nothing else takes time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

CONFIG = REPO / "config" / "lift_cube.yaml"


def collect(tmp: Path, demos: int, workers: int, num_envs: int) -> dict:
    import ray

    from l2 import distributed
    from l2.tools.ray_cluster import start_ray

    out = tmp / f"scripted_lift_cube_w{workers}"
    args = distributed.parse_args(
        [
            "--source",
            "scripted",
            "--num_demos",
            str(demos),
            "--workers",
            str(workers),
            "--num_envs",
            str(num_envs),
            "--output",
            str(out),
            "--quiet",
            "presets=no_cameras",
        ]
    )
    t0 = time.perf_counter()
    start_ray(None)
    init = time.perf_counter() - t0
    try:
        results, seconds = distributed.run(args)
    finally:
        ray.shutdown()
    frames = sum(r.frames for r in results)
    sim = max(r.sim_seconds for r in results)
    assert sum(r.demos for r in results) == demos
    return {
        "workers": workers,
        "demos": demos,
        "seconds": seconds,
        "ray_init_s": init,
        "load_avg_1min": os.getloadavg()[0],
        "demos_per_min": 60 * demos / seconds,
        "env_frames_per_s": frames / sim,
        "per_shard": [
            {
                "shard": r.index,
                "demos": r.demos,
                "attempts": r.attempts,
                "env_frames_per_s": r.frames / r.sim_seconds,
                "process_s": r.process_seconds,
                "task_wall_s": r.wall_seconds,
                "ray_overhead_s": r.wall_seconds - r.process_seconds,
            }
            for r in results
        ],
    }


def convert_cli(inputs: list[str], out: Path, workers: int, engine: str) -> float:
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "l3.convert",
            *inputs,
            "--config",
            str(CONFIG),
            "-o",
            str(out),
            "-q",
            "--workers",
            str(workers),
            "--engine",
            engine,
        ],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - t


def convert(tmp: Path, episodes: int, length: int, workers: int, repeats: int) -> dict:
    from l3_fixtures import make_l2_file

    from l3 import card

    files = [
        str(
            make_l2_file(
                tmp / "in" / f"scripted_{k}.hdf5",
                episodes // 2 + (k < episodes % 2),
                seed=k,
                length=length,
                camera=True,
                frame_size=(224, 224),
            )
        )
        for k in range(2)
    ]
    one = [str(make_l2_file(tmp / "one" / "scripted_one.hdf5", 1, length=8, camera=True))]
    times: dict[str, list[float]] = {f"{e}_{s}": [] for e in ("local", "ray") for s in ("full", "one")}
    for _ in range(repeats):  # interleaved, best of `repeats`
        for engine in ("local", "ray"):
            times[f"{engine}_full"].append(convert_cli(files, tmp / f"out_{engine}", workers, engine))
            times[f"{engine}_one"].append(convert_cli(one, tmp / f"one_{engine}", workers, engine))
    best = {k: min(v) for k, v in times.items()}
    same = not card.differing_files(tmp / "out_local", tmp / "out_ray")  # the cards differ only in --engine
    return {
        "episodes": episodes,
        "length": length,
        "workers": workers,
        **{f"{k}_s": v for k, v in best.items()},
        "ray_over_local": best["ray_full"] / best["local_full"],
        "ray_fixed_cost_s": best["ray_one"] - best["local_one"],
        "byte_identical": same,
    }


def main() -> int:
    from l2.format import cli_args

    p = cli_args.Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--demos", type=int, default=8, help="demos per collection run (default: %(default)s)")
    p.add_argument("--num-envs", type=int, default=2, help="envs per collector process (default: %(default)s)")
    p.add_argument("--episodes", type=int, default=12, help="camera episodes to convert (default: %(default)s)")
    p.add_argument("--length", type=int, default=100, help="frames per episode (default: %(default)s)")
    p.add_argument("--workers", type=int, default=2, help="conversion workers, both engines (default: %(default)s)")
    p.add_argument(
        "--repeats", type=int, default=2, help="conversion runs per engine, the best kept (default: %(default)s)"
    )
    p.add_argument("--skip", choices=("collect", "convert"), help="leave one part out")
    p.add_argument("--json", help="also write the figures here")
    args = p.parse_args()
    report: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench_ray_") as d:
        tmp = Path(d)
        if args.skip != "collect":
            runs = [collect(tmp, args.demos, w, args.num_envs) for w in (1, 2)]
            base, two = runs
            report["collect"] = {
                "runs": runs,
                "speedup_2_over_1": two["demos_per_min"] / base["demos_per_min"],
                "env_frames_ratio": two["env_frames_per_s"] / base["env_frames_per_s"],
            }
            print(f"\ncollect: {args.demos} scripted demos, {args.num_envs} envs per worker, state only")
            print(
                "  workers  demos/min  env-frames/s  ray.init s  load avg  "
                "per shard: process s / task wall s / Ray overhead s"
            )
            for r in runs:
                shards = "; ".join(
                    f"{s['process_s']:.1f} / {s['task_wall_s']:.1f} / {s['ray_overhead_s']:.1f}" for s in r["per_shard"]
                )
                print(
                    f"  {r['workers']:>7}  {r['demos_per_min']:>9.1f}  {r['env_frames_per_s']:>12.0f}  "
                    f"{r['ray_init_s']:>10.1f}  {r['load_avg_1min']:>8.1f}  {shards}"
                )
            print(
                f"  2 workers / 1 worker (baseline): {report['collect']['speedup_2_over_1']:.2f}x demos/min, "
                f"{report['collect']['env_frames_ratio']:.2f}x env-frames/s"
            )
        if args.skip != "convert":
            c = report["convert"] = convert(tmp, args.episodes, args.length, args.workers, args.repeats)
            print(
                f"\nconvert: {c['episodes']} episodes x {c['length']} frames, two 224x224 cameras, "
                f"--workers {c['workers']}, best of {args.repeats}"
            )
            print(
                f"  --engine local (baseline) {c['local_full_s']:.1f} s, --engine ray {c['ray_full_s']:.1f} s: "
                f"ray/local = {c['ray_over_local']:.2f}x; byte-identical: {c['byte_identical']}"
            )
            print(
                f"  one 8-frame episode: local {c['local_one_s']:.1f} s, ray {c['ray_one_s']:.1f} s -> fixed "
                f"start-up cost of the Ray engine {c['ray_fixed_cost_s']:.1f} s"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
