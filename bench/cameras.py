"""What the cameras cost collection, side by side in one run: speed, memory, storage and video fidelity.

    python bench/cameras.py                      # about 17 min on 2 CPU cores
    python bench/cameras.py --rate-envs 4 --rate-steps 40 --memory-steps 60   # quicker, noisier

Every measurement runs the scripted pick-and-lift loop with recording on (our L2RecorderManagerCfg), each in
its own process (one simulator per process):

  speed    env-frames/s with the two 224 x 224 cameras vs the same loop with ``presets=no_cameras`` (the
           named baseline: the state-only loop), at 4 and 16 envs; and where a camera step's time goes:
           rendering (the cameras' render calls), recording (the RecorderManager's hooks: observations,
           frames to the spool, exports) and everything else. Target: everything but rendering adds <= 20 %
           to the state-only step.
  memory   peak RSS of a 16-env vs a 4-env camera collection with the same (long) episodes, for our
           recorder (frames streamed to a spool file) and for the baseline that keeps frames in RAM the
           way Isaac Lab's RecorderManager keeps every recorded value (target for ours: <= 1.3x).
  workers  a whole camera collection (l2/scripted/run.py, 16 envs in total) with --workers auto (one collector
           process per core) vs --workers 1 (the named baseline): env-frames/s, wall time for the same demos, and
           peak RSS of the run's whole process tree (target on 2 cores: >= 1.7x env-frames/s, <= 1.6x RSS), and
           its peak PSS (each shared library page divided among the processes that map it: the RAM it holds),
           with the machine's busy cores over each run (other load on the machine shows there). Interleaved
           rounds (--workers-repeats): speed keeps each setting's fastest run, memory its largest peak.
  storage  bytes per stored frame of each camera in the written demos (gzip level 2, one chunk per frame).
  video    PSNR of the GR00T videos (l3/convert.py with config/lift_cube.yaml) against the recorded frames.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.record_overhead import RECORDER_HOOKS  # noqa: E402
from bench.timing import time_calls  # noqa: E402
from l2.format.schema import LIFT_CAMERA_TERMS  # noqa: E402

TASK = "L2-Lift-Cube-Franka-IK-Abs-Scripted"
WARMUP_STEPS = 5


def measure_rate(
    num_envs: int,
    cameras: bool,
    steps: int,
    out: Path,
    presets: tuple[str, ...] = (),
    task: str = TASK,
    overrides: tuple[str, ...] = (),
) -> dict:
    """Scripted loop with recording on ``task`` (the Franka's by default): env-frames/s and seconds in rendering /
    recording / total; ``presets`` added to the task's (e.g. ``("variety",)``), then cfg ``overrides``."""
    from l2.recording import sim
    from l2.recording.handler import configure_recording
    from l2.recording.task_space import TaskSpaceDriver
    from l2.scripted.state_machine import PickAndLiftStateMachine, pick_and_lift_cfg

    overrides = [*(f"presets={p}" for p in (*presets, *(() if cameras else ("no_cameras",)))), *overrides]
    env_cfg = sim.load_env_cfg(task, "cpu", num_envs, seed=0, overrides=overrides)
    configure_recording(env_cfg, out, task, "overwrite")
    render, record = [0.0], [0.0]
    with sim.make_env(env_cfg, task) as env:
        for term in env.cfg.observations.cameras.__dict__.values() if cameras else ():
            if hasattr(term, "params"):  # the camera's render + read-back
                time_calls(env.scene[term.params["sensor_cfg"].name], ["_update_buffers_impl"], render)
        time_calls(env.recorder_manager, RECORDER_HOOKS, record)
        sm = PickAndLiftStateMachine(env.num_envs, env.device, pick_and_lift_cfg(task, env.step_dt))
        driver = TaskSpaceDriver(env)
        env.reset()
        for i in range(WARMUP_STEPS + steps):
            if i == WARMUP_STEPS:
                start = time.perf_counter()
                render[0] = record[0] = 0.0
            env.step(driver.action(sm.act(env)))
            sm.reset(env.termination_manager.dones.nonzero().flatten())
        total = time.perf_counter() - start
        written = env.recorder_manager.exported_successful_episode_count
        step_dt = env.step_dt
    return {
        "step_dt": step_dt,
        "frames_per_s": steps * num_envs / total,
        "total_s": total,
        "render_s": render[0],
        "record_s": record[0],
        "episodes": written,
    }


def measure_memory(num_envs: int, mode: str, steps: int, out: Path) -> dict:
    """Peak RSS of a camera collection whose episodes last ``steps`` steps (hands held still)."""
    import torch
    from isaaclab.managers import RecorderTerm, RecorderTermCfg
    from isaaclab.utils import configclass

    from l2.recording import sim
    from l2.recording.handler import L2RecorderManagerCfg, configure_recording

    class FramesInRamRecorder(RecorderTerm):
        """The baseline: the camera group recorded like any other value, held in RAM until export."""

        def record_pre_step(self):
            return "obs", self._env.obs_buf["cameras"]

    @configclass
    class FramesInRamRecorderCfg(RecorderTermCfg):
        class_type: type = FramesInRamRecorder

    recorders = L2RecorderManagerCfg()
    if mode == "ram":
        recorders.record_camera_frames = FramesInRamRecorderCfg()
    env_cfg = sim.load_env_cfg(TASK, "cpu", num_envs, seed=0, overrides=[f"env.episode_length_s={steps}"])
    configure_recording(env_cfg, out, TASK, "overwrite", recorders=recorders)
    with sim.make_env(env_cfg, TASK) as env:
        env.reset()
        ee = env.scene["ee_frame"].data
        hold = torch.cat(
            [ee.target_pos_source.torch[:, 0], ee.target_quat_source.torch[:, 0], torch.ones(num_envs, 1)], dim=-1
        )
        for _ in range(steps):
            env.step(hold)
    return {"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def storage_and_psnr(files: list[Path], work: Path) -> dict:
    """Bytes per stored frame per camera, and PSNR of the converted videos against the recorded frames."""
    import h5py
    import numpy as np

    from l3 import layout
    from l3.convert import convert
    from l3.video import decode, psnr

    stored = {cam: [0, 0] for cam in LIFT_CAMERA_TERMS}
    for path in files:
        with h5py.File(path) as f:
            for demo in f["data"].values():
                for cam in LIFT_CAMERA_TERMS:
                    d = demo[f"obs/{cam}"]
                    stored[cam][0] += d.id.get_storage_size()
                    stored[cam][1] += d.shape[0]
    out = work / "gr00t"
    convert([str(p) for p in files], out, config=REPO / "config/lift_cube.yaml", log=lambda m: None)
    scores = []
    for line in (out / layout.EPISODES_PATH).read_text().splitlines():
        e = json.loads(line)
        with h5py.File(e["file"]) as f:
            for cam in LIFT_CAMERA_TERMS:
                video = out / layout.video_path(e["episode_index"], layout.video_key(cam))
                scores.append(psnr(f[f"data/{e['demo']}/obs/{cam}"][()], np.stack(list(decode(video)))))
    scores = np.concatenate(scores)
    return {
        "bytes_per_frame": {c: b / max(n, 1) for c, (b, n) in stored.items()},
        "psnr_mean": float(scores.mean()),
        "psnr_min": float(scores.min()),
        "psnr_frames": len(scores),
    }


PAGE = os.sysconf("SC_PAGE_SIZE")


def process_tree(root: int) -> list[int]:
    """A process and all its descendants, from the kernel's per-thread ``children`` lists (no scan of /proc)."""
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        for children in Path(f"/proc/{pid}/task").glob("*/children"):
            try:
                todo += [int(c) for c in children.read_text().split()]
            except (OSError, ValueError):
                continue
    return pids


def _tree_mb(pids: list[int], kib_of: Callable[[int], int]) -> float:
    """The sum of ``kib_of(pid)`` over ``pids`` in MB (a process that ended meanwhile counts 0)."""
    total = 0
    for pid in pids:
        try:
            total += kib_of(pid)
        except (OSError, IndexError, ValueError):
            continue
    return total / 1024


def tree_rss_mb(pids: list[int]) -> float:
    """The RSS sum of ``pids`` in MB, from ``statm`` (the kernel's counters: cheap to read)."""
    return _tree_mb(pids, lambda pid: int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE // 1024)


def tree_pss_mb(pids: list[int]) -> float:
    """The PSS sum of ``pids`` in MB: each shared page divided among the processes that map it, so the sum is
    what the tree holds in RAM (the RSS sum counts a shared library once per process). ``smaps_rollup`` walks
    the page tables, so it is read less often than ``statm``."""

    def pss_kib(pid: int) -> int:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
        return int(text[text.index("\nPss:") + 5 :].split(maxsplit=1)[0])

    return _tree_mb(pids, pss_kib)


def cpu_ticks() -> tuple[int, int, int]:
    """(busy, idle, steal) clock ticks of the whole machine since boot, from /proc/stat."""
    fields = Path("/proc/stat").read_text().split()[1:9]
    user, nice, system, idle, iowait, irq, softirq, steal = (int(v) for v in fields)
    return user + nice + system + irq + softirq, idle + iowait, steal


RSS_EVERY_S, PSS_EVERY = 0.2, 5
"""The tree's RSS is sampled every 0.2 s, its PSS every 5th sample: the monitor's own CPU comes out of the
cores the collectors use, and with every core busy that biased the multi-process run (about 6 % of the
machine when every sample read smaps_rollup)."""


def measure_workers(workers: str, num_envs: int, demos: int, out: Path) -> dict:
    """One camera collection through the scripted CLI: its summary's env-frames/s, wall time, the peak RSS and
    PSS of its process tree, the machine's busy cores over the run (any other load shows there) and the
    monitor's own CPU seconds."""
    cmd = [sys.executable, str(REPO / "l2/scripted/run.py"), "--num_envs", str(num_envs), "--num_demos", str(demos)]
    cmd += ["--workers", workers, "--output", str(out)]
    busy0, idle0, steal0 = cpu_ticks()
    own0 = time.process_time()
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    peak = peak_pss = 0.0
    sample = 0
    while proc.poll() is None:
        pids = process_tree(proc.pid)
        peak = max(peak, tree_rss_mb(pids))
        if sample % PSS_EVERY == 0:
            peak_pss = max(peak_pss, tree_pss_mb(pids))
        sample += 1
        time.sleep(RSS_EVERY_S)
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - start
    busy1, idle1, steal1 = cpu_ticks()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{stdout[-2000:]}{stderr[-3000:]}")
    fps = re.search(r"env-frames/s\s+([\d.]+) \((\d+) envs(?: in (\d+) processes)?", stdout)
    ticks = (busy1 - busy0) + (idle1 - idle0) + (steal1 - steal0)
    return {
        "frames_per_s": float(fps.group(1)),
        "processes": int(fps.group(3) or 1),
        "wall_s": wall,
        "peak_rss_mb": peak,
        "peak_pss_mb": peak_pss,
        "busy_cores": os.cpu_count() * (busy1 - busy0) / ticks if ticks else 0.0,
        "steal_share": (steal1 - steal0) / ticks if ticks else 0.0,
        "monitor_cpu_s": time.process_time() - own0,
    }


def _child(args: list[str]) -> dict:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"bench/cameras.py {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    from l2.format import cli_args

    parser = cli_args.Parser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("--rate-envs", default="4,16", help="env counts of the speed runs (default: %(default)s)")
    parser.add_argument("--rate-steps", type=int, default=120, help="timed steps per speed run (default: %(default)s)")
    parser.add_argument(
        "--memory-envs", default="4,16", help="the two env counts of the memory runs (default: %(default)s)"
    )
    parser.add_argument(
        "--memory-steps", type=int, default=100, help="episode length of the memory runs (default: %(default)s)"
    )
    parser.add_argument(
        "--workers-envs", type=int, default=16, help="envs in total of the workers runs (default: %(default)s)"
    )
    parser.add_argument(
        "--workers-demos", type=int, default=16, help="demos each workers run collects (default: %(default)s)"
    )
    parser.add_argument(
        "--workers-repeats",
        type=int,
        default=2,
        help="interleaved rounds of the two workers runs; speed keeps each one's fastest, memory its largest peak "
        "(default: %(default)s; one run's speed swings by up to 30 %% when both cores are busy here)",
    )
    parser.add_argument("--json", default=None, help="also write the results to this file")
    parser.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:  # one measurement in this process
        kind, n, variant, steps, out = args.child
        fn = measure_rate if kind == "rate" else measure_memory
        variant_arg = variant == "on" if kind == "rate" else variant
        print(json.dumps(fn(int(n), variant_arg, int(steps), Path(out))))
        return 0

    results: dict = {"rate": {}, "memory": {}}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        camera_files = []
        for n in [int(v) for v in args.rate_envs.split(",")]:
            for cams in ("off", "on"):
                out = work / f"rate_{n}_{cams}" / "scripted_lift_cube.hdf5"
                r = _child(["--child", "rate", str(n), cams, str(args.rate_steps), str(out)])
                results["rate"][f"{n}_{cams}"] = r
                print(
                    f"  speed  {n:>2} envs, cameras {cams:<3}: {r['frames_per_s']:6.1f} env-frames/s "
                    f"({r['episodes']} demos written)",
                    flush=True,
                )
                if cams == "on" and r["episodes"]:
                    camera_files.append(out)
        few, many = (int(v) for v in args.memory_envs.split(","))
        for mode in ("spool", "ram"):
            for n in (few, many):
                out = work / f"mem_{n}_{mode}" / "scripted_lift_cube.hdf5"
                r = _child(["--child", "memory", str(n), mode, str(args.memory_steps), str(out)])
                results["memory"][f"{n}_{mode}"] = r
                print(f"  memory {n:>2} envs, frames in {mode:<5}: peak RSS {r['peak_rss_mb']:7.0f} MB", flush=True)
        results["files"] = storage_and_psnr(camera_files, work) if camera_files else {}
        results["workers"] = {}
        runs: dict[str, list[dict]] = {"1": [], "auto": []}
        for round_, workers in ((k, w) for k in range(args.workers_repeats) for w in runs):
            out = work / f"workers_{workers}_{round_}" / "scripted_lift_cube.hdf5"
            r = measure_workers(workers, args.workers_envs, args.workers_demos, out)
            runs[workers].append(r)
            print(
                f"  workers {workers:<4} ({r['processes']} processes, {args.workers_envs} envs): "
                f"{r['frames_per_s']:6.1f} env-frames/s, {r['wall_s']:6.1f} s, peak RSS {r['peak_rss_mb']:6.0f} MB, "
                f"PSS {r['peak_pss_mb']:6.0f} MB; machine {r['busy_cores']:.2f} of {os.cpu_count()} cores busy, "
                f"{100 * r['steal_share']:.0f} % stolen, monitor {r['monitor_cpu_s']:.1f} CPU s",
                flush=True,
            )
        for workers, rs in runs.items():  # speed: the fastest run; memory: the largest peak of any run
            best = max(rs, key=lambda r: r["frames_per_s"])
            peaks = {k: max(r[k] for r in rs) for k in ("peak_rss_mb", "peak_pss_mb")}
            results["workers"][workers] = {**best, **peaks, "runs": rs}

    print("\nspeed: scripted loop with recording; baseline = the same loop with presets=no_cameras")
    print(
        f"  {'envs':>4} {'no cameras':>11} {'cameras':>9} {'ratio':>7} {'render':>7} {'record':>7} {'other':>7} "
        f"{'non-render vs baseline':>23}"
    )
    for n in [int(v) for v in args.rate_envs.split(",")]:
        off, on = results["rate"][f"{n}_off"], results["rate"][f"{n}_on"]
        step_off = off["total_s"] / args.rate_steps
        render, record = on["render_s"] / on["total_s"], on["record_s"] / on["total_s"]
        non_render = (on["total_s"] - on["render_s"]) / args.rate_steps / step_off
        print(
            f"  {n:>4} {off['frames_per_s']:11.1f} {on['frames_per_s']:9.1f} "
            f"{on['frames_per_s'] / off['frames_per_s']:6.2f}x "
            f"{100 * render:6.0f}% {100 * record:6.0f}% {100 * (1 - render - record):6.0f}% {non_render:22.2f}x"
        )
        results["rate"][f"{n}_non_render_vs_state_only"] = non_render
    print(
        "  (render/record/other: shares of a camera step's wall time; last column: a camera step minus its "
        "rendering, over a state-only step; target <= 1.20x)"
    )
    for n in [int(v) for v in args.rate_envs.split(",")]:
        on = results["rate"][f"{n}_on"]
        per_image = 1000 * on["render_s"] / (args.rate_steps * n * len(LIFT_CAMERA_TERMS))
        results["rate"][f"{n}_render_ms_per_image"] = per_image
        print(f"  render time per 224x224 image at {n:>2} envs: {per_image:.2f} ms")
    one, auto = results["workers"]["1"], results["workers"]["auto"]
    print(
        f"\nworkers: a camera collection of {args.workers_demos} demos with {args.workers_envs} envs in total, "
        f"--workers auto ({auto['processes']} processes) vs --workers 1 (baseline); the fastest of "
        f"{args.workers_repeats} interleaved runs each, memory the largest peak"
    )
    print(
        f"  env-frames/s {one['frames_per_s']:.1f} -> {auto['frames_per_s']:.1f}  "
        f"{auto['frames_per_s'] / one['frames_per_s']:.2f}x (target >= 1.7x on 2 cores)"
    )
    print(
        f"  wall time    {one['wall_s']:.1f} s -> {auto['wall_s']:.1f} s  {one['wall_s'] / auto['wall_s']:.2f}x faster"
    )
    print(
        f"  peak RSS     {one['peak_rss_mb']:.0f} MB -> {auto['peak_rss_mb']:.0f} MB  "
        f"{auto['peak_rss_mb'] / one['peak_rss_mb']:.2f}x (target <= 1.6x; shared libraries counted per process)"
    )
    print(
        f"  peak PSS     {one['peak_pss_mb']:.0f} MB -> {auto['peak_pss_mb']:.0f} MB  "
        f"{auto['peak_pss_mb'] / one['peak_pss_mb']:.2f}x (shared pages counted once: the RAM the run holds)"
    )
    mem = results["memory"]
    print(f"\nmemory: peak RSS, {many} envs vs {few} envs, {args.memory_steps}-step episodes with both cameras")
    for mode, label in (("spool", "ours: frames streamed to a spool file"), ("ram", "baseline: frames held in RAM")):
        a, b = mem[f"{few}_{mode}"]["peak_rss_mb"], mem[f"{many}_{mode}"]["peak_rss_mb"]
        print(f"  {label:<40} {a:7.0f} MB -> {b:7.0f} MB  {b / a:5.2f}x")
    if results["files"]:
        f = results["files"]
        per = ", ".join(f"{c} {b / 1024:.1f} KiB" for c, b in f["bytes_per_frame"].items())
        print(f"\nstorage: bytes per stored 224x224 frame (raw 147 KiB): {per}")
        print(
            f"video:   PSNR of {f['psnr_frames']} decoded frames vs recorded: mean {f['psnr_mean']:.1f} dB, "
            f"min {f['psnr_min']:.1f} dB (targets 40 / 35)"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
