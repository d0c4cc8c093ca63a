"""Mapping from input arrays to GR00T modalities: load from YAML, fill in names, reconcile, print.

Each reader infers its format's default mapping (``Reader.infer_mapping`` in ``l3/readers/``).

A mapping says which dataset (relative to an episode group, e.g. ``obs/joint_pos`` or ``actions``)
and which column slice becomes each ``state.<key>`` / ``action.<key>``, which terms are cameras,
and the dataset-wide facts (fps, robot_type, task text, annotation columns, video settings).
See ``config/lift_cube.yaml`` for the shipped example and ``docs/l3.md`` for the format.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import yaml

from l3.errors import ConfigError

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
"""Names that become output path components (camera keys): no '/', '\\', spaces, control characters."""


def safe_name(name: str) -> bool:
    """Whether ``name`` is safe as a path component of the output (:data:`SAFE_NAME`, no '..')."""
    return bool(SAFE_NAME.match(name)) and ".." not in name


ROTATION_WIDTHS = {
    "axis_angle": 3,
    "quaternion": 4,
    "rotation_6d": 6,
    "matrix": 9,
    **{f"euler_angles_{c}": 3 for c in ("rpy", "ryp", "pry", "pyr", "yrp", "ypr")},
}
"""GR00T's ``rotation_type`` values and the width of a key holding one: its rotation transforms convert
the whole key with pytorch3d, so a key carries a rotation_type only when it is exactly that rotation."""
ROTATION_TYPES = tuple(ROTATION_WIDTHS)
QUATERNION_ORDERS = ("xyzw", "wxyz")
GR00T_QUATERNION_ORDER = "wxyz"
"""pytorch3d's quaternions, and so GR00T's ``rotation_type: quaternion``, put the real part first."""
ANNOTATION_KINDS = ("task", "validity")
DEFAULT_ANNOTATIONS = (("human.action.task_description", "task"), ("human.validity", "validity"))
DEFAULT_FPS = 50
NORM_MODES = ("degrees", "range_m100_100", "range_0_100")
"""Units a key's columns can be written in, named and defined as LeRobot's ``MotorNormMode`` (lerobot
``motors/motors_bus.py``, ``_normalize``): ``degrees`` is radians in, degrees out, from the middle of ``limits``
(0 without them); ``range_m100_100`` maps each column's ``limits`` [lo, hi] linearly onto -100..100 (0 is mid-range),
``range_0_100`` onto 0..100. Inverse: :meth:`Slice.from_norm`."""
RANGE_MODES = {"range_m100_100": (-100.0, 200.0), "range_0_100": (0.0, 100.0)}
"""The range modes' (lowest value, span): ``lo`` becomes the lowest value, ``hi`` the lowest plus the span."""


