"""Camera frames streamed to disk while episodes run, so recording memory does not grow with them.

Isaac Lab's RecorderManager keeps every recorded value of a running episode in RAM until export: with
two 224 x 224 cameras that is about 300 kB per env and step (90 MB per env for a 6 s episode), which
exhausts memory at GPU scale. Here each step's images are compressed (gzip, in a background thread) into
a per-run spool file beside the output instead; when an episode ends, :class:`CameraFramesRecorder`
hands the episode its frames as :class:`SpooledFrames`, and the dataset file handler copies their
compressed chunks into ``data/demo_<i>/obs/<camera>``. The layout is the one Isaac Lab's handler would
write from RAM, a (T, H, W, 3) uint8 dataset per camera, stored as one gzip chunk per frame.
"""

from __future__ import annotations

import contextlib
import glob
import os
import threading
import zlib
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import h5py
import numpy as np
from isaaclab.managers import RecorderTerm, RecorderTermCfg
from isaaclab.utils import configclass

from l2.format import atomic
from l2.format.schema import OBS
from l2.recording.errors import RecordingIOError

if TYPE_CHECKING:
    from isaaclab.envs import ManagerBasedEnv

SPOOL_SUFFIX = ".frames.spool"
"""Spool files are named ``.<output stem>.<pid>.frames.spool`` (hidden, and not ``*.hdf5``, so no reader of
the demo folder mistakes one for a dataset); removed when the run closes, or by the next run after a crash."""
GZIP_LEVEL = 2
"""Isaac Lab's handler writes every dataset with gzip level 2; frames use the same."""
MAX_PENDING_STEPS = 4
"""Steps of frames waiting for the compression thread before ``append`` blocks (bounds the memory held)."""
GROW_FRAMES = 64
"""A spool dataset grows by this many frames at a time (fewer h5py calls holding the GIL; unwritten chunks
take no space) and is cut to its frame count when its episode is taken."""


@dataclass(frozen=True)
class SpooledFrames:
    """One finished episode's frames of one camera, stored at ``path`` in a spool file."""

    spool: FrameSpool
    path: str
    shape: tuple[int, ...]

    def copy_to(self, group: h5py.Group, name: str) -> h5py.Dataset:
        """Copy the frames into ``group[name]`` (compressed chunks are copied as they are)."""
        self.spool.wait()
        with self.spool.lock:
            group.copy(self.spool.file[self.path], name)
        return group[name]

    @property
    def stored_bytes(self) -> int:
        """Bytes the frames take in the spool, and so in the dataset they are copied to."""
        with self.spool.lock:
            return self.spool.file[self.path].id.get_storage_size()


class FrameSpool:
    """Per-env camera frames of the running episodes, compressed into a spool HDF5 file.

    ``append`` takes one step's images of one camera for all envs; ``take`` ends an env's episode and
    returns its frames; ``release`` deletes what ``take`` returned once it has been exported. One
    background thread compresses and writes; all its writes finish before ``take`` or a copy reads.
    """

    def __init__(self, output: str | os.PathLike, compression: int | None = GZIP_LEVEL):
        """A spool for the run writing ``output`` (the file is created beside it), gzip ``compression`` level
        or None for uncompressed frames."""
        self.path = spool_path(output)
        self.compression = compression
        remove_stale_spools(output)
        self.file = h5py.File(self.path, "w")
        self._episode: dict[int, int] = {}  # env id -> number of its current episode in the spool
        self._running: dict[str, dict[str, list]] = {}  # episode group -> camera -> [dataset, frames written]
        self._taken: dict[int, list[str]] = {}  # env id -> groups handed out by take(), deleted by release()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="frame-spool")
        self._pending: deque[Future] = deque()
        self.lock = threading.Lock()
        """Guards the spool file's h5py objects, shared with the writer thread."""

    def _group(self, env_id: int) -> str:
        return f"env_{env_id}/episode_{self._episode.setdefault(env_id, 0)}"

    def append(self, name: str, frames: np.ndarray, env_ids: Sequence[int]) -> None:
        """Queue ``frames[k]`` (H, W, 3) uint8 as the next frame of camera ``name`` for env ``env_ids[k]``."""
        if frames.ndim != 4 or frames.dtype != np.uint8:
            raise ValueError(f"camera {name}: expected (envs, H, W, C) uint8 frames, got {frames.dtype} {frames.shape}")
        while len(self._pending) >= MAX_PENDING_STEPS:
            self._pending.popleft().result()
        groups = [self._group(e) for e in env_ids]
        self._pending.append(self._pool.submit(self._write, name, groups, np.array(frames, copy=True)))

    def _write(self, name: str, groups: list[str], frames: np.ndarray) -> None:
        for group, frame in zip(groups, frames, strict=True):
            data = frame.tobytes()
            if self.compression is not None:
                data = zlib.compress(data, self.compression)  # releases the GIL: runs beside the simulator
            with self.lock:
                track = self._running.setdefault(group, {}).get(name)
                if track is None:
                    dset = self.file.create_dataset(
                        f"{group}/{name}",
                        shape=(GROW_FRAMES, *frame.shape),
                        maxshape=(None, *frame.shape),
                        chunks=(1, *frame.shape),
                        dtype=np.uint8,
                        compression="gzip" if self.compression is not None else None,
                        compression_opts=self.compression,
                    )
                    track = self._running[group][name] = [dset, 0]
                dset, n = track
                if n == dset.shape[0]:
                    dset.resize(n + GROW_FRAMES, axis=0)
                dset.id.write_direct_chunk((n, 0, 0, 0), data)  # a zlib stream is what HDF5's gzip filter stores
                track[1] = n + 1

    def wait(self) -> None:
        """Block until every queued frame is in the file (re-raises a writer error)."""
        while self._pending:
            self._pending.popleft().result()

    def take(self, env_id: int) -> dict[str, SpooledFrames]:
        """End env ``env_id``'s episode in the spool: its frames per camera (empty when it has none)."""
        self.wait()
        group = self._group(env_id)
        frames = {}
        with self.lock:
            for name, (dset, n) in self._running.pop(group, {}).items():
                dset.resize(n, axis=0)
                frames[name] = SpooledFrames(self, dset.name, dset.shape)
        if frames:
            self._taken.setdefault(env_id, []).append(group)
            self._episode[env_id] += 1
        return frames

    def release(self, env_ids: Sequence[int]) -> None:
        """Delete the frames :meth:`take` returned for these envs (they have been exported or dropped)."""
        with self.lock:
            for env_id in env_ids:
                for group in self._taken.pop(env_id, ()):
                    del self.file[group]  # HDF5 reuses the freed space for the next frames

    def close(self) -> None:
        """Stop the writer and delete the spool file (closed without a last write: it may be on a full disk)."""
        self._pool.shutdown(wait=True)
        self._pending.clear()
        atomic.abandon_hdf5(self.file)
        self.path.unlink(missing_ok=True)


