"""Reader for L2 HDF5 files (``docs/l2-hdf5-schema.md``): /data/demo_<i> episodes.

Scanning reads only attributes, so filters and episode numbering are known before any array is
touched; :meth:`L2Reader.read` (in a worker process) reads the episode once through
:func:`l2.format.validate.read_episode_data`, checks it (our checks, then every L2 schema rule through
:func:`l2.format.validate.validate_episode`) and returns an :class:`l3.episode.Episode` whose camera frames
are read lazily in chunks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial

import h5py
import numpy as np

from l2.format import metadata as file_metadata
from l2.format import schema
from l2.format.l2file import demo_source, parse_env_args, read_episode_data
from l2.format.validate import validate_episode
from l3.episode import Episode
from l3.errors import ConfigError, InputError
from l3.mapping import Camera, Mapping, Slice
from l3.readers.common import (
    SCAN_ERROR,
    EpisodeRef,
    FileScan,
    H5Frames,
    OneFileCache,
    Terms,
    attr_text,
    check_demo_read_through,
    check_name,
    open_hdf5,
    read_all_frames,
    read_float,
    reading,
)

FORMAT = "l2"

MEMORY_TERM_BYTES = 256 * 2**20
"""Float datasets up to this size are read whole, once, for the checks and the mapping; larger
ones (and non-float ones such as camera frames) stay on disk and are read in blocks or chunks."""


@dataclass(frozen=True, kw_only=True)
class L2Ref(EpisodeRef):
    """One ``/data/demo_<i>`` episode and what the scan read from the attributes."""

    format = FORMAT
    demo: str
    legacy: bool
    """No format_version: quaternions stored WXYZ."""
    env_name: str | None = None
    seed: int | None = None
    attrs: tuple[tuple[str, object], ...] = field(default=(), compare=False)
    """The group's num_samples / success / seed attributes as read by the scan (raw values, for the
    L2 schema checks)."""


_MISSING = object()
_INT64_T = h5py.h5t.py_create(np.dtype(np.int64))
_BOOL_T = h5py.h5t.py_create(np.dtype(bool))  # h5py's FALSE/TRUE enum


def _instruction(file: str, where: str, raw) -> str | None:
    """A demo's ``instruction`` attribute (its episode's task; None: the mapping's task), checked as text."""
    if raw is _MISSING:
        return None
    try:
        text = attr_text(raw).strip()
    except (UnicodeDecodeError, TypeError):
        text = ""
    if not text:
        raise InputError(file, f"{where}.attrs[{schema.ATTR_INSTRUCTION}]", "must be non-empty UTF-8 text")
    return text


def _demo_source(file: str, where: str, raw) -> str:
    """A demo's source tag by :func:`l2.format.l2file.demo_source`'s rule (its ``source`` attribute, else the file
    name's prefix, else the shard folder's), the attribute checked as a name."""
    path = f"{where}.attrs[{schema.ATTR_SOURCE}]"
    try:
        tag = demo_source(file, None if raw is _MISSING else attr_text(raw))
    except UnicodeDecodeError:
        raise InputError(file, path, "source tag is not valid UTF-8") from None
    return check_name(file, path, tag, what="source tag") if raw is not _MISSING else tag


def _attr(gid, name: str):
    """Attribute ``name`` of a low-level object as h5py's ``attrs[name]`` gives it, or _MISSING.

    Scalar int64 and bool attributes (what the L2 recorder writes) are read directly, about twice
    as fast as through ``attrs``; anything else goes through h5py's attribute manager.
    """
    key = name.encode()
    if not h5py.h5a.exists(gid, key):
        return _MISSING
    at = h5py.h5a.open(gid, key)
    if at.get_space().get_simple_extent_type() == h5py.h5s.SCALAR:
        t = at.get_type()
        for mtype, dtype in ((_INT64_T, np.int64), (_BOOL_T, np.bool_)):
            if t == mtype:
                v = np.empty((), dtype=dtype)
                at.read(v, mtype)
                return v[()]
    return h5py.AttributeManager(h5py.Group(gid))[name]