@dataclass(frozen=True)
class Slice:
    """One modality key: columns ``start:end`` of the dataset at ``source`` (None = all columns)."""

    key: str
    source: str
    start: int | None = None
    end: int | None = None
    names: tuple[str, ...] | None = None
    rotation_type: str | None = None
    absolute: bool = True
    quaternion: tuple[int, int] | None = None
    """Columns (within this key) holding the input's quaternion (XYZW in L2 files; legacy files' WXYZ is
    recognised) ..."""
    quaternion_order: str = "xyzw"
    """... and the component order written there (``wxyz`` for GR00T's ``rotation_type: quaternion``)."""
    zeros: int | None = None
    """Padding: this key is ``zeros`` columns of 0.0 for this input (``source`` is empty)."""
    norm_mode: str | None = None
    """The unit the dataset holds (one of :data:`NORM_MODES`; None: the input's values as they are) ..."""
    limits: tuple[tuple[float, float], ...] | None = None
    """... from each column's [lo, hi] in the input's unit (LeRobot's calibrated ``range_min``/``range_max``)."""

    def width(self, source_dim: int) -> int:
        """Number of columns this key takes from a source with ``source_dim`` columns."""
        if self.zeros is not None:
            return self.zeros
        return len(range(source_dim)[slice(self.start, self.end)])

    def take(self, source: np.ndarray, stored_order: str = "xyzw") -> np.ndarray:
        """This key's columns of ``source`` (T, D), its quaternion reordered from ``stored_order`` (what the
        input stores) to :attr:`quaternion_order` (what the dataset holds). Inverse: :meth:`put`."""
        a = source[:, self.start : self.end]
        if self.quaternion and stored_order != self.quaternion_order:
            a = a.copy()
            q0 = self.quaternion[0]
            a[:, q0 : q0 + 4] = a[:, [q0 + stored_order.index(c) for c in self.quaternion_order]]
        if self.norm_mode:
            a = self.to_norm(a)
        return np.ascontiguousarray(a)

    def _bounds(self, width: int) -> tuple[np.ndarray, np.ndarray]:
        """Each column's lo and hi (float64); degrees without limits: 0 and 0 (their middle is 0)."""
        lim = np.asarray(self.limits, dtype=np.float64) if self.limits else np.zeros((width, 2))
        return lim[:, 0], lim[:, 1]

    def to_norm(self, values: np.ndarray) -> np.ndarray:
        """``values`` (..., width) in the input's unit -> :attr:`norm_mode`, computed in float64 as LeRobot's
        ``_normalize`` does (without its clamp to the range, so that :meth:`from_norm` inverts it); the result has
        the input's float dtype."""
        values = np.asarray(values)
        x = values.astype(np.float64)
        lo, hi = self._bounds(x.shape[-1])
        if self.norm_mode == "degrees":
            y = np.degrees(x - (lo + hi) / 2)
        else:
            low, span = RANGE_MODES[self.norm_mode]
            y = ((x - lo) / (hi - lo)) * span + low
        return y.astype(values.dtype if values.dtype.kind == "f" else np.float64)

    def from_norm(self, values: np.ndarray) -> np.ndarray:
        """The inverse of :meth:`to_norm` (LeRobot's ``_unnormalize``, without its clamp and rounding to steps)."""
        values = np.asarray(values)
        y = values.astype(np.float64)
        lo, hi = self._bounds(y.shape[-1])
        if self.norm_mode == "degrees":
            x = np.radians(y) + (lo + hi) / 2
        else:
            low, span = RANGE_MODES[self.norm_mode]
            x = ((y - low) / span) * (hi - lo) + lo
        return x.astype(values.dtype if values.dtype.kind == "f" else np.float64)

    def put(self, values: np.ndarray, target: np.ndarray, stored_order: str = "xyzw") -> None:
        """Write this key's ``values`` (..., width) back into its columns of ``target`` (..., D), the inverse of
        :meth:`take`: what a policy answers for the key becomes the input's (the env's) columns again."""
        values = np.asarray(values)
        if self.norm_mode:
            values = self.from_norm(values)
        if self.quaternion and stored_order != self.quaternion_order:
            values = values.copy()
            q0 = self.quaternion[0]
            values[..., q0 : q0 + 4] = values[..., [q0 + self.quaternion_order.index(c) for c in stored_order]]
        target[..., self.start : self.end] = values


@dataclass(frozen=True)
class Camera:
    """A camera: frames (T, H, W, 3) uint8 at ``source`` become video ``observation.images.<key>``."""

    key: str
    source: str


PIX_FMTS = ("yuv420p", "yuv444p")
"""The pixel formats a dataset's videos may be: 4:2:0 (what every H.264 decoder plays) and 4:4:4 (H.264's High 4:4:4
Predictive profile: no chroma subsampling; what browsers do not play)."""
PIX_FMT_CHOICES = ("auto", *PIX_FMTS)
DEFAULT_CRF = {"yuv420p": 18, "yuv444p": 22}
"""The crf of a mapping that sets none, by pixel format (with l3.video's ``tune=psnr``): yuv444p at crf 22 keeps >= 42
dB mean PSNR through the readers on every shipped scene, where crf 18 would take 12-34 % more bytes for 1.0-2.9 dB
more (docs/cameras.md#video-quality-per-scene)."""


