"""The one reader of L2 files: :class:`L2File` opens a file through the read guard and answers what every tool
asks of it (its demos in numeric order, ``env_args`` and the env name, the source of each demo, an episode's
data, the obs layout); the fast episode path and the names of read errors live here too.

Needs only h5py and numpy (no Isaac Lab). The schema rules are :mod:`l2.format.validate`'s.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass

import h5py
import numpy as np

from l2.format import journal, schema
from l2.format.hdf5_guard import read_through
from l2.format.schema import ACTIONS, OBS


def one_line(text: str) -> str:
    """``text`` with line breaks and other control characters (names in a corrupt file may hold any)
    escaped, so that a message stays one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


Array = np.ndarray | h5py.Dataset
"""A dataset's values: read into memory, or an h5py dataset read in blocks of rows."""

READ_ERRORS = (OSError, RuntimeError, KeyError, ValueError, TypeError)
"""What h5py and numpy raise on unreadable (truncated, corrupt) content; reported, never raised."""


# --------------------------------------------------------------------------------------------- reading
@dataclass
class EpisodeData:
    """What the schema rules check in one ``data/demo_<i>`` group (see :func:`read_episode_data`)."""

    path: str
    """The group's HDF5 path, e.g. ``/data/demo_0``."""
    attrs: Mapping[str, object]
    actions: Array | None
    """The ``actions`` dataset; None when ``actions_kind`` is not ``"dataset"``."""
    actions_kind: str
    """``"dataset"``, ``"missing"`` or ``"other"`` (e.g. a group)."""
    obs: dict[str, Array]
    """Every dataset below ``obs/`` by path relative to the episode (``obs/joint_pos``), sorted by name at
    each level, nested groups included."""
    obs_kind: str
    """``"group"``, ``"missing"`` or ``"dataset"`` (one flat dataset)."""


def read_episode_data(demo: h5py.Group, load_bytes: int = 0, attrs: Mapping[str, object] | None = None) -> EpisodeData:
    """The parts of one episode group the schema rules check: ``actions`` and every dataset below ``obs/``.

    Float datasets of at most ``load_bytes`` bytes are read whole, in one H5Dread each; the others
    stay h5py datasets, which the checks read in blocks of rows. ``attrs``: the group's attributes
    when already read (default: read from the group). The one fast path over h5py's low-level API
    (L3 reads every episode through it): group listings are reused while episodes share their
    layout, and HDF5 types are compared instead of converted. Raises :data:`READ_ERRORS` on
    unreadable content.
    """
    gid = demo.id
    obj = _open(gid, ACTIONS, h5py.h5d)
    actions = None if not isinstance(obj, h5py.h5d.DatasetID) else _load(obj, load_bytes)
    actions_kind = "missing" if obj is None else "dataset" if actions is not None else "other"
    obj = _open(gid, OBS, h5py.h5g)
    obs: dict[str, Array] = {}
    if isinstance(obj, h5py.h5g.GroupID):
        obs = {name: _load(did, load_bytes) for name, did in _datasets(obj, f"{OBS}/")}
    obs_kind = "missing" if obj is None else "group" if isinstance(obj, h5py.h5g.GroupID) else "dataset"
    return EpisodeData(demo.name, demo.attrs if attrs is None else attrs, actions, actions_kind, obs, obs_kind)


def _open(gid, name: str, kind):
    """The object linked as ``name`` below ``gid`` (``kind.open`` first: h5py.h5d or h5py.h5g), None if no link."""
    raw = name.encode()
    try:
        return kind.open(gid, raw)
    except READ_ERRORS:
        pass
    if not gid.links.exists(raw):
        return None
    return h5py.h5o.open(gid, raw)  # raises for a dangling link


_FLAT_NAMES: dict[str, list[tuple[str, bytes]]] = {}
"""The last list of dataset names seen in a group (by path prefix), sorted: episodes of a file
usually share their layout, and listing a group costs more than opening what it holds."""


