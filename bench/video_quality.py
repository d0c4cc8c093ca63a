"""Video quality per scene: the PSNR of the GR00T videos through the readers against the recorded frames, with the
bytes per frame and the encode time, the default encoding against the one it replaced (the named baseline), side by
side on the same frames.

    python bench/video_quality.py                     # records 4 scripted demos of each shipped scene, measures
    python bench/video_quality.py --demos 8 --scenes franka_variety so101_variety
    python bench/video_quality.py --files franka_variety='data/demos/*_lift_cube_variety.hdf5' \\
                                  --files so101_variety='data/demos/*_so101_variety.hdf5'   # files you have

  scenes   franka_plain, franka_variety, so101_plain, so101_variety: the scripted source of each robot on the plain
           scene and with presets=variety, recorded here (2 envs, --seed) unless --files names L2 files for it.
  rows     every camera of every episode is encoded as one video per episode, as l3/convert.py writes them, with
             old      the encoding l3.video replaced: FFmpeg's RGB -> yuv420p (what PyAV does with RGB frames),
                      crf 22, preset medium, macroblock tree off (the baseline)
             yuv420p  l3.video.encode with video.pix_fmt yuv420p (l3.video.to_yuv420p, crf 18, tune psnr)
             yuv444p  l3.video.encode with video.pix_fmt yuv444p (l3.video.to_yuv444p, crf 22, tune psnr): no
                      chroma subsampling (H.264 High 4:4:4)
             default  video.pix_fmt auto, as l3/convert.py decides it: per scene and camera from the frames of the
                      first episode (l3.video.choose_pix_fmt), the same for every episode; its videos are those of
                      the yuv420p or the yuv444p row (the same settings, the same bytes)
           and each frame's yuv420p (old and new conversion) turned straight back into RGB, no encoder at all:
           the most any yuv420p video of those frames gives through the readers (the cap).
  PSNR     of each decoded frame against the recorded uint8 frame, over all three channels; the mean over the
           frames and the worst frame. Decoded with PyAV's to_ndarray(rgb24): what the loaders of LeRobot and
           GR00T return (their pyav / torchvision backends); the LeRobot venv (scripts/setup_lerobot.sh v21) decodes
           every yuv420p and yuv444p video with LeRobot's own decode_video_frames (pyav backend): the same RGB?
  bytes    the MP4's size over its frames.  encode  milliseconds per frame in encode(), summed over all videos.
  Target: default >= 40 dB mean on every scene and camera.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

TARGET_DB = 40.0
SCENES = {
    # name: (scripted task, presets)
    "franka_plain": ("L2-Lift-Cube-Franka-IK-Abs-Scripted", ()),
    "franka_variety": ("L2-Lift-Cube-Franka-IK-Abs-Scripted", ("variety",)),
    "so101_plain": ("L2-Lift-Cube-SO101-JointPos-Scripted", ()),
    "so101_variety": ("L2-Lift-Cube-SO101-JointPos-Scripted", ("variety",)),
}
SETTINGS = ("old", "yuv420p", "yuv444p")

LEROBOT_DECODE = r"""
import hashlib, json, sys
import torch
from lerobot.datasets.video_utils import decode_video_frames
out = {}
for path, frames, fps in json.loads(sys.argv[1]):
    x = decode_video_frames(path, [i / fps for i in range(frames)], 1e-4, backend="pyav")  # (n, C, H, W) in [0, 1]
    rgb = torch.round(x * 255).to(torch.uint8).permute(0, 2, 3, 1).contiguous().numpy()
    out[path] = hashlib.sha256(rgb.tobytes()).hexdigest()
