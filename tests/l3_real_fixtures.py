"""Realistic real-robot inputs for the L3 tests: platform exports (chunk_NNN.hdf5, tar.gz) and ALOHA files.

Platform exports follow docs/platform-hdf5-input.md: several chunks with continuous episode
numbering, cameras with real JPEG frames that differ per frame, Chinese ``task_zh``, and the
encoding variants (str or bytes attrs, vlen uint8 or fixed-size np.void JPEG rows, float32 or
float64, MCAP-style or AgiBot-style /meta). ALOHA files follow the ACT / Mobile ALOHA
record_episodes.py layout, raw or compressed (padded JPEG + compress_len).
JPEGs are encoded with PyAV's mjpeg encoder (no Pillow needed).
"""

from __future__ import annotations

import json
import tarfile
from fractions import Fraction
from pathlib import Path

import av
import h5py
import numpy as np

SIZE = (120, 160)
"""Frame (H, W): small, but large enough for camera-like PSNR (at 48x64, 4:2:0 chroma edges cap it near 31 dB)."""
PLATFORM_CAMERAS = ("cam_high", "cam_left_wrist", "cam_right_wrist")
STATE_NAMES = [f"{side}_joint{i}" for side in ("right", "left") for i in range(1, 8)]
ACTION_NAMES = STATE_NAMES + ["right_gripper_cmd", "left_gripper_cmd"]
TASKS = [
    ("Pick up the red cup and place it on the tray.", "拿起红色杯子放到托盘上。"),
    ("Fold the towel in half.", "把毛巾对折。"),
]