def spool_path(output: str | os.PathLike) -> Path:
    """The spool file of a run writing ``output`` (this process)."""
    output = Path(output)
    return output.with_name(f".{output.stem}.{os.getpid()}{SPOOL_SUFFIX}")


def remove_stale_spools(output: str | os.PathLike) -> None:
    """Delete spool files of ``output`` left by runs that no longer exist (crashed or killed)."""
    output = Path(output)
    prefix = f".{output.stem}."
    for old in output.parent.glob(f"{glob.escape(prefix)}*{SPOOL_SUFFIX}"):
        pid = old.name[len(prefix) : -len(SPOOL_SUFFIX)]
        if pid.isdigit() and int(pid) != os.getpid() and not atomic.pid_alive(int(pid)):
            old.unlink(missing_ok=True)


def image_groups(env: ManagerBasedEnv) -> list[str]:
    """The env's observation groups of camera images: terms kept apart, each ``(H, W, 3)`` (this package's
    ``cameras``; Isaac Lab's tasks name theirs ``rgb_camera``, ``image_obs`` ...)."""
    manager = env.observation_manager
    return [
        group
        for group, dims in manager.group_obs_term_dim.items()
        if dims and not manager.group_obs_concatenate[group] and all(len(dim) == 3 and dim[-1] == 3 for dim in dims)
    ]


def camera_images(env: ManagerBasedEnv, groups: Sequence[str] | None = None) -> dict:
    """The images of the last observation, ``{term: (num_envs, H, W, 3)}``, from ``groups`` (every image group
    when None)."""
    obs = env.obs_buf if isinstance(env.obs_buf, dict) else {}
    images: dict = {}
    for group in image_groups(env) if groups is None else groups:
        images.update(obs.get(group) or {})
    return images


class CameraFramesRecorder(RecorderTerm):
    """Records the camera observation groups (:func:`image_groups`, or the cfg's one) through a
    :class:`FrameSpool`.

    Each step (before the action, like Isaac Lab's observation recorders) the groups' images go to the
    spool; when an episode ends (``record_pre_reset``, before the RecorderManager exports) its frames are
    put into the episode's data as ``obs/<camera>`` :class:`SpooledFrames`, which the L2 dataset file
    handler writes. Without such a group (``presets=no_cameras``) it records nothing.
    """

    def __init__(self, cfg: CameraFramesRecorderCfg, env: ManagerBasedEnv):
        super().__init__(cfg, env)
        self._spool: FrameSpool | None = None
        self._env_ids = list(range(env.num_envs))
        self._groups: list[str] | None = None  # found on the first record: the observation manager comes later

    @property
    def output(self) -> Path:
        rec = self._env.cfg.recorders
        return Path(rec.dataset_export_dir_path) / f"{rec.dataset_filename}.hdf5"

    def record_pre_step(self):
        if self._groups is None:
            self._groups = image_groups(self._env) if self.cfg.group is None else [self.cfg.group]
        images = camera_images(self._env, self._groups)
        if images:
            with self._io_errors():
                if self._spool is None:
                    compression = GZIP_LEVEL if self._env.cfg.recorders.dataset_compression else None
                    self._spool = FrameSpool(self.output, compression)
                for name, frames in images.items():
                    self._spool.append(name, frames.cpu().numpy(), self._env_ids)
        return None, None

    def record_pre_reset(self, env_ids: Sequence[int] | None):
        if self._spool is not None:
            for env_id in self._env_ids if env_ids is None else env_ids:
                with self._io_errors():
                    frames = self._spool.take(env_id)
                if frames:
                    self._env.recorder_manager.get_episode(env_id).data.setdefault(OBS, {}).update(frames)
        return None, None

    @contextlib.contextmanager
    def _io_errors(self) -> Iterator[None]:
        """A spool write that fails on the disk (it fills up as frames stream in) ends the run in one line."""
        try:
            yield
        except Exception as exc:
            if (error := atomic.os_error(exc)) is None:
                raise
            raise RecordingIOError(error, self.output) from exc

    def reset(self, env_ids: Sequence[int] | None = None) -> None:
        if self._spool is not None:
            self._spool.release(self._env_ids if env_ids is None else env_ids)

    def close(self, file_path: str) -> None:
        if self._spool is not None:
            self._spool.close()
            self._spool = None


@configclass
class CameraFramesRecorderCfg(RecorderTermCfg):
    class_type: type = CameraFramesRecorder
    group: str | None = None
    """The observation group of (num_envs, H, W, 3) uint8 images to record; None: every such group."""