def _datasets(gid, prefix: str) -> list[tuple[str, h5py.h5d.DatasetID]]:
    """(path relative to the episode, low-level DatasetID) of every dataset below ``gid``, sorted by name
    at each level, nested groups included."""
    cached = _FLAT_NAMES.get(prefix)
    if cached is not None and gid.get_num_objs() == len(cached):
        # the group holds as many links as the cached names: if every cached name opens as a
        # dataset, its links are exactly those names (link names are unique)
        try:
            return [(f"{prefix}{name}", h5py.h5d.open(gid, raw)) for name, raw in cached]
        except READ_ERRORS:
            pass
    out: list[tuple[str, h5py.h5d.DatasetID]] = []
    flat: list[tuple[str, bytes]] | None = []
    for name in sorted(n.decode("utf-8", "surrogateescape") for n in gid):
        raw = name.encode("utf-8", "surrogateescape")
        obj = h5py.h5o.open(gid, raw)
        if isinstance(obj, h5py.h5d.DatasetID):
            out.append((f"{prefix}{name}", obj))
            if flat is not None:
                flat.append((name, raw))
        else:
            flat = None
            if isinstance(obj, h5py.h5g.GroupID):
                out += _datasets(obj, f"{prefix}{name}/")
    if flat is not None:
        _FLAT_NAMES[prefix] = flat
    return out


_MTYPES: dict[np.dtype, object] = {}
_TYPES: list[tuple[object, np.dtype]] = []
"""HDF5 types seen, with their numpy dtype: comparing types is much cheaper than converting one."""


def _dtype(did) -> np.dtype:
    t = did.get_type()
    for tid, dt in _TYPES:
        if t == tid:
            return dt
    dt = t.dtype
    if len(_TYPES) < 16:
        _TYPES.append((t, dt))
    return dt


def _load(did, load_bytes: int) -> Array:
    """A float dataset of at most ``load_bytes`` as an array (one H5Dread, no high-level lookups); others as
    h5py datasets."""
    dt = _dtype(did)
    shape = did.shape
    if dt.kind == "f" and shape and dt.itemsize * math.prod(shape) <= load_bytes:
        a = np.empty(shape, dtype=dt)
        if a.size:
            mtype = _MTYPES.get(dt)
            if mtype is None:  # building the memory type is most of a small read's cost: once per dtype
                mtype = _MTYPES[dt] = h5py.h5t.py_create(dt)
            did.read(h5py.h5s.ALL, h5py.h5s.ALL, a, mtype)
        return a
    return h5py.Dataset(did)


def obs_layout(demo: h5py.Group) -> dict[str, tuple[tuple[int, ...], str]]:
    """``{term path below obs/: (row shape, dtype name)}`` of an episode, sorted by path."""
    prefix = len(OBS) + 1
    return {name[prefix:]: (tuple(d.shape[1:]), d.dtype.name) for name, d in read_episode_data(demo).obs.items()}


def describe_obs_layout(layout: Mapping[str, tuple[tuple[int, ...], str]]) -> str:
    """One line for a layout, e.g. ``joint_pos[9] float32, table_cam[224x224x3] uint8``."""
    if not layout:
        return "(none)"
    return ", ".join(f"{name}[{'x'.join(map(str, shape))}] {dtype}" for name, (shape, dtype) in layout.items())


# --------------------------------------------------------------------------------------------- env_args, source
def text_attr(value: object) -> str:
    """A text attribute as str ("" when it is not UTF-8 text: bytes that do not decode, a number, an array)."""
    if isinstance(value, bytes | np.bytes_):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return ""
    return value if isinstance(value, str) else ""


def parse_env_args(raw: object) -> dict:
    """``data.attrs["env_args"]`` as a dict; raises ValueError naming what is wrong (not text, not JSON, not an
    object). The one place the attribute is decoded."""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    if not isinstance(raw, str):
        raise ValueError(f"env_args must be JSON text, got {raw!s} ({type(raw).__name__})")
    try:
        env_args = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"env_args is not valid JSON: {exc}") from None
    if not isinstance(env_args, dict):
        raise ValueError("env_args must be a JSON object")
    return env_args


def demo_source(path: str | os.PathLike, attr: object = None) -> str:
    """The source tag of a demo, by one rule: its own ``source`` attribute (``attr``; written by
    ``l2.tools.merge`` and by every recorder), else the file name's prefix (``scripted_lift_cube.hdf5``), else,
    for a shard (``shard_<k>.hdf5``), its folder's (``scripted_lift_cube/shard_0.hdf5``); else ``unknown``."""
    if isinstance(attr, bytes):
        attr = attr.decode("utf-8")
    if isinstance(attr, str) and attr:
        return attr
    return schema.source_from_path(os.path.abspath(os.fspath(path)))


