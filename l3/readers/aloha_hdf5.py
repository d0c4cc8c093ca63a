"""Reader for ALOHA / ACT-style HDF5 episodes (one episode per file).

As written by the ACT / Mobile ALOHA ``record_episodes.py`` and Agilex cobot_magic collection code::

    /observations/qpos (T, 14)   /observations/qvel (T, 14)   /observations/effort (T, 14)   (floats)
    /observations/images/<cam>   (T, H, W, 3) uint8 raw frames, or (T, L) uint8 JPEG padded with
                                 zeros to the longest frame (root attr compress=True, /compress_len)
    /action (T, 14)              optional /base_action (T, 2)         root attrs sim, compress

Padded JPEG rows are cut after their last end-of-image marker; ``/compress_len`` is only
checked for its frame count, because its rows follow the recording's camera list, which the file
does not store. There is no frame rate in the file: fps comes from the mapping config (ALOHA
records at 50 Hz).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

import h5py
import numpy as np

from l3.episode import Episode
from l3.errors import InputError
from l3.mapping import Camera, Mapping, Slice
from l3.readers.common import (
    SCAN_ERROR,
    EpisodeRef,
    FileScan,
    H5Frames,
    OneFileCache,
    Terms,
    attr_text,
    check_name,
    open_hdf5,
    read_all_frames,
    read_float,
    reading,
)
from l3.readers.jpeg import JpegFrames, first_frame_shape

FORMAT = "aloha"
DEFAULT_FPS = 50
OBS, IMAGES, ACTION, COMPRESS_LEN = "observations", "observations/images", "action", "compress_len"
BIMANUAL_DOF = 14
_EOI = b"\xff\xd9"


@dataclass(frozen=True, kw_only=True)
class AlohaRef(EpisodeRef):
    """One ALOHA episode file (its group is the file's root)."""

    format = FORMAT


def _is_jpeg(ds: h5py.Dataset) -> bool:
    return ds.ndim == 2 and ds.dtype == np.uint8


def _trim(row: np.ndarray) -> np.ndarray:
    b = row.tobytes()
    end = b.rfind(_EOI)
    return row[: end + 2] if end >= 0 else row


class _Trimmed:
    """Wraps a padded-JPEG dataset so rows read back without their zero padding."""

    def __init__(self, ds: h5py.Dataset):
        self.ds, self.shape = ds, ds.shape

    def __getitem__(self, sl):
        if isinstance(sl, int | np.integer):
            return _trim(self.ds[sl])
        return [_trim(r) for r in self.ds[sl]]


class AlohaReader:
    """ALOHA / ACT episode files (:class:`l3.readers.common.Reader`)."""

    format = FORMAT

    def __init__(self) -> None:
        self._files = OneFileCache()
        self._cached = self._files.hdf5

    @contextmanager
    def _trimmed(self, file: str, path: str) -> Iterator[dict]:
        with self._cached(file) as f:
            yield {path: _Trimmed(f[path])}

    def detect(self, f: h5py.File) -> bool:
        """``/observations`` group and ``/action`` dataset."""
        return isinstance(f.get(OBS), h5py.Group) and isinstance(f.get(ACTION), h5py.Dataset)

    def source_from_name(self, file: str) -> None:
        return None

    def scan(self, file: str, source: str | None, f: h5py.File | None = None) -> FileScan:
        """The file's single episode (T = rows of /action); source tag ``aloha`` or ``aloha_sim``."""
        if f is None:
            with open_hdf5(file) as f:
                return self.scan(file, source, f)
        with reading(file, "/", SCAN_ERROR):
            if not self.detect(f):
                raise InputError(file, "/", "not an ALOHA episode (needs /observations and /action)")
            sim = bool(np.asarray(f.attrs.get("sim", False)).reshape(-1)[0]) if "sim" in f.attrs else False
            scan = FileScan(file, source or ("aloha_sim" if sim else "aloha"))
            images = f.get(IMAGES)
            if isinstance(images, h5py.Group):
                for cam in images:
                    check_name(file, f"/{IMAGES}/{cam}", cam)
            ds = f[ACTION]
            T = int(ds.shape[0]) if ds.shape else 0
            if T == 0:
                raise InputError(file, f"/{ACTION}", "0 rows (empty episode)")
            task = attr_text(f.attrs["task"]) if "task" in f.attrs else None
            scan.refs.append(AlohaRef(file=file, group="", length=T, source=scan.source, task=task or None))
        return scan

    def describe(self, ref: AlohaRef) -> tuple[Terms, dict[str, list[str]]]:
        """JPEG cameras as (T, H, W, 3) uint8 (frame 0 decoded); the file names no columns."""
        out: Terms = {}
        with self._cached(ref.file) as f:

            def visit(name: str, obj) -> None:
                if not isinstance(obj, h5py.Dataset):
                    return
                if name.startswith(IMAGES + "/") and _is_jpeg(obj):
                    cam = name[len(IMAGES) + 1 :]
                    h, w = first_frame_shape(ref.file, f"/{name}", _Trimmed(obj), lambda i: f"camera {cam}, frame {i}")
                    out[name] = ((obj.shape[0], h, w, 3), "uint8")
                else:
                    out[name] = (tuple(obj.shape), obj.dtype.name)

            f.visititems(visit)
        return out, {}

    def infer_mapping(self, ref: AlohaRef, terms: Terms) -> Mapping:
        """14-dof bimanual split (left arm 6 + gripper, right arm 6 + gripper) or whole qpos / action."""
        qpos, act = f"{OBS}/qpos", ACTION
        if qpos not in terms:
            raise InputError(ref.file, f"/{qpos}", "missing dataset (cannot infer a mapping)")

        def split(src: str) -> tuple[Slice, ...]:
            if terms[src][0][1:] == (BIMANUAL_DOF,):
                return (
                    Slice("left_arm", src, 0, 6),
                    Slice("left_gripper", src, 6, 7),
                    Slice("right_arm", src, 7, 13),
                    Slice("right_gripper", src, 13, 14),
                )
            return (Slice(src.rsplit("/", 1)[-1], src),)

        cams = tuple(Camera(n[len(IMAGES) + 1 :], n) for n in sorted(terms) if n.startswith(IMAGES + "/"))
        return Mapping(
            robot_type="aloha",
            fps=DEFAULT_FPS,
            task=ref.task or "unspecified task",
            state=split(qpos),
            action=split(act),
            cameras=cams,
        )

    def notices(self, refs: Sequence[AlohaRef], mapping: Mapping) -> list[str]:
        return []

    def read(
        self,
        ref: AlohaRef,
        mapping: Mapping,
        dims: dict[str, tuple[int, ...]],
        *,
        task: str | None = None,
        check: bool = True,
        check_frames: bool = False,
    ) -> Episode:
        """Read and check one episode (see :meth:`l3.readers.common.Reader.read`)."""
        file, T = ref.file, ref.length
        with self._cached(file) as f, reading(file, "/"):
            if check:

                def visit(name: str, obj) -> None:
                    if isinstance(obj, h5py.Dataset) and name != COMPRESS_LEN:
                        n = obj.shape[0] if obj.shape else 0
                        if n != T:
                            what = "frames" if name.startswith(IMAGES + "/") else "rows"
                            raise InputError(file, f"/{name}", f"{n} {what} but the episode has {T} rows (/{ACTION})")

                f.visititems(visit)
                cl = f.get(COMPRESS_LEN)
                if isinstance(cl, h5py.Dataset) and (cl.ndim != 2 or cl.shape[1] != T):
                    raise InputError(file, f"/{COMPRESS_LEN}", f"shape {cl.shape}, expected (cameras, {T})")
            arrays: dict[str, np.ndarray] = {}
            for s in (*mapping.state, *mapping.action):
                if s.source not in arrays:
                    arrays[s.source] = read_float(
                        file,
                        f"/{s.source}",
                        f.get(s.source),
                        T,
                        dims[s.source],
                        check,
                        f"the episode has {T} (/{ACTION})",
                    )
            cameras: dict = {}
            for c in mapping.cameras:
                path = f"/{c.source}"
                ds = f.get(c.source)
                if not isinstance(ds, h5py.Dataset):
                    raise InputError(file, path, "missing mapped camera" if ds is None else "is not a dataset")
                if ds.shape[0] != T:
                    raise InputError(file, path, f"{ds.shape[0]} frames but the episode has {T} rows (/{ACTION})")
                h, w = dims[c.source][:2]
                name = c.source.rsplit("/", 1)[-1]
                what = lambda i, n=name: f"camera {n}, frame {i}"  # noqa: E731
                if _is_jpeg(ds):
                    cameras[c.key] = JpegFrames(lambda p=path: self._trimmed(file, p), file, path, (T, h, w, 3), what)
                elif ds.dtype == np.uint8 and ds.ndim == 4 and ds.shape[1:] == (h, w, 3):
                    cameras[c.key] = H5Frames(partial(self._cached, file), file, path, (T, h, w, 3))
                else:
                    raise InputError(
                        file,
                        path,
                        f"camera must be (T, H, W, 3) uint8 frames of the first episode's "
                        f"size {h}x{w}, or (T, L) uint8 padded JPEG; got {ds.dtype} {ds.shape}",
                    )
        if check_frames:
            read_all_frames(cameras)
        # the columns as stored (no quaternion reorder), in the key's norm_mode
        take = lambda s: s.take(arrays[s.source], s.quaternion_order)  # noqa: E731
        return Episode(
            length=T,
            state={s.key: take(s) for s in mapping.state},
            action={s.key: take(s) for s in mapping.action},
            cameras=cameras,
            task=task if task is not None else (ref.task or mapping.task),
            source=ref.source,
            success=True,
            fields={"file": ref.file, "episode": os.path.basename(ref.file), "format": FORMAT},
        )

    def close(self) -> None:
        self._files.close()


READER = AlohaReader()