def recorded_rate(file: str, sim_args: object) -> float | None:
    """Control rate from Isaac Lab's ``env_args["sim_args"]`` (``dt`` x ``decimation`` seconds per step), Hz;
    None when the file does not say."""
    if sim_args is None:
        return None
    dt = sim_args.get("dt") if isinstance(sim_args, dict) else None
    decimation = sim_args.get("decimation") if isinstance(sim_args, dict) else None
    if not (isinstance(dt, (int, float)) and isinstance(decimation, int) and dt > 0 and decimation > 0):
        raise InputError(
            file, f"/{schema.DATA_GROUP}", f"env_args sim_args must hold dt > 0 and decimation >= 1, got {sim_args!r}"
        )
    return 1.0 / (dt * decimation)


def quaternion_notice(file: str, mapping: Mapping) -> str:
    """The notice printed once per legacy file."""
    parts = [
        f"{grp}.{s.key}[{s.quaternion[0]}:{s.quaternion[1]}] -> {s.quaternion_order.upper()}"
        for grp, slices in (("state", mapping.state), ("action", mapping.action))
        for s in slices
        if s.quaternion
    ]
    what = ", ".join(parts) if parts else "no quaternion slices mapped"
    return f"notice: {file}: legacy file (no format_version): quaternions read as WXYZ: {what}"


