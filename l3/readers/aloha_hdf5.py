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
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from functools import partial

import h5py
import numpy as np

from l3.episode import Episode
from l3.errors import InputError
from l3.mapping import Camera, Mapping, Slice
from l3.readers.common import FileScan, H5Frames, OneFileCache, attr_text, check_name, open_hdf5, read_float
from l3.readers.jpeg import JpegFrames, first_frame_shape

FORMAT = "aloha"
DEFAULT_FPS = 50
OBS, IMAGES, ACTION, COMPRESS_LEN = "observations", "observations/images", "action", "compress_len"
BIMANUAL_DOF = 14
_EOI = b"\xff\xd9"


@dataclass(frozen=True)
class AlohaRef:
    """A picklable pointer to one ALOHA episode file."""

    file: str
    length: int
    source: str
    compressed: bool
    task: str | None = None
    format: str = FORMAT
    success: bool = True
    legacy: bool = False
    env_name: str | None = None
    group: str = ""


def is_aloha(f: h5py.File) -> bool:
    return isinstance(f.get(OBS), h5py.Group) and isinstance(f.get(ACTION), h5py.Dataset)


_FILES = OneFileCache()


def _cached(file: str) -> AbstractContextManager[h5py.File]:
    return _FILES.using(file, lambda: open_hdf5(file))


def close_cached() -> None:
    _FILES.close()


def scan_file(file: str, source: str | None = None) -> FileScan:
    """The file's single episode (T = rows of /action); source tag ``aloha`` or ``aloha_sim``."""
    with open_hdf5(file) as f:
        try:
            if not is_aloha(f):
                raise InputError(file, "/", "not an ALOHA episode (needs /observations and /action)")
            sim = bool(np.asarray(f.attrs.get("sim", False)).reshape(-1)[0]) if "sim" in f.attrs else False
            scan = FileScan(file, source or ("aloha_sim" if sim else "aloha"))
            images = f.get(IMAGES)
            if isinstance(images, h5py.Group):
                for cam in images.keys():
                    check_name(file, f"/{IMAGES}/{cam}", cam)
            ds = f[ACTION]
            T = int(ds.shape[0]) if ds.shape else 0
            if T == 0:
                raise InputError(file, f"/{ACTION}", "0 rows (empty episode)")
            compressed = "compress" in f.attrs and bool(np.asarray(f.attrs["compress"]).reshape(-1)[0])
            task = attr_text(f.attrs["task"]) if "task" in f.attrs else None
            scan.refs.append(AlohaRef(file=file, length=T, source=scan.source, compressed=compressed,
                                      task=task or None))
        except InputError:
            raise
        except (OSError, RuntimeError, KeyError, ValueError, TypeError, UnicodeDecodeError) as e:
            raise InputError(file, "/", f"cannot read HDF5 metadata, truncated or corrupt? ({e})") from None
    return scan


def _is_jpeg(ds: h5py.Dataset) -> bool:
    return ds.ndim == 2 and ds.dtype == np.uint8


def _trim(row: np.ndarray) -> np.ndarray:
    b = row.tobytes()
    end = b.rfind(_EOI)
    return row[:end + 2] if end >= 0 else row


class _Trimmed:
    """Wraps a padded-JPEG dataset so rows read back without their zero padding."""

    def __init__(self, ds: h5py.Dataset):
        self.ds, self.shape = ds, ds.shape

    def __getitem__(self, sl):
        if isinstance(sl, int | np.integer):
            return _trim(self.ds[sl])
        return [_trim(r) for r in self.ds[sl]]


@contextmanager
def _trimmed_file(file: str, path: str) -> Iterator[dict]:
    with _cached(file) as f:
        yield {path: _Trimmed(f[path])}


def describe(ref: AlohaRef) -> dict[str, tuple[tuple[int, ...], str]]:
    """Shape and dtype of every dataset; JPEG cameras as (T, H, W, 3) uint8 (frame 0 decoded)."""
    out: dict[str, tuple[tuple[int, ...], str]] = {}
    with _cached(ref.file) as f:
        def visit(name: str, obj) -> None:
            if not isinstance(obj, h5py.Dataset):
                return
            if name.startswith(IMAGES + "/") and _is_jpeg(obj):
                cam = name[len(IMAGES) + 1:]
                h, w = first_frame_shape(ref.file, f"/{name}", _Trimmed(obj), lambda i: f"camera {cam}, frame {i}")
                out[name] = ((obj.shape[0], h, w, 3), "uint8")
            else:
                out[name] = (tuple(obj.shape), obj.dtype.name)

        f.visititems(visit)
    return out