@dataclass(frozen=True)
class VideoOptions:
    """H.264 encoder settings (also used by the benchmark's ffmpeg CLI baseline)."""

    codec: str = "libx264"
    crf: int | None = None
    """None: :data:`DEFAULT_CRF` of each camera's pixel format."""
    preset: str = "medium"
    gop: int = 2
    pix_fmt: str = "auto"
    """One of :data:`PIX_FMT_CHOICES`. ``auto``: per camera, yuv420p where the frames' yuv420p itself (no encoder)
    stays close enough to them for >= 40 dB through the readers, else yuv444p; chosen once per conversion from the
    first episode written (:func:`l3.video.choose_pix_fmt`). yuv420p caps the SO-101's scenes at 33-37 dB (a yellow
    arm on a green mat is colored edges all over; docs/cameras.md#video-quality-per-scene)."""

    def resolved(self, pix_fmt: str) -> VideoOptions:
        """These options for videos in ``pix_fmt`` (one of :data:`PIX_FMTS`), the crf filled in."""
        return replace(self, pix_fmt=pix_fmt, crf=DEFAULT_CRF[pix_fmt] if self.crf is None else self.crf)


@dataclass(frozen=True)
class Mapping:
    """Everything the writer needs to know that is not in the arrays themselves."""

    robot_type: str
    fps: int | None
    """Frames per second of the dataset; None: the rate the inputs were recorded at (see :func:`resolve_fps`)."""
    task: str
    state: tuple[Slice, ...]
    action: tuple[Slice, ...]
    cameras: tuple[Camera, ...] = ()
    annotations: tuple[tuple[str, str], ...] = DEFAULT_ANNOTATIONS
    video: VideoOptions = field(default_factory=VideoOptions)
    action_dim: int | None = None
    """Expected width of ``actions`` for the L2 schema check (None: not checked)."""
    inputs: tuple[tuple[str, Mapping], ...] = ()
    """Per input format (``l2``, ``platform``, ``aloha``): its own state/action/cameras (mixed runs)."""

    def for_format(self, fmt: str) -> Mapping:
        """The mapping for episodes of input format ``fmt`` (its ``inputs:`` section, else this one)."""
        return dict(self.inputs).get(fmt, replace(self, inputs=()))

    def sources(self) -> list[str]:
        """Every dataset path the mapping reads (state, action, cameras), without duplicates."""
        seen: dict[str, None] = {}
        for s in (*self.state, *self.action):
            if s.zeros is None:
                seen[s.source] = None
        for c in self.cameras:
            seen[c.source] = None
        return list(seen)


# --------------------------------------------------------------------------- load