print(json.dumps(out))
"""


def record(scene: str, demos: int, envs: int, seed: int, out: Path, overrides: list[str]) -> list[Path]:
    """``demos`` scripted demos of ``scene`` with both cameras, in one process."""
    task, presets = SCENES[scene]
    command = [sys.executable, str(REPO / "l2" / "scripted" / "run.py"), "--task", task, "--num_envs", str(envs)]
    command += ["--num_demos", str(demos), "--workers", "1", "--seed", str(seed), "--output", str(out)]
    command += [*([f"presets={','.join(presets)}"] if presets else []), *overrides]
    proc = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
    if proc.returncode != 0:
        raise SystemExit(f"recording {scene} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return [out]


def episodes(files: list[Path], max_frames: int | None):
    """(fps, {camera: frames}) of every demo of the files, in order."""
    import h5py

    from l2.format.schema import sorted_demo_names

    for path in files:
        with h5py.File(path, "r") as f:
            sim = json.loads(f["data"].attrs["env_args"])["sim_args"]
            fps = round(1 / (sim["dt"] * sim["decimation"]))
            for name in sorted_demo_names(f["data"].keys()):
                obs = f["data"][name]["obs"]
                cams = {c: obs[c][:max_frames] for c in obs if obs[c].ndim == 4 and obs[c].dtype == np.uint8}
                yield fps, cams


def encode_old(path: Path, frames: np.ndarray, fps: int) -> None:
    """The encoding this one replaced, as l3/video.py had it: RGB frames handed to PyAV (FFmpeg's conversion to
    yuv420p), crf 22, preset medium, a keyframe every 2 frames, one thread, macroblock tree off."""
    import av

    with av.open(str(path), mode="w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = frames.shape[2], frames.shape[1], "yuv420p"
        stream.time_base = stream.codec_context.time_base = Fraction(1, fps)
        stream.codec_context.gop_size = 2
        stream.codec_context.thread_count = 1
        stream.options = {"crf": "22", "preset": "medium", "x264-params": "mbtree=0"}
        for i, img in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(img, format="rgb24")
            frame.pts = i
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))


def encode_l3(pix_fmt: str) -> Callable[[Path, np.ndarray, int], None]:
    """l3.video.encode with the default VideoOptions but for the pixel format."""

    def run(path: Path, frames: np.ndarray, fps: int) -> None:
        from l3.mapping import VideoOptions
        from l3.video import encode

        encode(path, [frames], fps, VideoOptions(pix_fmt=pix_fmt))

    return run


ENCODERS: dict[str, Callable[[Path, np.ndarray, int], None]] = {
    "old": encode_old,
    "yuv420p": encode_l3("yuv420p"),
    "yuv444p": encode_l3("yuv444p"),
}


def caps(frames: np.ndarray) -> dict[str, np.ndarray]:
    """Per-frame PSNR of each frame's yuv420p, FFmpeg's conversion (old) and to_yuv420p (new), read straight back."""
    import av

    from l3.video import psnr, to_yuv420p

    old = [av.VideoFrame.from_ndarray(f, format="rgb24").reformat(format="yuv420p") for f in frames]
    new = [av.VideoFrame.from_ndarray(p, format="yuv420p") for p in to_yuv420p(frames)]
    return {
        "cap_old": psnr(frames, np.stack([f.to_ndarray(format="rgb24") for f in old])),
        "cap_new": psnr(frames, np.stack([f.to_ndarray(format="rgb24") for f in new])),
    }


def measure(files: list[Path], work: Path, max_frames: int | None) -> tuple[dict, list[tuple[str, int, int, str]]]:
    """Per camera and setting: per-frame PSNR, bytes, encode seconds; per camera what ``pix_fmt: auto`` chooses from
    its first episode (``default``, with that episode's cap); and (setting, path, frames, fps, sha256 of the decoded
    RGB) of every yuv420p and yuv444p video, for the LeRobot check."""
    from l3.video import choose_pix_fmt, decode, psnr

    out: dict[str, dict] = {}
    videos = []
    for e, (fps, cams) in enumerate(episodes(files, max_frames)):
        for cam, frames in cams.items():
            if cam not in out:  # the first episode: what l3/convert.py decides auto from
                out[cam] = {s: {"psnr": [], "bytes": 0, "seconds": 0.0} for s in SETTINGS}
                out[cam]["default"], out[cam]["default_cap"] = choose_pix_fmt([frames])
            row = out[cam]
            row["frames"] = row.get("frames", 0) + len(frames)
            for setting, enc in ENCODERS.items():
                path = work / f"{cam}_{e}_{setting}.mp4"
                t0 = time.perf_counter()
                enc(path, frames, fps)
                row[setting]["seconds"] += time.perf_counter() - t0
                decoded = np.stack(list(decode(path)))
                assert len(decoded) == len(frames), (path, len(decoded), len(frames))
                row[setting]["psnr"].append(psnr(frames, decoded))
                row[setting]["bytes"] += path.stat().st_size
                if setting == "old":
                    path.unlink()
                else:
                    digest = hashlib.sha256(decoded.tobytes()).hexdigest()
                    videos.append((setting, str(path), len(frames), fps, digest))
            for key, scores in caps(frames).items():
                row.setdefault(key, []).append(scores)
    for row in out.values():
        for key in ("cap_old", "cap_new"):
            row[key] = np.concatenate(row[key])
        for setting in SETTINGS:
            row[setting]["psnr"] = np.concatenate(row[setting]["psnr"])
    return out, videos


def lerobot_check(videos: list[tuple[str, str, int, int, str]]) -> str:
    """Decode every video with LeRobot's decode_video_frames (pyav backend) in its venv: same RGB as PyAV's?"""
    r = subprocess.run(["bash", str(REPO / "scripts" / "setup_lerobot.sh"), "v21"], capture_output=True, text=True)
    if r.returncode != 0:
        return f"not checked (scripts/setup_lerobot.sh v21 failed: {r.stderr.strip().splitlines()[-1:]})"
    python = r.stdout.strip().splitlines()[-1]
    arg = json.dumps([(p, n, fps) for _, p, n, fps, _ in videos])
    proc = subprocess.run([python, "-c", LEROBOT_DECODE, arg], capture_output=True, text=True, env={"PYTHONPATH": ""})
    if proc.returncode != 0:
        return f"not checked (LeRobot's decoding failed: {proc.stderr.strip().splitlines()[-1:]})"
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    counts = []
    for setting in ("yuv420p", "yuv444p"):
        mine = [(p, digest) for s, p, _, _, digest in videos if s == setting]
        counts.append(f"{sum(got.get(p) == digest for p, digest in mine)}/{len(mine)} {setting}")
    return f"{', '.join(counts)} videos decode to the same RGB in LeRobot (decode_video_frames, pyav backend)"


def _db(scores: np.ndarray) -> str:
    return f"{scores.mean():5.2f} / {scores.min():5.2f}"


def report(results: dict[str, dict]) -> tuple[list[str], int, int]:
    """The table's lines; how many scene cameras meet the target with the default encoding, of how many."""
    head = (
        f"{'scene':15s} {'camera':10s} {'frames':>6s} | {'old: mean / worst dB':>20s} {'B/frame':>7s} | "
        f"{'yuv420p: mean / worst dB':>24s} {'B/frame':>7s} | {'yuv420p cap old / new':>21s} | "
        f"{'yuv444p: mean / worst dB':>24s} {'B/frame':>7s} | {'default (ep. 0 cap dB)':>22s} "
        f"{'mean / worst dB':>15s} {'B/frame':>7s} {'ms/frame':>8s}"
    )
    lines, met, total = [head, "-" * len(head)], 0, 0
    for scene, cams in results.items():
        for cam, r in cams.items():
            n = r["frames"]
            old, y420, y444, default = r["old"], r["yuv420p"], r["yuv444p"], r[r["default"]]
            lines.append(
                f"{scene:15s} {cam:10s} {n:6d} | {_db(old['psnr']):>20s} {old['bytes'] / n:7.0f} | "
                f"{_db(y420['psnr']):>24s} {y420['bytes'] / n:7.0f} | "
                f"{r['cap_old'].mean():13.2f} / {r['cap_new'].mean():5.2f} | "
                f"{_db(y444['psnr']):>24s} {y444['bytes'] / n:7.0f} | "
                f"{r['default']:>14s} ({r['default_cap']:5.2f}) {_db(default['psnr']):>15s} "
                f"{default['bytes'] / n:7.0f} {1000 * default['seconds'] / n:8.2f}"
            )
            total += 1
            met += default["psnr"].mean() >= TARGET_DB
    return lines, met, total