class L2Reader:
    """L2 demos files (:class:`l3.readers.common.Reader`)."""

    format = FORMAT

    def __init__(self) -> None:
        self._files = OneFileCache()
        self._cached = self._files.hdf5

    def detect(self, f: h5py.File) -> bool:
        """Checked last: any file with ``/data`` or ``/episodes`` (the scan explains what is wrong with it)."""
        return schema.DATA_GROUP in f or schema.LEGACY_EPISODES_GROUP in f

    def source_from_name(self, file: str) -> str:
        """The file's tag when its demos carry none (:func:`l2.format.l2file.demo_source`)."""
        return demo_source(file)

    def scan(
        self, file: str, source: str | None, f: h5py.File | None = None, filter_key: str | None = None
    ) -> FileScan:
        """The episodes of ``file`` in numeric demo order (attributes only); ``source`` None: each demo's own
        ``source`` attribute (files made by ``l2.tools.merge``), else the file name's tag;
        ``filter_key``: only the demos that robomimic's filter key ``mask/<filter_key>`` lists (``l2.tools.split``)."""
        if f is None:
            with open_hdf5(file) as f:
                return self.scan(file, source, f, filter_key)
        scan = FileScan(file=file, source=source or self.source_from_name(file))
        with reading(file, "/", SCAN_ERROR):
            version = f.attrs.get(schema.ATTR_FORMAT_VERSION)
            if schema.DATA_GROUP not in f:
                if schema.LEGACY_EPISODES_GROUP in f:
                    raise InputError(
                        file,
                        f"/{schema.LEGACY_EPISODES_GROUP}",
                        "abandoned 'episodes/<i>' layout; L2 files hold /data/demo_<i> "
                        "(re-export the file with the L2 recorder)",
                    )
                raise InputError(file, f"/{schema.DATA_GROUP}", "missing group (not an L2 demos file)")
            data = f[schema.DATA_GROUP]
            if not isinstance(data, h5py.Group):
                raise InputError(file, f"/{schema.DATA_GROUP}", "is not a group")
            if version is not None and int(version) > schema.FORMAT_VERSION:
                raise InputError(
                    file, "/", f"format_version {int(version)} is newer than this converter ({schema.FORMAT_VERSION})"
                )
            legacy = version is None or int(version) == 0
            env_name = rate = None
            env_args = data.attrs.get(schema.ATTR_ENV_ARGS)
            if env_args is not None:
                try:
                    args = parse_env_args(attr_text(env_args, errors="replace"))
                except ValueError as exc:
                    raise InputError(file, f"/{schema.DATA_GROUP}", str(exc)) from None
                env_name = args.get("env_name")
                rate = recorded_rate(file, args.get("sim_args"))
                rate = file_metadata.read(args).control_hz or rate
            names = schema.sorted_demo_names(data.keys())
            if not names:
                raise InputError(file, f"/{schema.DATA_GROUP}", "no demo_<i> episodes (empty file)")
            if filter_key is not None:
                names = _filtered(file, f, names, filter_key)
            for name in names:
                where = f"/{schema.DATA_GROUP}/{name}"
                gid = h5py.h5o.open(data.id, name.encode())
                if not isinstance(gid, h5py.h5g.GroupID):
                    scan.errors.append(InputError(file, where, "is not a group"))
                    continue
                raw_n = _attr(gid, schema.ATTR_NUM_SAMPLES)
                if raw_n is _MISSING:
                    scan.errors.append(InputError(file, where, f"missing attribute {schema.ATTR_NUM_SAMPLES}"))
                    continue
                raw_success = _attr(gid, schema.ATTR_SUCCESS)
                if raw_success is _MISSING:
                    scan.errors.append(InputError(file, where, f"missing attribute {schema.ATTR_SUCCESS}"))
                    continue
                n = int(raw_n)
                if n <= 0:
                    scan.errors.append(InputError(file, where, f"{schema.ATTR_NUM_SAMPLES} is {n}, expected >= 1"))
                    continue
                try:
                    tag = source or _demo_source(file, where, _attr(gid, schema.ATTR_SOURCE))
                except InputError as e:
                    scan.errors.append(e)
                    continue
                seed = _attr(gid, schema.ATTR_SEED)
                try:
                    instruction = _instruction(file, where, _attr(gid, schema.ATTR_INSTRUCTION))
                except InputError as e:
                    scan.errors.append(e)
                    continue
                attrs = ((schema.ATTR_NUM_SAMPLES, raw_n), (schema.ATTR_SUCCESS, raw_success))
                if seed is not _MISSING:
                    attrs += ((schema.ATTR_SEED, seed),)
                scan.refs.append(
                    L2Ref(
                        file=file,
                        group=where,
                        demo=name,
                        length=n,
                        success=bool(raw_success),
                        source=tag,
                        legacy=legacy,
                        env_name=env_name,
                        rate=rate,
                        seed=None if seed is _MISSING else int(seed),
                        task=instruction,
                        attrs=attrs,
                    )
                )
        return scan

    def metadata(self, file: str) -> file_metadata.Metadata:
        """What the file's recording says about its env (:mod:`l2.format.metadata`; empty when it says nothing)."""
        with self._cached(file) as f, reading(file, f"/{schema.DATA_GROUP}", SCAN_ERROR):
            raw = f[schema.DATA_GROUP].attrs.get(schema.ATTR_ENV_ARGS)
            if raw is None:
                return file_metadata.Metadata()
            try:
                return file_metadata.read(parse_env_args(attr_text(raw, errors="replace")))
            except ValueError:
                return file_metadata.Metadata()

    def describe(self, ref: L2Ref) -> tuple[Terms, dict[str, list[str]]]:
        """The episode's datasets, and the column names its file records (``env_args["columns"]``)."""
        out: Terms = {}

        def visit(name: str, obj) -> None:
            if isinstance(obj, h5py.Dataset):
                out[name] = (tuple(obj.shape), obj.dtype.name)

        check_demo_read_through(ref.file, ref.demo)
        with self._cached(ref.file) as f:
            f[ref.group].visititems(visit)
        return out, {path: list(names) for path, names in self.metadata(ref.file).columns.items()}

    def infer_mapping(self, ref: L2Ref, terms: Terms) -> Mapping:
        """Float (T, d) observation terms become state keys (except the ``obs/actions`` echo of the previous
        action), (T, H, W, 3) uint8 terms become cameras, and ``actions`` becomes ``action.ee_pose`` +
        ``action.gripper`` when it has the lift-cube width 8 and no other column names (IK-absolute pose,
        scalar-last quaternion) or a single ``action.actions`` key otherwise.

        What the recording says about its env (:mod:`l2.format.metadata`) comes first: robot_type is its robot, the
        cameras its camera terms, the datasets it calls relative are not absolute (their column names come with
        :meth:`describe`); else robot_type is ``franka_panda`` when the env name says Franka. The task is the
        episode's instruction, else the env name (the task id)."""
        meta = self.metadata(ref.file)
        action_key = schema.ACTIONS
        state: list[Slice] = []
        cameras: list[Camera] = []
        for path, (shape, dtype) in terms.items():
            if path == action_key or not path.startswith(schema.OBS + "/"):
                continue
            name = path[len(schema.OBS) + 1 :]
            if schema.is_camera_term(shape, dtype):
                cameras.append(Camera(name.replace("/", "_"), path))
            elif len(shape) == 2 and dtype.startswith("float") and name != schema.ACTIONS:
                state.append(Slice(name.replace("/", "_"), path, absolute=path not in meta.relative))
        recorded = [c for c in cameras if c.source.removeprefix(schema.OBS + "/") in meta.cameras]
        if recorded:  # in the recording's order
            order = list(meta.cameras)
            cameras = sorted(recorded, key=lambda c: order.index(c.source.removeprefix(schema.OBS + "/")))
        if action_key not in terms:
            raise ConfigError(f"cannot infer a mapping: no '{action_key}' dataset in the episode")
        ashape = terms[action_key][0]
        names = meta.columns.get(action_key)
        lift_layout = names is None or tuple(names) == schema.LIFT_ACTION_NAMES
        absolute = action_key not in meta.relative
        if len(ashape) == 2 and ashape[1] == schema.LIFT_ACTION_DIM and lift_layout and absolute:
            q = schema.EE_QUAT_SLICE
            action = (
                Slice(
                    "ee_pose", action_key, 0, q.stop, schema.LIFT_ACTION_NAMES[: q.stop], quaternion=(q.start, q.stop)
                ),
                Slice(
                    "gripper",
                    action_key,
                    schema.GRIPPER_SLICE.start,
                    schema.GRIPPER_SLICE.stop,
                    schema.LIFT_ACTION_NAMES[schema.GRIPPER_SLICE],
                ),
            )
            action_dim = schema.LIFT_ACTION_DIM
        else:
            action = (Slice("actions", action_key, absolute=absolute),)
            action_dim = None
        if not state:
            raise ConfigError("cannot infer a mapping: no float (T, d) observation term for the state")
        state, action = _named(state, terms, meta), _named(list(action), terms, meta)
        env = ref.env_name or ""
        robot = meta.robot or ("franka_panda" if "franka" in env.lower() else "unknown")
        return Mapping(
            robot_type=robot,
            fps=None,
            task=ref.task or env or "unknown task",
            state=tuple(state),
            action=tuple(action),
            cameras=tuple(cameras),
            action_dim=action_dim,
        )

    def notices(self, refs: Sequence[L2Ref], mapping: Mapping) -> list[str]:
        """One notice per legacy file: how its quaternions are read."""
        return [quaternion_notice(file, mapping) for file in dict.fromkeys(r.file for r in refs if r.legacy)]

    def read(
        self,
        ref: L2Ref,
        mapping: Mapping,
        dims: dict[str, tuple[int, ...]],
        *,
        task: str | None = None,
        check: bool = True,
        check_frames: bool = False,
    ) -> Episode:
        """Read and check one episode (see :meth:`l3.readers.common.Reader.read`).

        Every dataset of ``actions`` and ``obs/`` is read once (float terms into memory), then checked
        in memory: the lengths, the mapped terms, and every rule of ``l2.format.validate`` (finite values in
        every float term, the action width and unit quaternions, ...). ``check=False`` skips the
        per-row checks (finite values, every term's length, the L2 schema rules).
        """
        file, T = ref.file, ref.length
        check_demo_read_through(file, ref.demo)
        with self._cached(file) as f, reading(file, ref.group):
            try:
                g = h5py.Group(h5py.h5g.open(f.id, ref.group.encode()))
            except (KeyError, ValueError, TypeError):
                raise InputError(file, ref.group, "missing episode group") from None
            data = read_episode_data(g, MEMORY_TERM_BYTES, dict(ref.attrs))
            loaded = dict(data.obs)
            if data.actions is not None:
                loaded = {schema.ACTIONS: data.actions, **loaded}
            if check:
                for term, a in loaded.items():  # actions first, then obs/... in name order
                    n = a.shape[0] if a.shape else 0
                    if n != T:
                        other = "" if term == schema.ACTIONS else f" (actions has {_rows(data.actions)})"
                        raise InputError(file, f"{ref.group}/{term}", f"{n} rows but num_samples is {T}{other}")
            arrays: dict[str, np.ndarray] = {}
            for s in (*mapping.state, *mapping.action):
                if s.source not in arrays:
                    ds = loaded.get(s.source)
                    arrays[s.source] = read_float(
                        file,
                        f"{ref.group}/{s.source}",
                        g.get(s.source) if ds is None else ds,
                        T,
                        dims[s.source],
                        check,
                        f"num_samples is {T}",
                        missing="missing mapped term",
                    )
            cameras: dict[str, H5Frames] = {}
            for c in mapping.cameras:
                path = f"{ref.group}/{c.source}"
                ds = loaded.get(c.source)
                if ds is None:
                    ds = g.get(c.source)
                if not isinstance(ds, h5py.Dataset | np.ndarray):
                    raise InputError(file, path, "missing mapped camera term" if ds is None else "is not a dataset")
                if ds.dtype != np.uint8 or ds.ndim != 4 or ds.shape[3] != 3:
                    raise InputError(
                        file, path, f"camera term must be (T, H, W, 3) uint8, got {ds.dtype.name} {ds.shape}"
                    )
                if ds.shape[0] != T:
                    raise InputError(file, path, f"{ds.shape[0]} frames but num_samples is {T}")
                if tuple(ds.shape[1:]) != dims[c.source]:
                    raise InputError(
                        file, path, f"frame shape {ds.shape[1:]} differs from {dims[c.source]} in the first episode"
                    )
                cameras[c.key] = H5Frames(partial(open_hdf5, file), file, path, tuple(ds.shape))
            if check:
                violations = validate_episode(file, data, action_dim=mapping.action_dim)
                if violations:
                    v = violations[0]
                    raise InputError(v.file, v.path, v.message)

        stored = "wxyz" if ref.legacy else "xyzw"  # legacy files store quaternions WXYZ

        def take(s) -> np.ndarray:
            return s.take(arrays[s.source], stored)

        if check_frames:
            read_all_frames(cameras)
        fields = {"file": ref.file, "demo": ref.demo}
        if ref.env_name is not None:
            fields["env_name"] = ref.env_name
        if ref.seed is not None:
            fields["seed"] = ref.seed
        return Episode(
            length=T,
            state={s.key: take(s) for s in mapping.state},
            action={s.key: take(s) for s in mapping.action},
            cameras=cameras,
            task=mapping.task if task is None else task,
            source=ref.source,
            success=ref.success,
            fields=fields,
        )

    def close(self) -> None:
        self._files.close()