TOP_KEYS = ("robot_type", "fps", "task", "state", "action", "cameras", "annotations", "video", "action_dim", "inputs")
"""The keys of a mapping config."""
PER_INPUT_KEYS = ("state", "action", "cameras", "action_dim")
"""What may differ per input format (a config's ``inputs.<format>`` sections)."""
INPUT_FORMATS = ("l2", "platform", "aloha")
"""The input formats a config's ``inputs:`` may name (the readers of :mod:`l3.inputs`)."""
SLICE_KEYS = (
    "from",
    "slice",
    "names",
    "rotation_type",
    "absolute",
    "quaternion",
    "quaternion_order",
    "norm_mode",
    "limits",
)
VIDEO_KEYS = ("codec", "crf", "preset", "gop", "pix_fmt")
MAX_CRF = 51
"""H.264's constant-rate-factor scale (8-bit video) runs from 0 (lossless) to 51."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _norm_from_yaml(at: str, d: dict, rotation: bool, width: int | None) -> tuple[str | None, Any]:
    """A key's ``norm_mode`` and ``limits`` (``width``: its columns when its slice says; else checked by
    :func:`with_names`)."""
    mode, lim = d.get("norm_mode"), d.get("limits")
    if mode is None:
        if lim is not None:
            raise ConfigError(f"{at}.limits: only with a norm_mode ({', '.join(NORM_MODES)})")
        return None, None
    if mode not in NORM_MODES:
        raise ConfigError(f"{at}.norm_mode: {mode!r} is not one of {', '.join(NORM_MODES)} (LeRobot's MotorNormMode)")
    if rotation:
        raise ConfigError(f"{at}.norm_mode: not on a key with a rotation_type or quaternion (no joint angles)")
    if lim is None:
        if mode in RANGE_MODES:
            low, span = RANGE_MODES[mode]
            raise ConfigError(
                f"{at}.limits: norm_mode {mode} maps each column's [lo, hi] onto {low:g}..{low + span:g}: give "
                "limits: [[lo, hi], ...], one pair per column in the input's unit"
            )
        return mode, None
    if not (
        isinstance(lim, list)
        and lim
        and all(isinstance(p, list) and len(p) == 2 and all(_number(v) for v in p) for p in lim)
    ):
        raise ConfigError(f"{at}.limits: expected [[lo, hi], ...], one pair of finite numbers per column")
    for i, (lo, hi) in enumerate(lim):
        if lo >= hi:
            raise ConfigError(f"{at}.limits[{i}]: lo {lo!r} >= hi {hi!r} (expected lo < hi)")
    if width is not None and len(lim) != width:
        raise ConfigError(f"{at}.limits: {len(lim)} pair(s) for the {width} column(s) of its slice")
    return mode, tuple((float(lo), float(hi)) for lo, hi in lim)


def _unknown(at: str, d: dict, known: tuple[str, ...]) -> None:
    unknown = sorted(set(d) - set(known), key=str)
    if unknown:
        raise ConfigError(f"{at}: unknown key(s) {unknown} (known: {', '.join(known)})")


def _slice_from_yaml(at: str, key: Any, d: Any) -> Slice:
    """One ``state`` / ``action`` key; ``at`` locates it (``FILE: state.<key>``) in messages."""
    if not isinstance(key, str) or not key:
        raise ConfigError(f"{at}: key {key!r} must be a name (text)")
    if isinstance(d, str):
        d = {"from": d}
    if isinstance(d, dict) and "zeros" in d and "from" not in d:
        z, names = d["zeros"], d.get("names")
        if set(d) - {"zeros", "names"} or not _is_int(z) or z <= 0:
            raise ConfigError(f"{at}: padding is {{zeros: N, names: [...]}} with N >= 1")
        if names is not None and not (_strings(names) and len(names) == z):
            raise ConfigError(f"{at}.names: expected {z} strings")
        return Slice(key=key, source="", zeros=z, names=tuple(names) if names else None)
    if not isinstance(d, dict) or "from" not in d:
        raise ConfigError(f"{at}: expected a mapping with 'from: <dataset path>' (or 'zeros: N')")
    _unknown(at, d, SLICE_KEYS)
    if not isinstance(d["from"], str) or not d["from"].strip("/"):
        raise ConfigError(f"{at}.from: expected a dataset path, got {d['from']!r}")
    start = end = None
    if "slice" in d:
        sl = d["slice"]
        if not (isinstance(sl, list) and len(sl) == 2 and all(_is_int(v) and v >= 0 for v in sl) and sl[0] < sl[1]):
            raise ConfigError(f"{at}.slice: expected [start, end] with 0 <= start < end")
        start, end = sl
    rot = d.get("rotation_type")
    if rot is not None and rot not in ROTATION_TYPES:
        raise ConfigError(f"{at}.rotation_type: {rot!r} is not one of {', '.join(ROTATION_TYPES)}")
    quat = d.get("quaternion")
    if quat is None and rot == "quaternion":
        quat = [0, 4]
    if quat is not None:
        if not (
            isinstance(quat, list)
            and len(quat) == 2
            and all(_is_int(v) for v in quat)
            and quat[1] - quat[0] == 4
            and quat[0] >= 0
        ):
            raise ConfigError(f"{at}.quaternion: expected [a, a+4]")
        quat = (quat[0], quat[1])
    order = d.get("quaternion_order", "xyzw")
    if order not in QUATERNION_ORDERS:
        raise ConfigError(f"{at}.quaternion_order: expected one of {', '.join(QUATERNION_ORDERS)}")
    if rot == "quaternion" and (quat != (0, 4) or order != GR00T_QUATERNION_ORDER):
        raise ConfigError(
            f"{at}: rotation_type quaternion means a 4-column key in GR00T's order "
            f"(w, x, y, z); write quaternion_order: {GR00T_QUATERNION_ORDER} (the converter reorders)"
        )
    names = d.get("names")
    if names is not None:
        if not _strings(names):
            raise ConfigError(f"{at}.names: expected a list of strings")
        names = tuple(names)
    absolute = d.get("absolute", True)
    if not isinstance(absolute, bool):
        raise ConfigError(f"{at}.absolute: expected true or false")
    norm_mode, limits = _norm_from_yaml(
        at, d, rot is not None or quat is not None, None if start is None else end - start
    )
    return Slice(
        key=key,
        source=d["from"].strip("/"),
        start=start,
        end=end,
        names=names,
        rotation_type=rot,
        absolute=absolute,
        quaternion=quat,
        quaternion_order=order,
        norm_mode=norm_mode,
        limits=limits,
    )


def _video_from_yaml(at: str, vid: Any) -> VideoOptions:
    """The ``video:`` section's types (whether PyAV takes the values: :func:`l3.video.option_problem`)."""
    if vid is None:
        return VideoOptions()
    if not isinstance(vid, dict):
        raise ConfigError(f"{at}: expected {{codec: NAME, crf: N, preset: NAME, gop: N, pix_fmt: auto}}")
    _unknown(at, vid, VIDEO_KEYS)
    for key in ("codec", "preset"):
        if key in vid and (not isinstance(vid[key], str) or not vid[key]):
            raise ConfigError(f"{at}.{key}: expected a name, got {vid[key]!r}")
    if "crf" in vid and not (_is_int(vid["crf"]) and 0 <= vid["crf"] <= MAX_CRF):
        raise ConfigError(
            f"{at}.crf: expected an integer from 0 to {MAX_CRF} (H.264's quality scale), got {vid['crf']!r}"
        )
    if "gop" in vid and not (_is_int(vid["gop"]) and vid["gop"] >= 1):
        raise ConfigError(
            f"{at}.gop: expected an integer >= 1 (frames from one keyframe to the next), got {vid['gop']!r}"
        )
    if "pix_fmt" in vid and vid["pix_fmt"] not in PIX_FMT_CHOICES:
        raise ConfigError(f"{at}.pix_fmt: expected one of {', '.join(PIX_FMT_CHOICES)}, got {vid['pix_fmt']!r}")
    return VideoOptions(**vid)