def infer_mapping(terms: dict[str, tuple[tuple[int, ...], str]], ref: AlohaRef) -> Mapping:
    """14-dof bimanual split (left arm 6 + gripper, right arm 6 + gripper) or whole qpos / action."""
    qpos, act = f"{OBS}/qpos", ACTION
    if qpos not in terms:
        raise InputError(ref.file, f"/{qpos}", "missing dataset (cannot infer a mapping)")

    def split(src: str) -> tuple[Slice, ...]:
        if terms[src][0][1:] == (BIMANUAL_DOF,):
            return (Slice("left_arm", src, 0, 6), Slice("left_gripper", src, 6, 7),
                    Slice("right_arm", src, 7, 13), Slice("right_gripper", src, 13, 14))
        return (Slice(src.rsplit("/", 1)[-1], src),)

    cams = tuple(Camera(n[len(IMAGES) + 1:], n) for n in sorted(terms) if n.startswith(IMAGES + "/"))
    return Mapping(robot_type="aloha", fps=DEFAULT_FPS, task=ref.task or "unspecified task",
                   state=split(qpos), action=split(act), cameras=cams)


def read_episode(ref: AlohaRef, mapping: Mapping, dims: dict[str, tuple[int, ...]],
                 task: str | None = None, check: bool = True, check_frames: bool = False) -> Episode:
    """Read and check one episode (see :func:`l3.readers.l2_hdf5.read_episode` for the arguments)."""
    file, T = ref.file, ref.length
    with _cached(file) as f:
        try:
            if check:
                def visit(name: str, obj) -> None:
                    if isinstance(obj, h5py.Dataset) and name != COMPRESS_LEN:
                        n = obj.shape[0] if obj.shape else 0
                        if n != T:
                            what = "frames" if name.startswith(IMAGES + "/") else "rows"
                            raise InputError(file, f"/{name}", f"{n} {what} but the episode has {T} rows "
                                             f"(/{ACTION})")
                f.visititems(visit)
                cl = f.get(COMPRESS_LEN)
                if isinstance(cl, h5py.Dataset) and (cl.ndim != 2 or cl.shape[1] != T):
                    raise InputError(file, f"/{COMPRESS_LEN}", f"shape {cl.shape}, expected (cameras, {T})")
            arrays: dict[str, np.ndarray] = {}
            for s in (*mapping.state, *mapping.action):
                if s.source not in arrays:
                    arrays[s.source] = read_float(file, f"/{s.source}", f.get(s.source), T, dims[s.source],
                                                  check, f"/{ACTION}")
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
                    cameras[c.key] = JpegFrames(lambda p=path: _trimmed_file(file, p), file, path, (T, h, w, 3), what)
                elif ds.dtype == np.uint8 and ds.ndim == 4 and ds.shape[1:] == (h, w, 3):
                    cameras[c.key] = H5Frames(partial(_cached, file), file, path, (T, h, w, 3))
                else:
                    raise InputError(file, path, f"camera must be (T, H, W, 3) uint8 frames of the first episode's "
                                     f"size {h}x{w}, or (T, L) uint8 padded JPEG; got {ds.dtype} {ds.shape}")
        except InputError:
            raise
        except (OSError, RuntimeError, KeyError, ValueError, TypeError) as e:
            raise InputError(file, "/", f"cannot read, truncated or corrupt? ({e})") from None
    if check_frames:
        for cam in cameras.values():
            for _ in cam.chunks():
                pass
    take = lambda s: np.ascontiguousarray(arrays[s.source][:, s.start:s.end])  # noqa: E731
    return Episode(length=T, state={s.key: take(s) for s in mapping.state},
                   action={s.key: take(s) for s in mapping.action}, cameras=cameras,
                   task=task if task is not None else (ref.task or mapping.task), source=ref.source,
                   success=True, fields={"file": ref.file, "episode": os.path.basename(ref.file)})
