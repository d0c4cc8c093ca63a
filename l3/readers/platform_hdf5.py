"""Reader for the robot-data platform's HDF5 export (``docs/platform-hdf5-input.md``).

Input: ``chunk_NNN.hdf5`` files, or the ``.tar.gz`` archive holding them (read without unpacking to
disk: one chunk member at a time is decompressed into memory, so memory is bounded by one chunk
file per process). Each chunk holds ``/data/episode_NNN`` groups with ``action``,
``observation.state``, ``observation.gripper`` (T, d) floats and ``observation.images.<camera>``
(T,) JPEG rows, episode attrs ``task``, ``task_zh``, ``score``, and a ``/meta`` group (field
names; AgiBot: robot type, URDF, camera calibration JSON). Episodes are ordered by chunk number,
then episode number, numerically. Frames are on the export's fixed 30 Hz grid.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import tarfile
import zlib
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

import h5py
import numpy as np

from l3.episode import Episode
from l3.errors import InputError
from l3.mapping import Camera, Mapping, Slice
from l3.readers.common import (
    SCAN_ERROR,
    EpisodeRef,
    FileScan,
    OneFileCache,
    Terms,
    attr_list,
    attr_text,
    check_name,
    check_read_through,
    open_hdf5,
    read_all_frames,
    read_float,
    reading,
)
from l3.readers.jpeg import JpegFrames, first_frame_shape

FORMAT = "platform"
FPS = 30
"""The export's fixed frame grid (its ``hz`` option only picks which message fills a frame)."""
DEFAULT_SOURCE = "platform"
DATA, META = "data", "meta"
ACTION, STATE, GRIPPER = "action", "observation.state", "observation.gripper"
IMAGE_PREFIX = "observation.images."
GRIPPER_NAMES = ("right_gripper", "left_gripper")
CHUNK_RE = re.compile(r"chunk_(\d+)\.(?:hdf5|h5)$")
EPISODE_RE = re.compile(r"episode_(\d+)$")


@dataclass(frozen=True, kw_only=True)
class PlatformRef(EpisodeRef):
    """One episode in a chunk file or in a chunk member of an archive (``file``: ``<archive>/<member>``)."""

    format = FORMAT
    episode: str
    task_zh: str | None
    score: float | None
    robot_type: str | None = None
    archive: str | None = None
    member: str | None = None
    offset: int = 0
    size: int = 0

    def below(self, min_score: float) -> bool:
        """Episodes without a score count as below any ``--min-score``."""
        return self.score is None or self.score < min_score


def is_archive(path: str) -> bool:
    if os.path.isdir(path):
        return False
    try:
        return tarfile.is_tarfile(path)
    except OSError:
        return False


def chunk_number(name: str) -> int | None:
    m = CHUNK_RE.search(os.path.basename(name))
    return int(m.group(1)) if m else None


# --------------------------------------------------------------------------- opening (file or archive member)


class _Archive:
    """Forward reads of a (gzip-compressed) tar archive at known member offsets."""

    def __init__(self, path: str):
        self.path = path
        with open(path, "rb") as f:
            gz = f.read(2) == b"\x1f\x8b"
        self.f = gzip.open(path, "rb") if gz else open(path, "rb")  # noqa: SIM115  (kept open, closed by close())

    def read(self, display: str, offset: int, size: int) -> bytes:
        try:
            self.f.seek(offset)  # gzip: forward seeks decompress and skip; members are read in order
            data = self.f.read(size)
        except (OSError, EOFError, zlib.error) as e:
            raise InputError(display, "/", f"cannot read from the archive, truncated or corrupt? ({e})") from None
        if len(data) != size:
            raise InputError(display, "/", f"archive member truncated ({len(data)} of {size} bytes)")
        return data

    def close(self) -> None:
        self.f.close()


# --------------------------------------------------------------------------- scan


@dataclass
class _Meta:
    robot_type: str | None
    names: dict[str, list[str]]
    calibration: dict[str, dict[str, str]]


