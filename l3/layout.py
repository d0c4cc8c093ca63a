"""The GR00T LeRobot v2.1 dataset layout, described once (modelled on LeRobot's ``datasets/utils.py``).

Paths, meta file names, the parquet columns and info.json features, the info.json and stats keys
and the codebase version live here; :mod:`l3.writer` writes what this describes and
:mod:`l3.validate` checks a folder against it. :class:`Layout` is one dataset's description: a
mapping with names filled in plus each camera's frame size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from l3.mapping import PIX_FMTS, Mapping, VideoOptions

CODEBASE_VERSION = "v2.1"
CHUNKS_SIZE = 1000
"""Episodes per ``chunk-NNN`` folder."""

META = "meta"
INFO_PATH = f"{META}/info.json"
EPISODES_PATH = f"{META}/episodes.jsonl"
EPISODES_STATS_PATH = f"{META}/episodes_stats.jsonl"
TASKS_PATH = f"{META}/tasks.jsonl"
MODALITY_PATH = f"{META}/modality.json"
STATS_PATH = f"{META}/stats.json"
MAPPING_PATH = f"{META}/l3_mapping.yaml"
"""The mapping a conversion inferred (no ``--config``), for the user to edit and pass back with ``--config``; not
read by any loader."""
DATA_PATH = "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet"
VIDEO_PATH = "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4"

INFO_KEYS = (
    "codebase_version",
    "robot_type",
    "fps",
    "chunks_size",
    "total_episodes",
    "total_frames",
    "total_tasks",
    "total_videos",
    "total_chunks",
    "splits",
    "data_path",
    "video_path",
    "features",
)
STATS_KEYS = ("mean", "std", "min", "max", "q01", "q99")
"""stats.json: per float feature."""
EPISODE_STATS_KEYS = ("min", "max", "mean", "std", "count")
"""episodes_stats.jsonl: per column and camera of one episode."""

STATE, ACTION = "observation.state", "action"
TIMESTAMP, FRAME_INDEX, EPISODE_INDEX, INDEX, TASK_INDEX = (
    "timestamp",
    "frame_index",
    "episode_index",
    "index",
    "task_index",
)
REWARD, DONE = "next.reward", "next.done"
INDEX_FEATURES = {
    TIMESTAMP: "float32",
    FRAME_INDEX: "int64",
    EPISODE_INDEX: "int64",
    INDEX: "int64",
    TASK_INDEX: "int64",
}
"""The per-frame columns every LeRobot dataset has (LeRobot's ``DEFAULT_FEATURES``), in column order."""
NEXT_FEATURES = {REWARD: "float32", DONE: "bool"}
"""The last columns: 1.0 reward on the last row of a successful episode, done on the last row."""
VIDEO_PREFIX = "observation.images."
ANNOTATION_PREFIX = "annotation."
VIDEO_NAMES = ("height", "width", "channels")
VIDEO_CODEC = "h264"
VIDEO_PIX_FMTS = PIX_FMTS
"""What a video feature's ``video.pix_fmt`` may be; every MP4 of the feature is in the one it declares."""
FLOAT_DTYPES = ("float32", "float64")
VALID, INVALID = "valid", "invalid"
"""The tasks.jsonl entries the validity annotation points at."""


def video_key(camera: str) -> str:
    return f"{VIDEO_PREFIX}{camera}"


def video_info(height: int, width: int, fps: int, pix_fmt: str) -> dict[str, Any]:
    """info.json ``features.<video key>.info``."""
    return {
        "video.height": height,
        "video.width": width,
        "video.codec": VIDEO_CODEC,
        "video.pix_fmt": pix_fmt,
        "video.is_depth_map": False,
        "video.fps": fps,
        "video.channels": 3,
        "has_audio": False,
    }


def data_path(index: int, chunks_size: int = CHUNKS_SIZE, template: str = DATA_PATH) -> str:
    """Episode ``index``'s parquet, relative to the dataset folder."""
    return template.format(episode_chunk=index // chunks_size, episode_index=index)


def video_path(index: int, key: str, chunks_size: int = CHUNKS_SIZE, template: str = VIDEO_PATH) -> str:
    """Episode ``index``'s MP4 of video feature ``key``, relative to the dataset folder."""
    return template.format(episode_chunk=index // chunks_size, video_key=key, episode_index=index)


def parquet_columns(features: dict[str, dict]) -> list[str]:
    """The parquet columns: every feature but the videos, in feature order."""
    return [key for key, f in features.items() if f.get("dtype") != "video"]


def float_features(features: dict[str, dict]) -> list[str]:
    """The features stats.json describes (float dtypes), in feature order."""
    return [key for key, f in features.items() if f.get("dtype") in FLOAT_DTYPES]


@dataclass(frozen=True)
class Layout:
    """One dataset's description: a mapping with names filled in plus each camera's (H, W) and pixel format."""

    mapping: Mapping
    camera_shapes: dict[str, tuple[int, int]] = field(default_factory=dict)
    pix_fmts: dict[str, str] = field(default_factory=dict)
    """Each camera's pixel format (one of :data:`VIDEO_PIX_FMTS`): the mapping's, or what ``auto`` chose."""

    @property
    def fps(self) -> int:
        return self.mapping.fps

    def names(self, group: str) -> list[str]:
        slices = self.mapping.state if group == "state" else self.mapping.action
        return [n for s in slices for n in (s.names or ())]

    def annotation_columns(self) -> list[tuple[str, str]]:
        """(column, kind) of each annotation: kind ``task`` or ``validity``."""
        return [(f"{ANNOTATION_PREFIX}{key}", kind) for key, kind in self.mapping.annotations]

    def features(self) -> dict[str, dict]:
        """info.json ``features``: every parquet column and every video, with names."""
        state, action = self.names("state"), self.names("action")
        f: dict[str, dict] = {
            STATE: {"dtype": "float32", "shape": [len(state)], "names": state},
            ACTION: {"dtype": "float32", "shape": [len(action)], "names": action},
        }
        for cam in self.mapping.cameras:
            h, w = self.camera_shapes[cam.key]
            f[video_key(cam.key)] = {
                "dtype": "video",
                "shape": [h, w, 3],
                "names": list(VIDEO_NAMES),
                "info": video_info(h, w, self.fps, self.pix_fmts[cam.key]),
            }
        scalar = lambda dtype: {"dtype": dtype, "shape": [1], "names": None}  # noqa: E731
        f.update((col, scalar(dtype)) for col, dtype in INDEX_FEATURES.items())
        f.update((col, scalar("int64")) for col, _ in self.annotation_columns())
        f.update((col, scalar(dtype)) for col, dtype in NEXT_FEATURES.items())
        return f

    @cached_property
    def columns(self) -> tuple[str, ...]:
        """The parquet columns, in order."""
        return tuple(parquet_columns(self.features()))

    @cached_property
    def float_features(self) -> tuple[str, ...]:
        """The features with dataset statistics in stats.json."""
        return tuple(float_features(self.features()))

    def modality(self) -> dict[str, Any]:
        """meta/modality.json: slices into the concatenated arrays, ``absolute`` on every key (readers need not
        know GR00T's default) and ``rotation_type`` on keys that are exactly one rotation."""

        def block(slices) -> dict:
            out, pos = {}, 0
            for s in slices:
                w = len(s.names or ())
                e: dict[str, Any] = {"start": pos, "end": pos + w, "absolute": s.absolute}
                if s.rotation_type:
                    e["rotation_type"] = s.rotation_type
                out[s.key] = e
                pos += w
            return out

        return {
            "state": block(self.mapping.state),
            "action": block(self.mapping.action),
            "video": {c.key: {"original_key": video_key(c.key)} for c in self.mapping.cameras},
            "annotation": {key: {} for key, _ in self.mapping.annotations},
        }

    def info(self, episodes: int, frames: int, tasks: int) -> dict[str, Any]:
        """meta/info.json for a dataset of this layout."""
        n, cameras = episodes, self.mapping.cameras
        return {
            "codebase_version": CODEBASE_VERSION,
            "robot_type": self.mapping.robot_type,
            "total_episodes": n,
            "total_frames": frames,
            "total_tasks": tasks,
            "total_videos": n * len(cameras),
            "total_chunks": math.ceil(n / CHUNKS_SIZE),
            "chunks_size": CHUNKS_SIZE,
            "fps": self.fps,
            "splits": {"train": f"0:{n}"},
            "data_path": DATA_PATH,
            "video_path": VIDEO_PATH if cameras else None,
            "features": self.features(),
        }

    def video_options(self, camera: str) -> VideoOptions:
        """The encoder settings of ``camera``'s videos: its pixel format, its crf."""
        return self.mapping.video.resolved(self.pix_fmts[camera])

    def data_path(self, index: int) -> str:
        return data_path(index)

    def video_path(self, index: int, camera: str) -> str:
        return video_path(index, video_key(camera))
