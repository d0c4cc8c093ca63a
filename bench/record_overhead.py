"""What recording costs the scripted loop: env-frames/s with our recorder vs. none vs. Isaac Lab's.

Each variant runs the same seeded scripted pick-and-lift loop in its own process (one simulator per
process), variants interleaved over the repeats; the table prints the best rate of each and its ratio against the
named baseline ``no recording``; the CPU time per env-frame of the whole process, every thread counted (the camera
frames are compressed on a spool thread, outside the hooks), against the baseline's; and the share of the loop's
wall time the main thread spends inside the RecorderManager's hooks (a ratio within one run, so a busy machine moves
it much less than the rates).

    python bench/record_overhead.py                  # 16 envs, 250 steps, 2 repeats, the Franka
    python bench/record_overhead.py --num_envs 64 --steps 200 --repeats 3
    python bench/record_overhead.py --robot so101    # the SO-101's scripted lift
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.timing import time_calls  # noqa: E402

VARIANTS = {
    "none": "no recording (baseline)",
    "l2": "ours: L2RecorderManagerCfg",
    "isaaclab": "Isaac Lab ActionStateRecorderManagerCfg",
}
WARMUP_STEPS = 10
RECORDER_HOOKS = (
    "record_pre_step",
    "record_post_step",
    "record_post_physics_decimation_step",
    "record_pre_reset",
    "record_post_reset",
)


def measure(variant: str, task: str, num_envs: int, steps: int, out_dir: str) -> dict:
    """Run the scripted loop once and return its env-frames/s (after a short warm-up)."""
    from isaaclab.envs.mdp.recorders.recorders_cfg import ActionStateRecorderManagerCfg

    from l2.recording import sim
    from l2.recording.handler import configure_recording
    from l2.recording.task_space import TaskSpaceDriver
    from l2.scripted.state_machine import PickAndLiftStateMachine, pick_and_lift_cfg

    env_cfg = sim.load_env_cfg(task, "cpu", num_envs, seed=0)
    if variant == "none":
        env_cfg.recorders = None
    else:
        recorders = ActionStateRecorderManagerCfg() if variant == "isaaclab" else None
        configure_recording(env_cfg, Path(out_dir) / f"{variant}.hdf5", task, "overwrite", recorders=recorders)
    with sim.make_env(env_cfg, task) as env:
        in_recorder = [0.0]
        time_calls(env.recorder_manager, RECORDER_HOOKS, in_recorder)
        sm = PickAndLiftStateMachine(env.num_envs, env.device, pick_and_lift_cfg(task, env.step_dt))
        driver = TaskSpaceDriver(env)
        env.reset()
        episodes = 0
        for i in range(WARMUP_STEPS + steps):
            if i == WARMUP_STEPS:
                start, cpu_start = time.perf_counter(), time.process_time()
                in_recorder[0] = 0.0
            env.step(driver.action(sm.act(env)))
            done = env.termination_manager.dones.nonzero().flatten()
            episodes += len(done)
            sm.reset(done)
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu_start  # every thread of the process (the spool's too)
    return {
        "variant": variant,
        "frames_per_s": steps * num_envs / elapsed,
        "cpu_ms_per_frame": 1000 * cpu / (steps * num_envs),
        "episodes": episodes,
        "recorder_share": in_recorder[0] / elapsed,
    }


def main(argv: list[str] | None = None) -> int:
    from bench.robots import ROBOTS
    from l2.format import cli_args

    parser = cli_args.Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--robot", choices=ROBOTS, default="franka", help="whose scripted lift task (default: %(default)s)"
    )
    parser.add_argument("--num_envs", type=int, default=16)
    parser.add_argument("--steps", type=int, default=250, help="timed env steps per run (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)  # internal: one measurement
    parser.add_argument("--out_dir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.variant:
        print(json.dumps(measure(args.variant, ROBOTS[args.robot], args.num_envs, args.steps, args.out_dir)))
        return 0

    best: dict[str, float] = {}
    share: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            for variant in VARIANTS:
                cmd = [
                    sys.executable,
                    __file__,
                    "--variant",
                    variant,
                    "--out_dir",
                    tmp,
                    "--robot",
                    args.robot,
                    "--num_envs",
                    str(args.num_envs),
                    "--steps",
                    str(args.steps),
                ]
                proc = subprocess.run(cmd, capture_output=True, text=True)
                if proc.returncode != 0:
                    print(proc.stderr[-3000:], file=sys.stderr)
                    return 1
                result = json.loads(proc.stdout.strip().splitlines()[-1])
                print(
                    f"  repeat {r + 1}: {VARIANTS[variant]:<42} {result['frames_per_s']:8.1f} env-frames/s", flush=True
                )
                best[variant] = max(best.get(variant, 0.0), result["frames_per_s"])
                share.setdefault(variant, []).append(result["recorder_share"])
                cpu.setdefault(variant, []).append(result["cpu_ms_per_frame"])
    base = best["none"]
    print(
        f"\nscripted loop on {ROBOTS[args.robot]}, {args.num_envs} envs, {args.steps} steps, best of {args.repeats}; "
        "baseline = no recording"
    )

    def median(values: list[float]) -> float:
        return sorted(values)[len(values) // 2]

    base_cpu = median(cpu["none"])
    print(f"  {'variant':<42} {'env-frames/s':>12} {'vs baseline':>12} {'CPU/frame vs baseline':>22} {'in hooks':>9}")
    for variant, label in VARIANTS.items():
        ratio = best[variant] / base
        inside = f"{100 * median(share[variant]):8.1f}%" if variant != "none" else f"{'-':>9}"
        print(f"  {label:<42} {best[variant]:12.1f} {ratio:11.3f}x {median(cpu[variant]) / base_cpu:21.3f}x {inside}")
    print(
        "  (CPU/frame: the process's CPU time per env-frame, all threads, median of the repeats; in hooks: median "
        "share of the loop's wall time the main thread spends inside the RecorderManager's hooks)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