def _read_meta(f: h5py.File, file: str) -> _Meta:
    """Field names, robot type and camera calibration from ``/meta`` (absent or partial is fine)."""
    meta = f.get(META)
    robot = None
    for holder, key in ((f.attrs, "meta.robot_type"), (f.attrs, "robot_type")):
        if key in holder:
            robot = attr_text(holder[key])
    names: dict[str, list[str]] = {}
    calib: dict[str, dict[str, str]] = {}
    if not isinstance(meta, h5py.Group):
        return _Meta(robot, names, calib)
    with reading(file, f"/{META}", "cannot read meta"):
        for key in ("meta.robot_type", "robot_type"):
            if key in meta.attrs:
                robot = attr_text(meta.attrs[key])
        for field in (ACTION, STATE, GRIPPER):
            found = None
            for key in (f"{field}.names", f"{field}/names", f"{field}_names", field):
                if found is None and key in meta.attrs:
                    found = attr_list(meta.attrs[key])
            sub = meta.get(field)
            if found is None and isinstance(sub, h5py.Group) and "names" in sub.attrs:
                found = attr_list(sub.attrs["names"])
            if found is None and isinstance(sub, h5py.Group) and isinstance(sub.get("names"), h5py.Dataset):
                found = attr_list(sub["names"][()])
            if found:
                names[field] = found
        cams = meta.get("camera")
        if isinstance(cams, h5py.Group):
            for cam, g in cams.items():
                if not isinstance(g, h5py.Group):
                    continue
                calib[cam] = {
                    k: attr_text(g[k][()]) for k in ("intrinsic", "extrinsic") if isinstance(g.get(k), h5py.Dataset)
                }
    return _Meta(robot, names, calib)


def _scan_h5(f: h5py.File, file: str, scan: FileScan, source: str | None, **where) -> None:
    data = f.get(DATA)
    if not isinstance(data, h5py.Group):
        raise InputError(file, f"/{DATA}", "missing group (not a platform export chunk)")
    meta = _read_meta(f, file)
    src = source or meta.robot_type or DEFAULT_SOURCE
    scan.source = src
    numbered = []
    for name in data:
        m = EPISODE_RE.match(name)
        if m:
            numbered.append((int(m.group(1)), name))
        else:
            scan.errors.append(InputError(file, f"/{DATA}/{name}", "unexpected entry (expected episode_<NNN>)"))
    if not numbered:
        raise InputError(file, f"/{DATA}", "no episode_<NNN> groups (empty export chunk)")
    for _, name in sorted(numbered):
        where_ = f"/{DATA}/{name}"
        g = data[name]
        try:
            if not isinstance(g, h5py.Group):
                raise InputError(file, where_, "is not a group")
            for k in g:
                if k.startswith(IMAGE_PREFIX):
                    check_name(file, f"{where_}/{k}", k[len(IMAGE_PREFIX) :])
            ds = g.get(ACTION)
            if not isinstance(ds, h5py.Dataset) or not ds.shape:
                raise InputError(file, f"{where_}/{ACTION}", "missing dataset (its rows define T)")
            T = int(ds.shape[0])
            if T == 0:
                raise InputError(file, f"{where_}/{ACTION}", "0 rows (empty episode)")
            try:
                task = attr_text(g.attrs["task"]) if "task" in g.attrs else None
                task_zh = attr_text(g.attrs["task_zh"]) if "task_zh" in g.attrs else None
            except UnicodeDecodeError as e:
                raise InputError(file, where_, f"task attribute is not UTF-8 ({e})") from None
            score = None
            if "score" in g.attrs:
                try:
                    score = float(np.asarray(g.attrs["score"]).reshape(-1)[0])
                except (ValueError, TypeError, IndexError):
                    raise InputError(file, where_, f"score attribute is not a number: {g.attrs['score']!r}") from None
        except InputError as e:
            scan.errors.append(e)
            continue
        scan.refs.append(
            PlatformRef(
                file=file,
                group=where_,
                episode=name,
                length=T,
                source=src,
                rate=FPS,
                task=task.strip() or None if task is not None else None,
                task_zh=task_zh,
                score=score,
                robot_type=meta.robot_type,
                **where,
            )
        )