def summary_json(results: dict[str, dict], ms: dict[str, float]) -> dict:
    """The figures of :func:`report`, for ``--json``."""

    def figures(r: dict, setting: str) -> dict:
        return {
            "psnr_mean": float(r[setting]["psnr"].mean()),
            "psnr_worst": float(r[setting]["psnr"].min()),
            "bytes_per_frame": r[setting]["bytes"] / r["frames"],
            "encode_ms_per_frame": 1000 * r[setting]["seconds"] / r["frames"],
        }

    out: dict = {
        scene: {
            cam: {
                "frames": r["frames"],
                **{s: figures(r, s) for s in SETTINGS},
                "default": {"pix_fmt": r["default"], "first_episode_cap": r["default_cap"], **figures(r, r["default"])},
                "cap_old_mean": float(r["cap_old"].mean()),
                "cap_new_mean": float(r["cap_new"].mean()),
            }
            for cam, r in cams.items()
        }
        for scene, cams in results.items()
    }
    out["encode_ms_per_frame"] = ms
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenes", nargs="+", choices=list(SCENES), default=list(SCENES), help="scenes to measure")
    p.add_argument("--files", action="append", default=[], metavar="SCENE=GLOB", help="measure these L2 files as SCENE")
    p.add_argument("--demos", type=int, default=4, help="scripted demos recorded per scene (default 4)")
    p.add_argument("--envs", type=int, default=2, help="envs of each recording (default 2)")
    p.add_argument("--seed", type=int, default=3, help="seed of each recording (default 3)")
    p.add_argument("--frames", type=int, default=None, help="encode at most this many frames of each episode")
    p.add_argument("--skip-lerobot", action="store_true", help="do not decode the videos in the LeRobot venv")
    p.add_argument("--json", type=Path, help="also write the figures here")
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="cfg overrides for the recordings")
    args = p.parse_args(argv)

    given: dict[str, list[Path]] = {}
    for item in args.files:
        scene, _, pattern = item.partition("=")
        if scene not in SCENES or not pattern:
            p.error(f"--files {item!r}: expected SCENE=GLOB with SCENE one of {', '.join(SCENES)}")
        given[scene] = [Path(f) for f in sorted(glob.glob(pattern))]
        if not given[scene]:
            p.error(f"--files {item!r}: no file matches")
    scenes = list(given) if given else args.scenes

    results: dict[str, dict] = {}
    videos: list = []
    seconds = {s: 0.0 for s in (*SETTINGS, "default")}
    frames = 0
    with tempfile.TemporaryDirectory(prefix="video_quality_") as tmp:
        work = Path(tmp)
        for scene in scenes:
            if scene in given:
                files, how = given[scene], f"{len(given[scene])} given file(s)"
            else:
                t0 = time.perf_counter()
                files = record(scene, args.demos, args.envs, args.seed, work / f"{scene}.hdf5", args.overrides)
                how = f"{args.demos} scripted demos recorded in {time.perf_counter() - t0:.0f} s"
            print(f"{scene}: {how}", flush=True)
            (work / scene).mkdir()
            results[scene], new = measure(files, work / scene, args.frames)
            videos += new
            for r in results[scene].values():
                frames += r["frames"]
                for s in SETTINGS:
                    seconds[s] += r[s]["seconds"]
                seconds["default"] += r[r["default"]]["seconds"]
        checked = "LeRobot: not checked (--skip-lerobot)" if args.skip_lerobot else "LeRobot: " + lerobot_check(videos)

    from l3.video import AUTO_MIN_CAP_DB

    lines, met, total = report(results)
    print()
    print("PSNR through the readers (PyAV to_ndarray rgb24) against the recorded frames; old = crf 22, FFmpeg's")
    print("RGB -> yuv420p (the baseline); yuv420p / yuv444p = l3.video with that video.pix_fmt (crf 18 / 22);")
    print(f"default = video.pix_fmt auto, chosen from the first episode's yuv420p cap (>= {AUTO_MIN_CAP_DB:g} dB:")
    print("yuv420p); cap = yuv420p read back with no encoder")
    print("\n".join(lines))
    ms = {s: 1000 * seconds[s] / frames for s in seconds}
    print(
        f"encode time per frame: old {ms['old']:.2f} ms, yuv420p {ms['yuv420p']:.2f} ms, yuv444p {ms['yuv444p']:.2f} "
        f"ms, default {ms['default']:.2f} ms ({ms['default'] / ms['old']:.2f}x old), {frames} frames per setting"
    )
    print(checked)
    print(f"target default >= {TARGET_DB:.0f} dB mean: met on {met} of {total} scene cameras")
    if args.json:
        args.json.write_text(json.dumps(summary_json(results, ms), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
