"""GR00T LeRobot v2.1 writer: one parquet (+ one MP4 per camera) per episode, then meta/.

Layout and recipe: ``shared/spec/gr00t-lerobot-output.md``. :class:`Layout` describes the dataset
once (features, modality slices, paths); everything else is derived from it. Episodes are written
by :func:`write_episode` (safe to run in worker processes: it touches only its own files) and the
metadata by :class:`MetaWriter` in the main process, in episode order.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from l3 import stats as st
from l3.episode import Episode
from l3.mapping import Mapping
from l3.video import encode

CODEBASE_VERSION = "v2.1"
CHUNKS_SIZE = 1000
DATA_PATH = "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet"
VIDEO_PATH = "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4"
META = "meta"
VALID, INVALID = "valid", "invalid"
FLOAT_FEATURES = ("observation.state", "action", "timestamp", "next.reward")


@dataclass(frozen=True)
class Layout:
    """The dataset description: a mapping with names filled in plus each camera's (H, W)."""

    mapping: Mapping
    camera_shapes: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def fps(self) -> int:
        return self.mapping.fps

    def names(self, group: str) -> list[str]:
        slices = self.mapping.state if group == "state" else self.mapping.action
        return [n for s in slices for n in (s.names or ())]

    def video_key(self, camera: str) -> str:
        return f"observation.images.{camera}"

    def annotation_columns(self) -> list[tuple[str, str]]:
        return [(f"annotation.{key}", kind) for key, kind in self.mapping.annotations]

    def features(self) -> dict[str, dict]:
        """info.json ``features``: every parquet column and every video, with names."""
        state, action = self.names("state"), self.names("action")
        f: dict[str, dict] = {
            "observation.state": {"dtype": "float32", "shape": [len(state)], "names": state},
            "action": {"dtype": "float32", "shape": [len(action)], "names": action},
        }
        for cam in self.mapping.cameras:
            h, w = self.camera_shapes[cam.key]
            f[self.video_key(cam.key)] = {
                "dtype": "video", "shape": [h, w, 3], "names": ["height", "width", "channels"],
                "info": {"video.height": h, "video.width": w, "video.codec": "h264",
                         "video.pix_fmt": "yuv420p", "video.is_depth_map": False,
                         "video.fps": self.fps, "video.channels": 3, "has_audio": False}}
        f["timestamp"] = {"dtype": "float32", "shape": [1], "names": None}
        for col in ("frame_index", "episode_index", "index", "task_index"):
            f[col] = {"dtype": "int64", "shape": [1], "names": None}
        for col, _ in self.annotation_columns():
            f[col] = {"dtype": "int64", "shape": [1], "names": None}
        f["next.reward"] = {"dtype": "float32", "shape": [1], "names": None}
        f["next.done"] = {"dtype": "bool", "shape": [1], "names": None}
        return f

    def modality(self) -> dict[str, Any]:
        """meta/modality.json: slices into the concatenated arrays (optional fields only when not default)."""
        def block(slices) -> dict:
            out, pos = {}, 0
            for s in slices:
                w = len(s.names or ())
                e: dict[str, Any] = {"start": pos, "end": pos + w}
                if s.rotation_type:
                    e["rotation_type"] = s.rotation_type
                if not s.absolute:
                    e["absolute"] = False
                out[s.key] = e
                pos += w
            return out

        return {
            "state": block(self.mapping.state),
            "action": block(self.mapping.action),
            "video": {c.key: {"original_key": self.video_key(c.key)} for c in self.mapping.cameras},
            "annotation": {key: {} for key, _ in self.mapping.annotations},
        }

    def data_path(self, index: int) -> str:
        return DATA_PATH.format(episode_chunk=index // CHUNKS_SIZE, episode_index=index)

    def video_path(self, index: int, camera: str) -> str:
        return VIDEO_PATH.format(episode_chunk=index // CHUNKS_SIZE, video_key=self.video_key(camera),
                                 episode_index=index)


@dataclass
class EpisodeJob:
    """Where one episode goes: its final index, global frame offset and task indices."""

    index: int
    offset: int
    task_index: int
    validity_index: int
    tasks: list[str]


@dataclass
class EpisodeResult:
    """What the main process needs from a written episode (small: no frame data)."""

    index: int
    length: int
    episode: dict[str, Any]
    stats: dict[str, dict]
    moments: dict[str, st.Moments]
    hist: dict[str, np.ndarray]
    nbytes: int
    video_frames: int


def float_ranges(layout: Layout, state_rng: tuple[np.ndarray, np.ndarray],
                 action_rng: tuple[np.ndarray, np.ndarray], max_length: int) -> dict[str, tuple]:
    """Histogram ranges of the float features (state/action from the check pass)."""
    one = lambda v: np.array([float(v)])  # noqa: E731
    return {"observation.state": state_rng, "action": action_rng,
            "timestamp": (one(0.0), one((max_length - 1) / layout.fps)), "next.reward": (one(0.0), one(1.0))}


def _list_column(rows: np.ndarray) -> pa.Array:
    flat = pa.array(np.ascontiguousarray(rows, dtype=np.float32).reshape(-1))
    offsets = pa.array(np.arange(0, rows.size + 1, rows.shape[1], dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, flat)


def write_episode(root: Path, layout: Layout, ep: Episode, job: EpisodeJob,
                  ranges: dict[str, tuple]) -> EpisodeResult:
    """Write one episode's parquet and videos under ``root``; return its stats and metadata."""
    T, i, fps = ep.length, job.index, layout.fps
    m = layout.mapping
    state = np.concatenate([ep.state[s.key] for s in m.state], axis=1)
    action = np.concatenate([ep.action[s.key] for s in m.action], axis=1)
    frame_index = np.arange(T, dtype=np.int64)
    timestamp = (frame_index / fps).astype(np.float32)
    reward = np.zeros(T, dtype=np.float32)
    reward[-1] = 1.0 if ep.success else 0.0
    done = np.zeros(T, dtype=bool)
    done[-1] = True
    const = lambda v: np.full(T, v, dtype=np.int64)  # noqa: E731
    cols: dict[str, np.ndarray] = {
        "observation.state": state, "action": action, "timestamp": timestamp,
        "frame_index": frame_index, "episode_index": const(i),
        "index": np.arange(job.offset, job.offset + T, dtype=np.int64), "task_index": const(job.task_index),
    }
    for col, kind in layout.annotation_columns():
        cols[col] = const(job.task_index if kind == "task" else job.validity_index)
    cols["next.reward"], cols["next.done"] = reward, done

    table = pa.table({k: _list_column(v) if v.ndim == 2 else pa.array(v) for k, v in cols.items()})
    path = root / layout.data_path(i)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="snappy")
    nbytes = path.stat().st_size

    ep_stats = {k: st.episode_feature_stats(v) for k, v in cols.items()}
    moments = {k: st.Moments.of(cols[k]) for k in FLOAT_FEATURES}
    hist = {k: st.histogram(cols[k].reshape(T, -1), *ranges[k]) for k in FLOAT_FEATURES}

    video_frames = 0
    for cam in m.cameras:
        vpath = root / layout.video_path(i, cam.key)
        vpath.parent.mkdir(parents=True, exist_ok=True)
        pix = st.PixelStats()
        n = encode(vpath, ep.cameras[cam.key].chunks(), fps, m.video, pix)
        if n != T:
            raise ValueError(f"camera {cam.key}: encoded {n} frames for {T} rows")
        ep_stats[layout.video_key(cam.key)] = pix.to_json(n)
        nbytes += vpath.stat().st_size
        video_frames += n

    episode = {"episode_index": i, "tasks": job.tasks, "length": T, "source": ep.source,
               "success": bool(ep.success), **ep.fields}
    return EpisodeResult(i, T, episode, ep_stats, moments, hist, nbytes, video_frames)


def _jsonl_line(obj: dict) -> str:
    return json.dumps(obj, ensure_ascii=False) + "\n"


class MetaWriter:
    """Streams episodes.jsonl / episodes_stats.jsonl in episode order and writes the rest at the end."""

    def __init__(self, root: Path, layout: Layout, tasks: list[str]):
        self.root, self.layout, self.tasks = root, layout, tasks
        (root / META).mkdir(parents=True, exist_ok=True)
        self._episodes = open(root / META / "episodes.jsonl", "w", encoding="utf-8")
        self._ep_stats = open(root / META / "episodes_stats.jsonl", "w", encoding="utf-8")
        self.episodes = self.frames = 0
        self.moments: dict[str, st.Moments] = {}
        self.hist: dict[str, np.ndarray] = {}

    def add(self, r: EpisodeResult) -> None:
        """Append one written episode (must be called in episode order)."""
        if r.index != self.episodes:
            raise ValueError(f"episode {r.index} added out of order (expected {self.episodes})")
        self._episodes.write(_jsonl_line(r.episode))
        self._ep_stats.write(_jsonl_line({"episode_index": r.index, "stats": r.stats}))
        for k in FLOAT_FEATURES:
            self.moments[k] = r.moments[k] if k not in self.moments else self.moments[k].merge(r.moments[k])
            self.hist[k] = r.hist[k] if k not in self.hist else self.hist[k] + r.hist[k]
        self.episodes += 1
        self.frames += r.length

    def finish(self, ranges: dict[str, tuple]) -> None:
        """Write info.json, tasks.jsonl, modality.json and stats.json; close the jsonl streams."""
        self._episodes.close()
        self._ep_stats.close()
        meta = self.root / META
        n, L = self.episodes, self.layout
        info = {
            "codebase_version": CODEBASE_VERSION, "robot_type": L.mapping.robot_type,
            "total_episodes": n, "total_frames": self.frames, "total_tasks": len(self.tasks),
            "total_videos": n * len(L.mapping.cameras), "total_chunks": math.ceil(n / CHUNKS_SIZE),
            "chunks_size": CHUNKS_SIZE, "fps": L.fps, "splits": {"train": f"0:{n}"},
            "data_path": DATA_PATH, "video_path": VIDEO_PATH if L.mapping.cameras else None,
            "features": L.features(),
        }
        _write_json(meta / "info.json", info)
        with open(meta / "tasks.jsonl", "w", encoding="utf-8") as f:
            f.writelines(_jsonl_line({"task_index": k, "task": t}) for k, t in enumerate(self.tasks))
        _write_json(meta / "modality.json", L.modality())
        stats = {}
        for k in FLOAT_FEATURES:
            m, (lo, hi) = self.moments[k], ranges[k]
            s = {"mean": m.mean, "std": m.std, "min": m.min, "max": m.max}
            for name, q in st.QUANTILES.items():
                s[name] = st.quantile(self.hist[k], lo, hi, q, m.min, m.max)
            stats[k] = {name: st.to_json(v) for name, v in s.items()}
        _write_json(meta / "stats.json", stats)

    def abort(self) -> None:
        self._episodes.close()
        self._ep_stats.close()


def _write_json(path: Path, obj: Any) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=4, ensure_ascii=False)
        f.write("\n")