def _scan_archive(archive: str, scan: FileScan, source: str | None) -> FileScan:
    members = []
    try:
        with tarfile.open(archive, "r|*") as tf:
            for m in tf:
                n = chunk_number(m.name)
                if not m.isfile() or n is None:
                    continue
                display = f"{archive}/{m.name}"
                data = tf.extractfile(m).read()
                part = FileScan(display, scan.source)
                check_read_through(display, data)
                with (
                    open_hdf5(display, lambda data=data: h5py.File(io.BytesIO(data), "r")) as f,
                    reading(display, "/", "cannot read HDF5 metadata"),
                ):
                    _scan_h5(
                        f, display, part, source, archive=archive, member=m.name, offset=m.offset_data, size=m.size
                    )
                members.append((n, part))
                del data
    except (tarfile.TarError, EOFError, zlib.error) as e:
        raise InputError(archive, "/", f"cannot read the archive, truncated or corrupt? ({e})") from None
    except OSError as e:
        raise InputError(archive, "/", f"cannot read the archive, truncated or corrupt? ({e})") from None
    if not members:
        raise InputError(archive, "/", "archive holds no chunk_NNN.hdf5 files")
    for _, part in sorted(members, key=lambda p: p[0]):
        scan.refs += part.refs
        scan.errors += part.errors
        scan.source = part.source
    return scan


# --------------------------------------------------------------------------- read


def _camera_ds(file: str, path: str, ds, T: int) -> h5py.Dataset:
    if not isinstance(ds, h5py.Dataset):
        raise InputError(file, path, "missing mapped camera" if ds is None else "is not a dataset")
    jpeg_rows = ds.ndim == 1 and (ds.dtype.kind in "OSV" or h5py.check_vlen_dtype(ds.dtype) is not None)
    if not (jpeg_rows or (ds.ndim == 2 and ds.dtype == np.uint8)):
        raise InputError(file, path, f"expected one JPEG per row ((T,) vlen uint8 or bytes), got {ds.dtype} {ds.shape}")
    if ds.shape[0] != T:
        raise InputError(file, path, f"{ds.shape[0]} frames but the episode has {T} rows ({ACTION})")
    return ds