class L2FileError(Exception):
    """An L2 file that cannot be read as one: ``str(e)`` is one line naming the file and the HDF5 path."""

    def __init__(self, file: str, path: str, message: str):
        super().__init__(one_line(f"{file}:{path or '/'}: {message}"))
        self.file, self.path, self.message = file, path or "/", message


class L2File:
    """One L2 HDF5 file open for reading, through the read guard (:mod:`l2.format.hdf5_guard`).

    ``with L2File(path) as f: for name in f.demos: ep = f.episode(name)``. Errors opening it or finding
    ``/data`` are :class:`L2FileError`; reading a damaged dataset raises one of :data:`READ_ERRORS`.
    ``guard=False`` skips the read-through check (a file already read through, or one this program wrote);
    ``locking=False`` reads without HDF5's file lock (polling a file that another process is writing).
    """

    def __init__(self, path: str | os.PathLike, *, guard: bool = True, locking: bool | None = None):
        self.path = os.fspath(path)
        if not os.path.isfile(self.path):
            raise L2FileError(self.path, "/", "not a regular file" if os.path.exists(self.path) else "no such file")
        try:
            journal.recover(self.path)
        except OSError as exc:
            raise L2FileError(self.path, "/", exc.strerror) from None
        if guard and (problem := read_through(self.path)) is not None:
            raise L2FileError(self.path, "/", problem)
        try:
            self.h5 = h5py.File(self.path, "r", locking=locking)
        except READ_ERRORS as exc:
            raise L2FileError(self.path, "/", f"not a readable HDF5 file ({exc})") from None
        data = self.h5.get(schema.DATA_GROUP)
        if not isinstance(data, h5py.Group):
            self.h5.close()
            raise L2FileError(self.path, f"/{schema.DATA_GROUP}", "missing (not an L2 demo file)")
        self.data = data
        self._env_args: dict | None = None

    # -- the file
    @property
    def demos(self) -> list[str]:
        """``demo_<i>`` names in numeric order (other names are left out)."""
        return schema.sorted_demo_names(self.data.keys())

    @property
    def env_args(self) -> dict:
        """``data.attrs["env_args"]`` decoded ({} when the attribute is missing)."""
        if self._env_args is None:
            raw = self.data.attrs.get(schema.ATTR_ENV_ARGS)
            try:
                self._env_args = {} if raw is None else parse_env_args(raw)
            except ValueError as exc:
                raise L2FileError(self.path, f"/{schema.DATA_GROUP}", str(exc)) from None
        return self._env_args

    @property
    def env_name(self) -> str | None:
        """The task the file was recorded in (``env_args["env_name"]``), None when it names none."""
        name = self.env_args.get("env_name")
        return name if isinstance(name, str) and name else None

    # -- its demos
    def group(self, demo: str) -> h5py.Group:
        return self.data[demo]

    def source(self, demo: str) -> str:
        """The demo's source tag (:func:`demo_source`)."""
        return demo_source(self.path, self.data[demo].attrs.get(schema.ATTR_SOURCE))

    def num_samples(self, demo: str) -> int:
        """The demo's ``num_samples`` attribute, else its ``actions`` rows."""
        g = self.data[demo]
        n = g.attrs.get(schema.ATTR_NUM_SAMPLES)
        return int(g[ACTIONS].shape[0] if n is None else n)

    def episode(self, demo: str, load_bytes: int = 0) -> EpisodeData:
        """The demo's ``actions`` and ``obs/`` datasets (:func:`read_episode_data`)."""
        return read_episode_data(self.data[demo], load_bytes)

    def obs_layout(self, demo: str | None = None) -> dict[str, tuple[tuple[int, ...], str]]:
        """The obs layout of ``demo`` (default: the first demo; {} for a file with none)."""
        demos = self.demos if demo is None else [demo]
        return obs_layout(self.data[demos[0]]) if demos else {}

    def close(self) -> None:
        self.h5.close()

    def __enter__(self) -> L2File:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