def _named(slices: list[Slice], terms: Terms, meta: file_metadata.Metadata) -> list[Slice]:
    """``slices`` without names given the names the recording gives their columns; a name that more than one key of
    the group would carry (``joint_pos`` and ``joint_vel`` both name every joint) becomes ``<key>.<name>``."""
    given = {}
    for s in slices:
        names = meta.columns.get(s.source)
        shape = terms.get(s.source, ((),))[0]
        if s.names is None and names is not None and len(shape) == 2 and len(names) == shape[1]:
            given[s.key] = names[s.start : s.end]
    seen: dict[str, int] = {}
    for names in given.values():
        for n in set(names):
            seen[n] = seen.get(n, 0) + 1
    return [
        replace(s, names=tuple(n if seen[n] == 1 else f"{s.key}.{n}" for n in given[s.key])) if s.key in given else s
        for s in slices
    ]


def _filtered(file: str, f: h5py.File, names: list[str], key: str) -> list[str]:
    """The demos of ``names`` that the filter key ``mask/<key>`` lists, in numeric order."""
    where = f"/{schema.MASK_GROUP}/{key}"
    dset = f.get(where)
    if not isinstance(dset, h5py.Dataset) or dset.ndim != 1 or dset.dtype.kind != "S":
        problem = "missing filter key" if dset is None else "filter key is not a 1-D array of demo names"
        raise InputError(file, where, f"{problem} (python -m l2.tools.split {file} writes mask/train and mask/valid)")
    listed = {n.decode("utf-8", "replace") for n in dset[()]}
    unknown = sorted(listed - set(names))
    if unknown:
        raise InputError(file, where, f"names demo(s) not in /{schema.DATA_GROUP}: {', '.join(unknown[:5])}")
    return [n for n in names if n in listed]


def _rows(actions) -> int | str:
    return actions.shape[0] if actions is not None and actions.shape else "no rows"


READER = L2Reader()