def mapping_from_dict(d: Any, where: str = "<config>", prefix: str = "") -> Mapping:
    """Build a Mapping from the parsed YAML document (raises ConfigError naming ``where``, the file, and the key;
    ``prefix``: where the document sits in the file, e.g. ``inputs.platform.``)."""

    def at(key: str) -> str:
        return f"{where}: {prefix}{key}"

    if not isinstance(d, dict):
        raise ConfigError(f"{where}: the top level: expected a YAML mapping")
    _unknown(where, d, TOP_KEYS)
    for req in ("state", "action"):
        if not isinstance(d.get(req), dict) or not d[req]:
            raise ConfigError(f"{at(req)}: must map at least one key to a dataset")
    for key in ("robot_type", "task"):
        if key in d and not isinstance(d[key], str):
            raise ConfigError(f"{at(key)}: expected text, got {d[key]!r}")
    fps = d.get("fps")
    if fps is not None and (not _is_int(fps) or fps <= 0):
        raise ConfigError(f"{at('fps')}: expected a positive integer (or no fps: the inputs' recorded rate)")
    cams = d.get("cameras") or {}
    if not isinstance(cams, dict):
        raise ConfigError(f"{at('cameras')}: expected {{camera_key: dataset path}}")
    for k, v in cams.items():
        if not isinstance(k, str) or not safe_name(k):
            raise ConfigError(
                f"{at('cameras')}: invalid camera key {k!r} (it becomes part of the output "
                "paths: letters, digits, '_', '-', '.', '+'; no '..', no leading '.' or '-')"
            )
        if not isinstance(v, str) or not v.strip("/"):
            raise ConfigError(f"{at('cameras')}.{k}: expected a dataset path, got {v!r}")
    ann = d.get("annotations", dict(DEFAULT_ANNOTATIONS))
    if ann is None:
        ann = {}
    if not isinstance(ann, dict) or any(not isinstance(k, str) or v not in ANNOTATION_KINDS for k, v in ann.items()):
        raise ConfigError(f"{at('annotations')}: expected {{'<source>.<type>': task|validity}}")
    video = _video_from_yaml(at("video"), d.get("video"))
    action_dim = d.get("action_dim")
    if action_dim is not None and (not _is_int(action_dim) or action_dim <= 0):
        raise ConfigError(f"{at('action_dim')}: expected a positive integer")
    state = tuple(_slice_from_yaml(f"{at('state')}.{k}", k, v) for k, v in d["state"].items())
    action = tuple(_slice_from_yaml(f"{at('action')}.{k}", k, v) for k, v in d["action"].items())
    inputs = d.get("inputs") or {}
    if not isinstance(inputs, dict) or not all(isinstance(v, dict) for v in inputs.values()):
        raise ConfigError(f"{at('inputs')}: expected {{format: {{state: ..., action: ..., cameras: ...}}}}")
    for fmt, sub in inputs.items():
        if fmt not in INPUT_FORMATS:
            raise ConfigError(f"{at('inputs')}: unknown input format {fmt!r} (one of {', '.join(INPUT_FORMATS)})")
        if set(sub) - set(PER_INPUT_KEYS):
            raise ConfigError(
                f"{at('inputs')}.{fmt}: only state, action, cameras and action_dim differ per "
                f"input format, got {sorted(set(sub) - set(PER_INPUT_KEYS), key=str)}"
            )
    return Mapping(
        robot_type=d.get("robot_type", "unknown"),
        fps=fps,
        task=d.get("task", ""),
        state=state,
        action=action,
        cameras=tuple(Camera(k, v.strip("/")) for k, v in cams.items()),
        annotations=tuple(ann.items()),
        video=video,
        action_dim=action_dim,
        inputs=tuple(
            (
                fmt,
                mapping_from_dict(
                    {**{k: v for k, v in d.items() if k != "inputs"}, **sub}, where, f"{prefix}inputs.{fmt}."
                ),
            )
            for fmt, sub in inputs.items()
        ),
    )


