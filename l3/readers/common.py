"""What the readers (L2 demos, platform export, ALOHA) share: the :class:`Reader` protocol, the
:class:`EpisodeRef` every reference extends, opening and caching files, error wrapping, attributes,
float checks, raw camera frames."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

import h5py
import numpy as np

from l2.format.hdf5_guard import read_through, read_through_part
from l2.format.l2file import READ_ERRORS
from l3.episode import Episode
from l3.errors import InputError
from l3.mapping import Mapping, safe_name

FRAME_CHUNK = 32
"""Camera frames (raw or JPEG rows) read from HDF5 at a time."""

Terms = dict[str, tuple[tuple[int, ...], str]]
"""Shape and numpy dtype name of every dataset of an episode, by path relative to its group."""


@dataclass(frozen=True, kw_only=True)
class EpisodeRef:
    """A picklable pointer to one episode plus what the scan learnt about it (no arrays).

    Each reader extends it with what it needs to find and describe its episodes.
    """

    format: ClassVar[str]
    file: str
    """The input named in messages (for an archive member: ``<archive>/<member>``)."""
    group: str
    """HDF5 path of the episode's group (``""``: the file's root)."""
    length: int
    source: str
    success: bool = True
    task: str | None = None
    """The episode's own task text (None: the mapping's)."""
    rate: float | None = None
    """The rate (Hz) the input says it was recorded at; None: it does not say."""

    def below(self, min_score: float) -> bool:
        """Whether ``--min-score`` drops this episode (formats without a score keep every episode)."""
        return False


@dataclass
class FileScan:
    """Result of scanning one input: its episodes (in order), per-episode errors, its source tag."""

    file: str
    source: str
    refs: list[EpisodeRef] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)


class Reader(Protocol):
    """One input format. Scanning reads attributes only (filters and numbering need no arrays);
    :meth:`read` runs in worker processes and returns an episode whose frames are read lazily."""

    format: str

    def detect(self, f: h5py.File) -> bool:
        """Whether the open file is in this format."""

    def source_from_name(self, file: str) -> str | None:
        """The source tag the file's name gives (known before scanning); None: the scan tells."""

    def scan(self, file: str, source: str | None, f: h5py.File | None = None) -> FileScan:
        """The episodes of ``file`` in order (``f``: the file already open); ``source`` None: the
        reader's own tag. File-level problems raise InputError; per-episode ones are collected in
        ``FileScan.errors`` (so that ``--skip-bad`` can skip just those episodes)."""

    def describe(self, ref: EpisodeRef) -> tuple[Terms, dict[str, list[str]]]:
        """The episode's datasets (cameras as (T, H, W, 3) uint8) and the per-column names the input
        gives for them (e.g. from a platform export's ``/meta``)."""

    def infer_mapping(self, ref: EpisodeRef, terms: Terms) -> Mapping:
        """The default mapping for inputs like this episode (no config given)."""

    def notices(self, refs: Sequence[EpisodeRef], mapping: Mapping) -> list[str]:
        """What the user should know about these episodes under ``mapping``."""

    def read(
        self,
        ref: EpisodeRef,
        mapping: Mapping,
        dims: dict[str, tuple[int, ...]],
        *,
        task: str | None = None,
        check: bool = True,
        check_frames: bool = False,
    ) -> Episode:
        """Read and check one episode; ``dims`` gives the expected per-row shape of every mapped source.

        Raises InputError naming the file and HDF5 path of the first problem. ``check=False``
        skips the per-row checks; with ``check_frames`` every camera frame is read once (to prove
        it readable) before returning, else an unreadable frame raises while the frames are consumed."""

    def close(self) -> None:
        """Close the files kept open by :meth:`read` (call when a conversion ends)."""


SCAN_ERROR = "cannot read HDF5 metadata, truncated or corrupt?"


def reading(file: str, path: str, what: str = "cannot read, truncated or corrupt?") -> _Reading:
    """``with reading(file, path, what):`` turns what h5py or numpy raise on unreadable content
    (:data:`l2.format.validate.READ_ERRORS`) into one InputError ``FILE:PATH: what (error)``; InputError
    passes through."""
    return _Reading(file, path, what)


