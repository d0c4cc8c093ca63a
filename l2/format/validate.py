"""Validator of L2 HDF5 demonstration files against ``docs/l2-hdf5-schema.md``.

Needs only h5py, numpy and the standard library (no Isaac Lab)::

    python -m l2.format.validate data/demos/*.hdf5 [--json] [--action-dim N]

Datasets are scanned in blocks of rows, so multi-GB files are never loaded whole.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import h5py
import numpy as np

from l2.format import journal
from l2.format import metadata as file_metadata
from l2.format.cli_args import Parser, existing_file, non_negative_int
from l2.format.hdf5_guard import read_through, read_through_all
from l2.format.l2file import (
    READ_ERRORS,
    Array,
    EpisodeData,
    one_line,
    parse_env_args,
    read_episode_data,
    text_attr,
)
from l2.format.schema import (
    ACTIONS,
    ATTR_ENV_ARGS,
    ATTR_FORMAT_VERSION,
    ATTR_INSTRUCTION,
    ATTR_NUM_SAMPLES,
    ATTR_SCENE,
    ATTR_SEED,
    ATTR_SUCCESS,
    ATTR_TOTAL,
    DATA_GROUP,
    EE_QUAT_SLICE,
    ENV_ARGS_ACTION_SPACE,
    ENV_ARGS_TYPE,
    FORMAT_VERSION,
    JOINT_POSITION_ACTIONS,
    LEGACY_EPISODES_GROUP,
    LIFT_ACTION_DIM,
    MASK_GROUP,
    OBS,
    QUAT_NORM_TOL,
    demo_index,
)

CHUNK_BYTES = 32 * 2**20
"""Rows of a dataset are read in blocks of about this many bytes."""

MSG_LEGACY = "legacy WXYZ quaternions (no format_version); expected format_version=1 (XYZW, scalar last)"
MSG_EPISODES_LAYOUT = "uses the abandoned episodes/<i> layout; expected data/demo_<i>"
MSG_FLAT_OBS = "obs is one flat dataset; expected a group of named terms (concatenate_terms=False)"


@dataclass(frozen=True)
class Violation:
    """One broken rule (or warning) at an HDF5 path of a file."""

    file: str
    path: str
    message: str

    def __str__(self) -> str:
        return one_line(f"{self.file}:{self.path}: {self.message}")


@dataclass
class FileReport:
    """Result of validating one file; ``ok`` when it has no violations (warnings allowed)."""

    file: str
    violations: list[Violation] = field(default_factory=list)
    warnings: list[Violation] = field(default_factory=list)
    episodes: int = 0
    successes: int = 0
    samples: int = 0
    env_name: str | None = None
    format_version: int | None = None

    @property
    def ok(self) -> bool:
        return not self.violations

    def to_dict(self) -> dict:
        """JSON-serialisable form used by ``--json``."""
        return {
            "file": self.file,
            "ok": self.ok,
            "violations": [{"path": v.path, "message": v.message} for v in self.violations],
            "warnings": [{"path": w.path, "message": w.message} for w in self.warnings],
            "episodes": self.episodes,
            "successes": self.successes,
            "samples": self.samples,
            "env_name": self.env_name,
            "format_version": self.format_version,
        }

    def summary(self) -> str:
        """The one-line summary printed for a valid file."""
        env_name = self.env_name if self.env_name else '""'
        return (
            f"{self.file}: OK, {self.episodes} episodes ({self.successes} success), "
            f"{self.samples} samples, env_name={env_name}"
        )


Report = Callable[[str, str], None]  # (hdf5 path, message)


FROM_FILE = "from-file"
"""``action_dim`` of :func:`validate_file`: what the file's ``env_args`` says its actions are."""


# --------------------------------------------------------------------------------------------- helpers
def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_bool(value: object) -> bool:
    return isinstance(value, (bool, np.bool_))


def _describe(value: object) -> str:
    return f"{value!s} ({type(value).__name__})"


def _attr_or_none(obj: h5py.HLObject, key: str) -> object | None:
    """Attribute value, or None when missing or unreadable (for counting; checks report the cause)."""
    try:
        return obj.attrs.get(key)
    except READ_ERRORS:
        return None