def render(t: int, h: int, w: int, cam: int) -> np.ndarray:
    """A smooth camera-like image that changes every frame: lit gradients, a moving box and a disc."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.empty((h, w, 3), np.float32)
    img[..., 0] = 90 + 60 * np.sin((xx + 3 * t) / (w / 3) + cam)
    img[..., 1] = 100 + 50 * np.cos((yy - 2 * t) / (h / 2.5))
    img[..., 2] = 120 + 40 * np.sin((xx + yy) / (w / 2) + 0.2 * t)
    x0, y0 = (4 + 3 * t + 7 * cam) % (w - 16), (h // 3 + t) % (h - 12)  # soft-edged box and disc
    box = np.clip(np.minimum.reduce([xx - x0, x0 + 16 - xx, yy - y0, y0 + 12 - yy]) / 2.0, 0, 1)[..., None]
    img = img * (1 - box) + box * np.array([220, 40 + 10 * cam, 40], np.float32)
    cy, cx = h * 0.7, (w * 0.3 + 2 * t) % w
    disc = np.clip((h / 8 - np.sqrt((yy - cy) ** 2 + (xx - cx) ** 2)) / 2.0, 0, 1)[..., None]
    img = img * (1 - disc) + disc * np.array([30, 160, 220], np.float32)
    return np.clip(img, 0, 255).astype(np.uint8)


def jpeg_frames(frames: np.ndarray, quality: int = 3) -> list[bytes]:
    """Encode (T, H, W, 3) uint8 RGB frames as one JPEG each (mjpeg, qscale ``quality``: 2 best)."""
    ctx = av.CodecContext.create("mjpeg", "w")
    ctx.width, ctx.height, ctx.pix_fmt = frames.shape[2], frames.shape[1], "yuvj420p"
    ctx.time_base = Fraction(1, 30)
    ctx.qmin = ctx.qmax = quality
    out = []
    for img in frames:
        frame = av.VideoFrame.from_ndarray(img, format="rgb24").reformat(format="yuvj420p")
        out += [bytes(p) for p in ctx.encode(frame)]
    out += [bytes(p) for p in ctx.encode(None)]
    assert len(out) == len(frames)
    return out


def decode_jpeg(data: bytes) -> np.ndarray:
    """Reference decode of one JPEG (what the converter's input frame is)."""
    frames = av.CodecContext.create("mjpeg", "r").decode(av.Packet(data))
    return frames[0].to_ndarray(format="rgb24")


def _text_attr(g, key: str, text: str, as_bytes: bool) -> None:
    g.attrs[key] = np.bytes_(text.encode("utf-8")) if as_bytes else text


def _jpeg_dataset(g: h5py.Group, name: str, jpegs: list[bytes], rows: str) -> None:
    if rows == "vlen":  # h5py vlen uint8 arrays (what the platform writes)
        ds = g.create_dataset(name, (len(jpegs),), dtype=h5py.vlen_dtype(np.uint8))
        for i, b in enumerate(jpegs):
            ds[i] = np.frombuffer(b, np.uint8)
    elif rows == "void":  # fixed-size opaque rows, zero padded: read back as np.void
        n = max(map(len, jpegs))
        g.create_dataset(name, data=np.array([b.ljust(n, b"\0") for b in jpegs], dtype=f"V{n}"))
    else:
        raise ValueError(rows)


def make_platform_chunk(
    path: str | Path,
    first_episode: int,
    lengths: list[int],
    *,
    seed: int = 0,
    cameras=PLATFORM_CAMERAS,
    size: tuple[int, int] = SIZE,
    attrs_bytes: bool = False,
    rows: str = "vlen",
    dtype=np.float32,
    meta: str | None = "mcap",
    scores=None,
    episode_names: list[str] | None = None,
) -> Path:
    """One chunk file with episodes episode_<first>.. of the given lengths (arrays are random)."""
    rng = np.random.default_rng(seed)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    h, w = size
    with h5py.File(path, "w") as f:
        data = f.create_group("data")
        for k, T in enumerate(lengths):
            name = episode_names[k] if episode_names else f"episode_{first_episode + k:03d}"
            g = data.create_group(name)
            g.create_dataset("action", data=rng.normal(size=(T, 16)).astype(dtype))
            g.create_dataset("observation.state", data=rng.normal(size=(T, 14)).astype(dtype))
            g.create_dataset("observation.gripper", data=rng.uniform(0, 1, size=(T, 2)).astype(dtype))
            for c, cam in enumerate(cameras):
                frames = np.stack([render(t + 5 * (first_episode + k), h, w, c) for t in range(T)])
                _jpeg_dataset(g, f"observation.images.{cam}", jpeg_frames(frames), rows)
            task, task_zh = TASKS[(first_episode + k) % len(TASKS)]
            _text_attr(g, "task", task, attrs_bytes)
            _text_attr(g, "task_zh", task_zh, attrs_bytes)
            g.attrs["score"] = float(scores[k]) if scores is not None else -1.0
        m = f.create_group("meta")
        if meta == "mcap":  # feature metadata as attributes of /meta
            for field, names, d in (
                ("action", ACTION_NAMES, 16),
                ("observation.state", STATE_NAMES, 14),
                ("observation.gripper", ["right_gripper", "left_gripper"], 2),
            ):
                m.attrs[field] = json.dumps({"dtype": np.dtype(dtype).name, "shape": [d], "names": names})
        elif meta == "agibot":
            m.attrs["meta.robot_type"] = np.bytes_(b"agibot_g1") if attrs_bytes else "agibot_g1"
            m.create_dataset("urdf", data="<robot name='g1'/>")
            for cam in cameras:
                cg = m.create_group(f"camera/{cam}")
                cg.create_dataset("intrinsic", data=json.dumps({"fx": 300.0, "fy": 300.0, "cx": w / 2, "cy": h / 2}))
                cg.create_dataset("extrinsic", data=json.dumps({"rotation": [0, 0, 0, 1], "translation": [0, 0, 1]}))
    return path


def make_platform_export(folder: str | Path, chunks: list[list[int]], **kw) -> list[Path]:
    """chunk_001.hdf5, chunk_002.hdf5, ... with continuous episode numbering (episode_001 first)."""
    files, nxt = [], 1
    for c, lengths in enumerate(chunks, start=1):
        files.append(make_platform_chunk(Path(folder) / f"chunk_{c:03d}.hdf5", nxt, lengths, seed=c, **kw))
        nxt += len(lengths)
    return files


def make_tar_gz(path: str | Path, files: list[Path], prefix: str = "export/") -> Path:
    """A tar.gz holding ``files`` (added in reverse order: the reader must sort by chunk number)."""
    path = Path(path)
    with tarfile.open(path, "w:gz") as tf:
        for p in reversed(files):
            tf.add(p, arcname=prefix + p.name)
    return path


def make_aloha_file(
    path: str | Path,
    T: int,
    *,
    seed: int = 0,
    compress: bool = False,
    cameras=PLATFORM_CAMERAS,
    size: tuple[int, int] = SIZE,
    sim: bool = False,
    base_action: bool = True,
) -> Path:
    """One ALOHA episode as written by record_episodes.py (raw frames, or padded JPEG with compress=True)."""
    rng = np.random.default_rng(seed)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    h, w = size
    frames = {cam: np.stack([render(t + seed, h, w, c) for t in range(T)]) for c, cam in enumerate(cameras)}
    with h5py.File(path, "w") as f:
        f.attrs["sim"] = sim
        f.attrs["compress"] = compress
        obs = f.create_group("observations")
        images = obs.create_group("images")
        lens = []
        if compress:
            encoded = {cam: jpeg_frames(frames[cam]) for cam in cameras}
            pad = max(len(b) for v in encoded.values() for b in v)
            for cam in cameras:
                rows = np.zeros((T, pad), np.uint8)
                for t, b in enumerate(encoded[cam]):
                    rows[t, : len(b)] = np.frombuffer(b, np.uint8)
                images.create_dataset(cam, data=rows, chunks=(1, pad))
                lens.append([len(b) for b in encoded[cam]])
        else:
            for cam in cameras:
                images.create_dataset(cam, data=frames[cam], chunks=(1, h, w, 3))
        for k in ("qpos", "qvel", "effort"):
            obs.create_dataset(k, data=rng.normal(size=(T, 14)).astype(np.float32))
        f.create_dataset("action", data=rng.normal(size=(T, 14)).astype(np.float32))
        if base_action:
            f.create_dataset("base_action", data=rng.normal(size=(T, 2)).astype(np.float32))
        if compress:
            f.create_dataset("compress_len", data=np.array(lens, dtype=np.float32))
    return path