# --------------------------------------------------------------------------- dump


def mapping_to_dict(m: Mapping) -> dict:
    """The YAML document for a Mapping (inverse of :func:`mapping_from_dict`)."""

    def sl(s: Slice) -> dict:
        if s.zeros is not None:
            return {"zeros": s.zeros, **({"names": list(s.names)} if s.names else {})}
        d: dict[str, Any] = {"from": s.source}
        if s.start is not None or s.end is not None:
            d["slice"] = [s.start or 0, s.end]
        if s.rotation_type:
            d["rotation_type"] = s.rotation_type
        d["absolute"] = s.absolute
        if s.quaternion:
            d["quaternion"] = list(s.quaternion)
            if s.quaternion_order != "xyzw":
                d["quaternion_order"] = s.quaternion_order
        if s.norm_mode:
            d["norm_mode"] = s.norm_mode
        if s.limits:
            d["limits"] = [list(p) for p in s.limits]
        if s.names:
            d["names"] = list(s.names)
        return d

    out: dict[str, Any] = {"robot_type": m.robot_type, **({"fps": m.fps} if m.fps else {}), "task": m.task}
    if m.action_dim is not None:
        out["action_dim"] = m.action_dim
    out["state"] = {s.key: sl(s) for s in m.state}
    out["action"] = {s.key: sl(s) for s in m.action}
    out["cameras"] = {c.key: c.source for c in m.cameras}
    out["annotations"] = dict(m.annotations)
    v = m.video
    out["video"] = {"codec": v.codec, **({"crf": v.crf} if v.crf is not None else {}), "preset": v.preset, "gop": v.gop}
    out["video"]["pix_fmt"] = v.pix_fmt
    if m.inputs:
        out["inputs"] = {
            fmt: {k: v for k, v in mapping_to_dict(sub).items() if k in ("state", "action", "cameras")}
            for fmt, sub in m.inputs
        }
    return out