def _row_blocks(dset: h5py.Dataset) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(first_row, rows)`` blocks of about CHUNK_BYTES."""
    row_bytes = dset.dtype.itemsize * math.prod(dset.shape[1:])
    step = max(1, CHUNK_BYTES // max(1, row_bytes))
    if dset.chunks:  # align blocks with storage chunks so each chunk is decompressed once
        step = max(dset.chunks[0], step - step % dset.chunks[0])
    for start in range(0, dset.shape[0], step):
        yield start, dset[start : start + step]


def _bad_rows(values: Array, is_bad: Callable[[np.ndarray], np.ndarray]) -> tuple[int, int]:
    """(number of rows flagged by ``is_bad``, first flagged row or -1)."""
    if isinstance(values, np.ndarray):  # in memory: one block
        rows = np.flatnonzero(is_bad(values))
        return rows.size, int(rows[0]) if rows.size else -1
    count, first = 0, -1
    for start, block in _row_blocks(values):
        rows = np.flatnonzero(is_bad(block))
        if rows.size:
            count += rows.size
            first = start + int(rows[0]) if first < 0 else first
    return count, first


def _non_finite(block: np.ndarray) -> np.ndarray:
    finite = np.isfinite(block)
    if finite.all():
        return np.zeros(len(block), dtype=bool)
    return ~finite.all(axis=tuple(range(1, block.ndim)))


def _off_unit_quat(block: np.ndarray) -> np.ndarray:
    # NaN norms compare False here: NaN rows are reported by the finiteness check instead.
    q = block[:, EE_QUAT_SLICE].astype(np.float64)
    norm = np.sqrt(np.add.reduce(q * q, axis=1))  # np.linalg.norm's sum, without its per-call checks
    return np.abs(norm - 1.0) > QUAT_NORM_TOL


# --------------------------------------------------------------------------------------------- episode
def validate_episode(
    file: str, episode: h5py.Group | EpisodeData, action_dim: int | None = LIFT_ACTION_DIM
) -> list[Violation]:
    """Violations of one ``data/demo_<i>`` episode: its group, or what :func:`read_episode_data` read from it.

    The one episode check, self-contained (the CLI and L3's reader check each episode with it).
    ``action_dim=None`` skips the action width and quaternion checks. Other entries Isaac Lab
    writes (``initial_state/``, ``states/``, ``processed_actions``) are not checked.
    """
    file = os.fspath(file)
    out: list[Violation] = []

    def bad(path: str, message: str) -> None:
        out.append(Violation(file, path, message))

    path = episode.path if isinstance(episode, EpisodeData) else episode.name
    try:
        data = episode if isinstance(episode, EpisodeData) else read_episode_data(episode)
        _check_episode(data, action_dim, bad)
    except READ_ERRORS as exc:  # corrupt data must be reported, never raised
        bad(path or "?", f"cannot read episode: {exc}")
    return out


def _check_attrs(path: str, attrs: Mapping[str, object], bad: Report) -> tuple[int | None, str]:
    """Check num_samples, success and seed; return (num_samples or None, its label)."""
    length, length_label = None, ""
    if ATTR_NUM_SAMPLES not in attrs:
        bad(path, "missing num_samples attr")
    elif _is_int(n := attrs[ATTR_NUM_SAMPLES]) and n >= 0:
        length, length_label = int(n), f"num_samples={int(n)}"
    else:
        bad(path, f"num_samples must be a non-negative integer, got {_describe(n)}")

    if ATTR_SUCCESS not in attrs:
        bad(path, "missing success attr (required: L3 filters on it; the env needs a 'success' termination term)")
    elif not _is_bool(s := attrs[ATTR_SUCCESS]):
        bad(path, f"success must be a bool, got {_describe(s)}")
    if ATTR_SEED in attrs and not _is_int(seed := attrs[ATTR_SEED]):
        bad(path, f"seed must be an integer, got {_describe(seed)}")
    if ATTR_INSTRUCTION in attrs and not text_attr(attrs[ATTR_INSTRUCTION]).strip():
        bad(path, f"instruction must be non-empty UTF-8 text, got {_describe(attrs[ATTR_INSTRUCTION])}")
    if ATTR_SCENE in attrs:
        try:
            if not isinstance(json.loads(text_attr(attrs[ATTR_SCENE])), dict):
                raise ValueError
        except ValueError:
            bad(path, f"scene must be a JSON object, got {_describe(attrs[ATTR_SCENE])}")
    return length, length_label


def _check_episode(data: EpisodeData, action_dim: int | None, bad: Report) -> None:
    path = data.path
    length, length_label = _check_attrs(path, data.attrs, bad)

    if data.actions is None:
        bad(
            f"{path}/{ACTIONS}",
            "missing actions dataset" if data.actions_kind == "missing" else "actions must be a dataset, got a group",
        )
    else:
        _check_actions(f"{path}/{ACTIONS}", data.actions, length, action_dim, bad)
        if length is None and data.actions.ndim >= 1:  # still check obs lengths against something
            length, length_label = data.actions.shape[0], f"len(actions)={data.actions.shape[0]}"

    if data.obs_kind == "missing":
        bad(f"{path}/{OBS}", "missing obs group")
    elif data.obs_kind == "dataset":
        bad(f"{path}/{OBS}", MSG_FLAT_OBS)
    else:
        if not data.obs:
            bad(f"{path}/{OBS}", "obs group has no terms")
        for name, term in data.obs.items():
            _check_obs_term(f"{path}/{name}", term, length, length_label, bad)


def _check_actions(name: str, actions: Array, length: int | None, action_dim: int | None, bad: Report) -> None:
    if actions.ndim != 2:
        bad(name, f"actions must be 2-D (T, action_dim), got shape {actions.shape}")
        return
    rows, width = actions.shape
    if length is not None and rows != length:
        bad(name, f"actions has {rows} rows but num_samples={length}")
    if action_dim is not None and width != action_dim:
        bad(name, f"actions width is {width}; expected action_dim={action_dim}")
    if not np.issubdtype(actions.dtype, np.floating):
        bad(name, f"actions dtype is {actions.dtype}; expected float32")
        return
    count, first = _bad_rows(actions, _non_finite)
    if count:
        bad(name, f"NaN/inf in {count} rows of actions (first at row {first})")
    if action_dim is not None and width == action_dim and action_dim >= EE_QUAT_SLICE.stop:
        count, first = _bad_rows(actions, _off_unit_quat)
        if count:
            norm = float(np.linalg.norm(actions[first, EE_QUAT_SLICE].astype(np.float64)))
            bad(
                name,
                f"quaternion actions[:, 3:7] is not unit norm (|norm - 1| > {QUAT_NORM_TOL}) in {count} rows "
                f"(first at row {first}, norm {norm:.6g})",
            )


def _check_obs_term(name: str, term: Array, length: int | None, length_label: str, bad: Report) -> None:
    if term.ndim == 0:
        bad(name, "obs term is a scalar; expected one row per step (T, ...)")
        return
    if length is not None and term.shape[0] != length:
        bad(name, f"obs term has {term.shape[0]} rows; expected {length_label}")
    if np.issubdtype(term.dtype, np.floating):
        count, first = _bad_rows(term, _non_finite)
        if count:
            bad(name, f"NaN/inf in {count} rows of obs term (first at row {first})")


# --------------------------------------------------------------------------------------------- file
def validate_file(
    path: str | os.PathLike, action_dim: int | None | str = FROM_FILE, expect_obs: Sequence[str] = ()
) -> FileReport:
    """Check one L2 HDF5 file against every rule of the schema; never raises for bad input.

    ``action_dim``: the width ``actions`` must have (None: any); :data:`FROM_FILE`: the IK-absolute pose's 8, with
    unit quaternions, unless the file's ``env_args`` says its actions are joint positions (then any width).
    ``expect_obs``: obs terms every episode must have (e.g. the cameras ``table_cam``, ``wrist_cam``)."""
    file = os.fspath(path)
    report = FileReport(file)
    if not os.path.isfile(file):
        problem = "not a regular file" if os.path.exists(file) else "no such file"
        report.violations.append(Violation(file, "/", problem))
        return report
    try:
        journal.recover(file)
    except OSError as exc:
        report.violations.append(Violation(file, "/", exc.strerror))
        return report
    problem = read_through(file)
    if problem is not None:
        report.violations.append(Violation(file, "/", problem))
        return report
    try:
        h5 = h5py.File(file, "r")
    except READ_ERRORS as exc:
        report.violations.append(Violation(file, "/", f"not a readable HDF5 file: {exc}"))
        return report
    try:
        with h5:
            _check_file(h5, report, action_dim, expect_obs)
    except READ_ERRORS as exc:  # truncated/corrupt content found while walking the file
        report.violations.append(Violation(file, "/", f"corrupt or unreadable HDF5 content: {exc}"))
    return report


def _check_file(h5: h5py.File, report: FileReport, action_dim: int | None, expect_obs: Sequence[str]) -> None:
    def bad(path: str, message: str) -> None:
        report.violations.append(Violation(report.file, path, message))

    def warn(path: str, message: str) -> None:
        report.warnings.append(Violation(report.file, path, message))

    version = h5.attrs.get(ATTR_FORMAT_VERSION)
    if version is None:
        bad("/", MSG_LEGACY)
    elif not _is_int(version):
        bad("/", f"format_version must be the integer {FORMAT_VERSION}, got {_describe(version)}")
    else:
        report.format_version = int(version)
        if version == 0:
            bad("/", f"format_version=0: legacy WXYZ quaternions; expected format_version={FORMAT_VERSION}")
        elif version != FORMAT_VERSION:
            bad("/", f"unsupported format_version={version}; expected {FORMAT_VERSION}")

    data = h5.get(DATA_GROUP)
    if not isinstance(data, h5py.Group):
        if data is None and LEGACY_EPISODES_GROUP in h5:
            bad(f"/{LEGACY_EPISODES_GROUP}", MSG_EPISODES_LAYOUT)
        elif data is None:
            bad(f"/{DATA_GROUP}", "missing /data group")
        else:
            bad(data.name, "/data is a dataset; expected a group of demo_<i> episodes")
        return
    if LEGACY_EPISODES_GROUP in h5:
        warn(f"/{LEGACY_EPISODES_GROUP}", "abandoned episodes/ group ignored; episodes are read from data/demo_<i>")

    report.env_name = _check_env_args(data, bad, warn)
    meta = _check_metadata(data, bad)
    if action_dim == FROM_FILE:
        action_dim = None if _action_space(data) == JOINT_POSITION_ACTIONS else LIFT_ACTION_DIM

    indexed = []
    for name in data:
        index = demo_index(name)
        if index is None:
            bad(f"{data.name}/{name}", "episode group name is not demo_<i> (i = 0, 1, 2, ... without leading zeros)")
        else:
            indexed.append((index, name))
    indexed.sort()  # numeric order: h5py lists demo_10 before demo_2
    missing = sorted(set(range(len(indexed))) - {i for i, _ in indexed})
    if missing:
        shown = ", ".join(f"demo_{i}" for i in missing[:5]) + (", ..." if len(missing) > 5 else "")
        bad(data.name, f"episode indices are not 0..{len(indexed) - 1} without gaps: missing {shown}")
    if not indexed:
        warn(data.name, "no episodes")

    samples_known = True
    for _, name in indexed:
        demo = data.get(name)
        if not isinstance(demo, h5py.Group):
            bad(f"{data.name}/{name}", "episode is not a group")
            samples_known = False
            continue
        report.violations += validate_episode(report.file, demo, action_dim)
        _check_metadata_fits(demo, meta, bad)
        for term in expect_obs:
            if not isinstance(demo.get(f"{OBS}/{term}"), h5py.Dataset):
                bad(f"{demo.name}/{OBS}/{term}", "missing obs term (required by --expect-obs)")
        report.episodes += 1
        n = _attr_or_none(demo, ATTR_NUM_SAMPLES)
        if _is_int(n):
            report.samples += int(n)
        else:
            samples_known = False
        if _is_bool(s := _attr_or_none(demo, ATTR_SUCCESS)) and s:
            report.successes += 1

    _check_masks(h5, {name for _, name in indexed}, bad)

    total = data.attrs.get(ATTR_TOTAL)
    if total is None:
        bad(data.name, "missing total attr (sum of num_samples over all episodes)")
    elif not _is_int(total):
        bad(data.name, f"total must be an integer, got {_describe(total)}")
    elif samples_known and total != report.samples:
        bad(
            data.name,
            f"total={int(total)} but the episodes' num_samples sum to {report.samples} "
            "(total counts transitions, not episodes)",
        )


def _check_masks(h5: h5py.File, demos: set[str], bad: Report) -> None:
    """robomimic's filter keys ``mask/<name>``, when present: 1-D byte-string arrays of existing demos, no repeats."""
    mask = h5.get(MASK_GROUP)
    if mask is None:
        return
    if not isinstance(mask, h5py.Group):
        bad(f"/{MASK_GROUP}", "mask must be a group of filter keys (mask/<name>)")
        return
    for key in sorted(mask):
        dset = mask.get(key)
        path = f"/{MASK_GROUP}/{key}"
        if not isinstance(dset, h5py.Dataset) or dset.ndim != 1 or dset.dtype.kind != "S":
            bad(path, "filter key must be a 1-D dataset of demo names as byte strings (as robomimic writes them)")
            continue
        names = [n.decode("utf-8", "replace") for n in dset[()]]
        unknown = [n for n in names if n not in demos]
        if unknown:
            bad(path, f"names {len(unknown)} demo(s) not in /data: {', '.join(unknown[:5])}")
        if len(set(names)) != len(names):
            bad(path, "names a demo more than once")


def _action_space(data: h5py.Group) -> str | None:
    """``env_args``' action space (None when it has none, or cannot be read: :func:`_check_env_args` says why)."""
    try:
        env_args = parse_env_args(data.attrs.get(ATTR_ENV_ARGS))
    except (ValueError, TypeError):
        return None
    return env_args.get(ENV_ARGS_ACTION_SPACE) if isinstance(env_args, dict) else None


def _check_env_args(data: h5py.Group, bad: Report, warn: Report) -> str | None:
    """Check ``data.attrs["env_args"]``; return its env_name when it has a string one."""
    raw = data.attrs.get(ATTR_ENV_ARGS)
    if raw is None:
        bad(data.name, f'missing env_args attr (JSON with "env_name" and "type": {ENV_ARGS_TYPE})')
        return None
    try:
        env_args = parse_env_args(raw)
    except ValueError as exc:
        bad(data.name, str(exc))
        return None
    if "type" not in env_args:
        bad(data.name, f'env_args has no "type"; expected {ENV_ARGS_TYPE} (robomimic gym env)')
    elif env_args["type"] != ENV_ARGS_TYPE:
        bad(data.name, f'env_args "type" is {env_args["type"]!r}; expected {ENV_ARGS_TYPE} (robomimic gym env)')
    if "env_name" not in env_args:
        bad(data.name, 'env_args has no "env_name"')
        return None
    env_name = env_args["env_name"]
    if not isinstance(env_name, str):
        bad(data.name, f'env_args "env_name" must be a string, got {env_name!r}')
        return None
    if not env_name:
        warn(data.name, 'env_args "env_name" is empty (Isaac Lab writes "" when the env cfg sets none)')
    return env_name


def _check_metadata(data: h5py.Group, bad: Report) -> file_metadata.Metadata:
    """Check the recording's metadata in ``env_args`` (robot, control_hz, cameras, columns, relative), those keys
    present; return their well-formed part."""
    try:
        env_args = parse_env_args(data.attrs.get(ATTR_ENV_ARGS))
    except (ValueError, TypeError):
        return file_metadata.Metadata()  # _check_env_args says why
    for message in file_metadata.problems(env_args):
        bad(data.name, message)
    return file_metadata.read(env_args)


def _check_metadata_fits(demo: h5py.Group, meta: file_metadata.Metadata, bad: Report) -> None:
    """The metadata's column names and camera shapes against one demo's datasets."""
    if not meta.columns and not meta.cameras:
        return
    paths = [*meta.columns, *(f"{OBS}/{cam}" for cam in meta.cameras)]
    shapes = {p: d.shape for p in paths if isinstance(d := demo.get(p), h5py.Dataset)}
    for path, message in file_metadata.fit_problems(meta, shapes):
        bad(f"{demo.name}/{path}", message)


# --------------------------------------------------------------------------------------------- CLI
def _parser() -> Parser:
    parser = Parser(
        prog="python -m l2.format.validate",
        description="Check L2 demonstration HDF5 files against the L2 schema "
        "(format_version, data/demo_<i> layout, env_args, num_samples/total, success, "
        "obs terms, action width, unit quaternions, no NaN/inf).",
        epilog="Exit status: 0 all files valid (warnings allowed), 1 at least one violation, 2 usage error or a "
        "path that is missing or not a file (one line, nothing checked).",
    )
    parser.add_argument(
        "files", nargs="+", type=existing_file, metavar="FILE", help="L2 HDF5 file(s), e.g. data/demos/*.hdf5"
    )
    parser.add_argument("--json", action="store_true", help="print a JSON list with one report per file")
    parser.add_argument(
        "--action-dim",
        type=non_negative_int,
        default=None,
        metavar="N",
        help=f"expected width of actions (default: {LIFT_ACTION_DIM}, the lift IK-abs pose xyz + quat xyzw + "
        "gripper, or any for a file whose env_args says its actions are joint positions); the quaternion check on "
        "actions[:, 3:7] runs only when N >= 7; 0 skips both checks",
    )
    parser.add_argument(
        "--expect-obs",
        default="",
        metavar="TERM[,TERM]",
        help="obs terms every episode must have, e.g. table_cam,wrist_cam (files recorded with cameras)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    expect_obs = [t for t in args.expect_obs.split(",") if t]
    read_through_all(args.files)
    action_dim = FROM_FILE if args.action_dim is None else (args.action_dim or None)
    reports = [validate_file(f, action_dim, expect_obs) for f in args.files]
    if args.json:
        print(json.dumps([r.to_dict() for r in reports], indent=2))
    else:
        for report in reports:
            if report.ok:
                print(report.summary())
            for violation in report.violations:
                print(violation)
            for warning in report.warnings:
                print(f"warning: {warning}")
            if not report.ok:
                print(f"{report.file}: INVALID, {len(report.violations)} violation(s)", file=sys.stderr)
    return 0 if all(r.ok for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