class _Reading:
    """The context manager of :func:`reading` (a class: cheaper per episode than a generator-based one)."""

    __slots__ = ("file", "path", "what")

    def __init__(self, file: str, path: str, what: str):
        self.file, self.path, self.what = file, path, what

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None and issubclass(exc_type, READ_ERRORS):
            raise InputError(self.file, self.path, f"{self.what} ({exc})") from None


def check_name(file: str, path: str, name: str, what: str = "camera name") -> str:
    """Return ``name`` if it is safe as a path component of the output, else raise InputError."""
    if not safe_name(name) or len(name) > 100:
        raise InputError(
            file,
            path,
            f"unsafe {what} {name!r}: it becomes part of the output paths; "
            "allowed: letters, digits, '_', '-', '.', '+' (no '..', no leading '.' or '-')",
        )
    return name


def read_all_frames(cameras: dict) -> None:
    """Read every frame of every camera once (``check_frames``: an unreadable frame raises now)."""
    for cam in cameras.values():
        for _ in cam.chunks():
            pass


def attr_text(v, errors: str = "strict") -> str:
    """An HDF5 string attribute as text: h5py vlen str, bytes / numpy bytes (fixed length), 0-d arrays.

    Bytes are decoded as UTF-8 with ``errors`` (``"strict"``: invalid UTF-8 raises UnicodeDecodeError).
    h5py hands over invalid UTF-8 in a variable-length string as lone surrogates; they get the same
    treatment (else they would fail later, when the text is written to the output's JSON lines).
    """
    if isinstance(v, np.ndarray) and v.shape == ():
        v = v[()]
    if isinstance(v, bytes | np.bytes_):
        return bytes(v).decode("utf-8", errors)
    text = str(v)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", errors)
    return text


def attr_list(v) -> list[str] | None:
    """A list of names from an attribute: string array, JSON list, JSON {"names": [...]} / {"k": [...]}."""
    if v is None:
        return None
    if isinstance(v, np.ndarray) and v.ndim >= 1:
        return [attr_text(x) for x in v.reshape(-1)]
    if isinstance(v, list | tuple):
        return [attr_text(x) for x in v]
    text = attr_text(v)
    try:
        doc = json.loads(text)
    except ValueError:
        return [s.strip() for s in text.split(",") if s.strip()] or None
    return names_from_json(doc)


def names_from_json(doc) -> list[str] | None:
    if isinstance(doc, list):
        flat = [x for sub in doc for x in (sub if isinstance(sub, list) else [sub])]
        return [str(x) for x in flat] if flat else None
    if isinstance(doc, dict):
        if "names" in doc:
            return names_from_json(doc["names"])
        lists = [v for v in doc.values() if isinstance(v, list)]
        if len(lists) == 1:  # LeRobot style {"motors": [...]}
            return names_from_json(lists[0])
    return None


def check_finite(file: str, path: str, a: np.ndarray) -> None:
    if not np.isfinite(a).all():
        bad = np.argwhere(~np.isfinite(a))[0]
        what = "NaN" if np.isnan(a[tuple(bad)]) else "infinite value"
        raise InputError(file, path, f"{what} at row {bad[0]}" + (f", column {bad[1]}" if len(bad) > 1 else ""))


def read_float(
    file: str,
    path: str,
    ds,
    T: int,
    row_shape: tuple[int, ...] | None,
    check: bool,
    rows: str,
    missing: str = "missing mapped dataset",
) -> np.ndarray:
    """A mapped (T, d) float dataset (h5py, or already read) as float32 (float64 inputs are cast), checked
    against ``row_shape``; ``rows`` says where T comes from (``"num_samples is 12"``)."""
    if not isinstance(ds, h5py.Dataset | np.ndarray):
        raise InputError(file, path, missing if ds is None else "is not a dataset")
    if ds.dtype.kind != "f" or ds.ndim != 2:
        raise InputError(file, path, f"expected a (T, d) float array, got {ds.dtype.name} {ds.shape}")
    if ds.shape[0] != T:
        raise InputError(file, path, f"{ds.shape[0]} rows but {rows}")
    if row_shape is not None and tuple(ds.shape[1:]) != tuple(row_shape):
        raise InputError(file, path, f"shape {ds.shape} differs from {(T, *row_shape)} in the first episode")
    a = ds if isinstance(ds, np.ndarray) else ds[()]
    if a.dtype != np.float32:
        a = a.astype(np.float32)
    if check:
        check_finite(file, path, a)
    return a