def dump_mapping(m: Mapping, header: str = "") -> str:
    """YAML text of a Mapping, ready for the user to edit and pass back with ``--config``."""
    text = yaml.safe_dump(mapping_to_dict(m), sort_keys=False, default_flow_style=None, width=100)
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    return "\n".join(lines + [text.rstrip("\n")]) + "\n"


def with_names(m: Mapping, dims: dict[str, int], source_names: dict[str, list[str]] | None = None) -> Mapping:
    """Fill in missing per-dimension names and check given ones against ``dims``.

    ``dims`` maps each source path to its number of columns. Missing names come from
    ``source_names`` (per-column names of a source, e.g. from a platform export's /meta) when it
    has one per column, else ``<key>_<i>``.
    """

    def fix(group: str, s: Slice) -> Slice:
        if s.zeros is not None:
            return s if s.names else replace(s, names=tuple(f"{s.key}_{i}" for i in range(s.zeros)))
        w = s.width(dims[s.source])
        if s.end is not None and s.end > dims[s.source]:
            raise ConfigError(
                f"{group}.{s.key}: slice [{s.start}, {s.end}] exceeds the {dims[s.source]} columns of {s.source}"
            )
        if s.quaternion and s.quaternion[1] > w:
            raise ConfigError(f"{group}.{s.key}: quaternion columns {list(s.quaternion)} exceed its width {w}")
        if s.limits and len(s.limits) != w:
            raise ConfigError(f"{group}.{s.key}.limits: {len(s.limits)} pair(s) for its {w} column(s)")
        if s.rotation_type and w != ROTATION_WIDTHS[s.rotation_type]:
            raise ConfigError(
                f"{group}.{s.key}: rotation_type {s.rotation_type} needs a key of exactly "
                f"{ROTATION_WIDTHS[s.rotation_type]} columns, this one has {w} (split the pose: "
                "position and rotation as separate keys)"
            )
        given = (source_names or {}).get(s.source)
        if s.names is None and given is not None and len(given) == dims[s.source]:
            return replace(s, names=tuple(given[slice(s.start, s.end)]))
        if s.names is None:
            return replace(s, names=tuple(f"{s.key}_{i}" for i in range(w)))
        if len(s.names) != w:
            raise ConfigError(f"{group}.{s.key}: {len(s.names)} names for {w} columns")
        return s

    return replace(m, state=tuple(fix("state", s) for s in m.state), action=tuple(fix("action", s) for s in m.action))