class PlatformReader:
    """Platform export chunks and archives (:class:`l3.readers.common.Reader`)."""

    format = FORMAT

    def __init__(self) -> None:
        self._files = OneFileCache()
        self._archives: dict[str, _Archive] = {}

    def _open_ref(self, ref: PlatformRef) -> h5py.File:
        if ref.archive is None:
            return open_hdf5(ref.file)
        arch = self._archives.get(ref.archive)
        if arch is None:
            self.close()
            arch = self._archives[ref.archive] = _Archive(ref.archive)
        data = arch.read(ref.file, ref.offset, ref.size)
        return open_hdf5(ref.file, lambda: h5py.File(io.BytesIO(data), "r"))

    def _cached(self, ref: PlatformRef) -> AbstractContextManager[h5py.File]:
        return self._files.using((ref.archive, ref.file), lambda: self._open_ref(ref))

    def detect(self, f: h5py.File) -> bool:
        """``/data`` holds ``episode_<N>`` groups."""
        data = f.get(DATA)
        return isinstance(data, h5py.Group) and any(EPISODE_RE.match(k) for k in data)

    def source_from_name(self, file: str) -> None:
        return None

    def scan(self, file: str, source: str | None, f: h5py.File | None = None) -> FileScan:
        """The episodes of a chunk file or of an export archive (attributes only), in order."""
        scan = FileScan(file, source or DEFAULT_SOURCE)
        if f is None and is_archive(file):
            return _scan_archive(file, scan, source)
        if f is None:
            with open_hdf5(file) as f:
                return self.scan(file, source, f)
        with reading(file, "/", SCAN_ERROR):
            _scan_h5(f, file, scan, source)
        return scan

    def describe(self, ref: PlatformRef) -> tuple[Terms, dict[str, list[str]]]:
        """Cameras as (T, H, W, 3) uint8 (frame 0 decoded); names from ``/meta`` (gripper: [right, left] by
        convention)."""
        out: Terms = {}
        with self._cached(ref) as f:
            g = f[ref.group]
            for name, ds in g.items():
                if not isinstance(ds, h5py.Dataset):
                    continue
                if name.startswith(IMAGE_PREFIX):
                    path = f"{ref.group}/{name}"
                    cam = name[len(IMAGE_PREFIX) :]
                    _camera_ds(ref.file, path, ds, ds.shape[0] if ds.shape else 0)
                    h, w = first_frame_shape(ref.file, path, ds, lambda i, c=cam: f"camera {c}, frame {i}")
                    out[name] = ((ds.shape[0], h, w, 3), "uint8")
                else:
                    out[name] = (tuple(ds.shape), ds.dtype.name)
            names = _read_meta(f, ref.file).names
            grip = g.get(GRIPPER)
            if GRIPPER not in names and isinstance(grip, h5py.Dataset) and grip.shape[1:] == (2,):
                names[GRIPPER] = list(GRIPPER_NAMES)
        return out, names

    def infer_mapping(self, ref: PlatformRef, terms: Terms) -> Mapping:
        """state.joints (+ state.gripper), action.joints, every camera as video.<cam>."""
        state = [Slice("joints", STATE)] if STATE in terms else []
        if GRIPPER in terms:
            state.append(Slice("gripper", GRIPPER))
        if not state:
            raise InputError(ref.file, f"{ref.group}/{STATE}", "missing dataset (cannot infer a mapping)")
        cams = tuple(Camera(n[len(IMAGE_PREFIX) :], n) for n in sorted(terms) if n.startswith(IMAGE_PREFIX))
        return Mapping(
            robot_type=ref.robot_type or DEFAULT_SOURCE,
            fps=FPS,
            task="unspecified task",
            state=tuple(state),
            action=(Slice("joints", ACTION),),
            cameras=cams,
        )

    def notices(self, refs: Sequence[PlatformRef], mapping: Mapping) -> list[str]:
        return []

    def read(
        self,
        ref: PlatformRef,
        mapping: Mapping,
        dims: dict[str, tuple[int, ...]],
        *,
        task: str | None = None,
        check: bool = True,
        check_frames: bool = False,
    ) -> Episode:
        """Read and check one episode (see :meth:`l3.readers.common.Reader.read`)."""
        file, T = ref.file, ref.length
        with self._cached(ref) as f, reading(file, ref.group):
            if ref.group not in f:
                raise InputError(file, ref.group, "missing episode group")
            g = f[ref.group]
            if check:  # every dataset is frame-aligned: T rows
                for name, ds in g.items():
                    if isinstance(ds, h5py.Dataset) and (ds.shape[0] if ds.shape else 0) != T:
                        what = "frames" if name.startswith(IMAGE_PREFIX) else "rows"
                        raise InputError(
                            file,
                            f"{ref.group}/{name}",
                            f"{ds.shape[0] if ds.shape else 0} {what} but the episode has {T} rows ({ACTION})",
                        )
            arrays: dict[str, np.ndarray] = {}
            for s in (*mapping.state, *mapping.action):
                if s.source not in arrays:
                    arrays[s.source] = read_float(
                        file,
                        f"{ref.group}/{s.source}",
                        g.get(s.source),
                        T,
                        dims[s.source],
                        check,
                        f"the episode has {T} ({ACTION})",
                    )
            cameras: dict[str, JpegFrames] = {}
            for c in mapping.cameras:
                path = f"{ref.group}/{c.source}"
                _camera_ds(file, path, g.get(c.source), T)
                h, w = dims[c.source][:2]
                name = c.source[len(IMAGE_PREFIX) :] if c.source.startswith(IMAGE_PREFIX) else c.source
                cameras[c.key] = JpegFrames(
                    lambda: self._cached(ref), file, path, (T, h, w, 3), lambda i, n=name: f"camera {n}, frame {i}"
                )
            calib = _read_meta(f, file).calibration
        if check_frames:
            read_all_frames(cameras)
        fields = {
            "file": ref.archive or ref.file,
            "chunk": os.path.basename(ref.member or ref.file),
            "episode": ref.episode,
            "task_zh": ref.task_zh,
            "score": ref.score,
        }
        used = {c.source[len(IMAGE_PREFIX) :] for c in mapping.cameras}
        if any(k in used for k in calib):
            fields["camera_calibration"] = {k: v for k, v in calib.items() if k in used}
        fields["format"] = FORMAT
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
            fields=fields,
        )

    def close(self) -> None:
        """Close the chunk file (and archive) kept open by :meth:`read`."""
        self._files.close()
        for a in self._archives.values():
            a.close()
        self._archives.clear()


READER = PlatformReader()