def check_read_through(file: str, data: bytes | None = None, part: str | None = None) -> None:
    """Raise an InputError at ``/`` if the HDF5 library hangs or crashes reading ``file`` (or its bytes
    ``data``) through; see :mod:`l2.format.hdf5_guard` (``part``: of a file checked ahead, only that part need
    be read through yet). Missing or unopenable files pass: :func:`open_hdf5` says why."""
    if data is None and not os.path.isfile(file):
        return
    problem = read_through(file if data is None else data, part=part)
    if problem is not None:
        raise InputError(file, "/", problem)


def check_demo_read_through(file: str, demo: str) -> None:
    """Before reading below an L2 demo's group: wait until the check ahead of ``file`` has read that demo through
    (raise if it failed). A file that this process does not check ahead was read through whole before its scan."""
    problem = read_through_part(file, demo)
    if problem is not None:
        raise InputError(file, "/", problem)


def open_hdf5(file: str, opener: Callable[[], h5py.File] | None = None) -> h5py.File:
    """Open an HDF5 file read-only (or call ``opener``); every failure is an InputError at ``/``."""
    if opener is None:
        try:
            size = os.path.getsize(file)
        except OSError as e:
            raise InputError(file, "/", f"cannot read file ({e.strerror})") from None
        if size == 0:
            raise InputError(file, "/", "empty file (0 bytes), not an HDF5 file")
    try:
        return opener() if opener is not None else h5py.File(file, "r")
    except OSError as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InputError(file, "/", f"cannot open as HDF5, truncated or corrupt? ({first})") from None


class OneFileCache:
    """Per-process cache of one open file (episodes arrive file by file in each worker)."""

    def __init__(self) -> None:
        self.key = None
        self.f: h5py.File | None = None

    def get(self, key, open_fn: Callable[[], h5py.File]) -> h5py.File:
        if self.key != key or self.f is None or not self.f.id.valid:
            self.close()
            self.f = open_fn()
            self.key = key
        return self.f

    def close(self) -> None:
        if self.f is not None:
            with contextlib.suppress(READ_ERRORS):  # closing a broken file must not raise
                self.f.close()
        self.key, self.f = None, None

    def using(self, key, open_fn: Callable[[], h5py.File]) -> AbstractContextManager[h5py.File]:
        """``with cache.using(key, open_fn) as f``: the cached file for ``key`` (opened with
        ``open_fn`` if another or none is cached); an exception inside the block closes it (the file
        may be the broken part)."""
        return _Using(self, key, open_fn)

    def hdf5(self, file: str) -> AbstractContextManager[h5py.File]:
        """:meth:`using` for a plain HDF5 file on disk, keyed by its path."""
        return self.using(file, lambda: open_hdf5(file))


class _Using:
    """The context manager of :meth:`OneFileCache.using` (a class: cheaper per episode than a
    generator-based one)."""

    __slots__ = ("cache", "key", "open_fn")

    def __init__(self, cache: OneFileCache, key, open_fn: Callable[[], h5py.File]) -> None:
        self.cache, self.key, self.open_fn = cache, key, open_fn

    def __enter__(self) -> h5py.File:
        return self.cache.get(self.key, self.open_fn)

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.cache.close()


class H5Frames:
    """Raw (T, H, W, 3) uint8 camera frames read lazily, FRAME_CHUNK at a time (a FrameSource).

    ``opener()`` returns a context manager yielding the open h5py file: a fresh file
    (``partial(open_hdf5, file)``) or a reader's cached one.
    """

    def __init__(
        self,
        opener: Callable[[], AbstractContextManager[h5py.File]],
        file: str,
        path: str,
        shape: tuple[int, int, int, int],
    ):
        self.opener, self.file, self.path, self.shape = opener, file, path, shape

    def chunks(self) -> Iterator[np.ndarray]:
        with self.opener() as f:
            ds = f[self.path]
            for i in range(0, self.shape[0], FRAME_CHUNK):
                with reading(self.file, self.path, f"cannot read frames {i}.."):
                    frames = np.ascontiguousarray(ds[i : i + FRAME_CHUNK])
                yield frames