def resolve_fps(config_fps: int | None, rates: dict[str, float]) -> tuple[int, list[str]]:
    """The dataset's fps from the config and the rates inputs say they were recorded at (``rates``: file ->
    Hz, only inputs that state one), plus notices. Without a config fps the inputs' one rate is used (inputs
    at different rates are refused: nothing says how to reconcile them); with one, inputs recorded at
    another rate get a notice (their frames are relabelled, not resampled)."""
    if config_fps is not None:
        return config_fps, [
            f"notice: {file}: recorded at {rate:g} Hz, written at fps {config_fps} from the config "
            "(frames relabelled, not resampled)"
            for file, rate in rates.items()
            if abs(rate - config_fps) > 1e-6 * config_fps
        ]
    if not rates:
        return DEFAULT_FPS, [f"notice: no input states its rate: fps {DEFAULT_FPS} (set fps: in the config)"]
    distinct: dict[float, str] = {}
    for file, rate in rates.items():
        distinct.setdefault(round(rate, 6), file)
    if len(distinct) > 1:
        seen = ", ".join(f"{file} at {rate:g} Hz" for rate, file in distinct.items())
        raise ConfigError(
            f"inputs recorded at different rates cannot share one dataset: {seen}; set fps: N in "
            "the config to write them all at N frames per second (frames are relabelled, not resampled)"
        )
    rate, file = next(iter(distinct.items()))
    if abs(rate - round(rate)) > 1e-6 * rate or round(rate) <= 0:
        raise ConfigError(
            f"{file}: recorded at {rate:g} Hz, not a whole number of frames per second; set fps: N in the config"
        )
    return round(rate), []


# --------------------------------------------------------------------------- mixed inputs


def reconcile(mappings: dict[str, Mapping], origins: dict[str, str]) -> Mapping:
    """The one dataset layout for the mappings of several input formats (names already filled in).

    A LeRobot dataset has one ``observation.state`` / ``action`` layout, so every format's mapping
    must have the same state and action keys, in the same order, with the same widths, and the same
    camera keys; otherwise ConfigError names both inputs and their layouts. Names, rotation_type and
    absolute of a key come from the first format that reads it (not ``zeros`` padding).
    ``origins`` names an example file per format for the message.
    """
    fmts = list(mappings)
    first = mappings[fmts[0]]
    if len(fmts) == 1:
        return first

    def layout(m: Mapping, group: str) -> str:
        slices = m.state if group == "state" else m.action
        total = sum(len(s.names or ()) for s in slices)
        return f"width {total} [" + ", ".join(f"{s.key}:{len(s.names or ())}" for s in slices) + "]"

    def shape(m: Mapping, group: str) -> list[tuple[str, int]]:
        return [(s.key, len(s.names or ())) for s in (m.state if group == "state" else m.action)]

    for fmt in fmts[1:]:
        m = mappings[fmt]
        for group in ("state", "action"):
            if shape(m, group) != shape(first, group):
                raise ConfigError(
                    f"inputs with different {group} layouts cannot share one dataset: {fmts[0]} input "
                    f"{origins[fmts[0]]} has {group} {layout(first, group)}, {fmt} input {origins[fmt]} has "
                    f"{group} {layout(m, group)}. A dataset has one observation.state/action layout: give "
                    "--config with an 'inputs:' section per format that maps each onto the same keys and "
                    "widths (pad a missing key with {zeros: N}); see docs/l3_real.md"
                )
        if [c.key for c in m.cameras] != [c.key for c in first.cameras]:
            raise ConfigError(
                f"inputs with different cameras cannot share one dataset: {fmts[0]} input {origins[fmts[0]]} "
                f"has {[c.key for c in first.cameras]}, {fmt} input {origins[fmt]} has {[c.key for c in m.cameras]}; "
                "map the same camera keys for every format in the config's 'inputs:' sections"
            )

    def merged(group: str) -> tuple[Slice, ...]:
        out = []
        for i, s in enumerate(first.state if group == "state" else first.action):
            real = [(mappings[f].state if group == "state" else mappings[f].action)[i] for f in fmts]
            src = next((r for r in real if r.zeros is None), s)
            out.append(replace(src, source=s.source, start=s.start, end=s.end, zeros=s.zeros))
        return tuple(out)

    return replace(first, state=merged("state"), action=merged("action"), inputs=())
