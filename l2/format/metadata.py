"""What a recording says about its env beside ``env_name`` (``docs/l2-hdf5-schema.md``): the robot, the control rate,
the cameras, the names of the columns and which datasets are relative, as keys of ``data.attrs["env_args"]``
(:data:`l2.format.schema.METADATA_KEYS`). All are optional: Isaac Lab's own recorder, and older files, write none.

:func:`problems` checks them (the validator), :func:`read` takes what is well formed (the readers), :func:`fit_problems`
checks them against a demo's datasets, :func:`agreed` keeps what several files say alike (a merge).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from l2.format.schema import (
    ENV_ARGS_CAMERAS,
    ENV_ARGS_COLUMNS,
    ENV_ARGS_CONTROL_HZ,
    ENV_ARGS_RELATIVE,
    ENV_ARGS_ROBOT,
    METADATA_KEYS,
    OBS,
)


@dataclass(frozen=True)
class Metadata:
    """The well-formed part of a file's metadata (empty for a file that records none)."""

    robot: str | None = None
    control_hz: float | None = None
    cameras: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    """Camera term -> (H, W, C) of its frames."""
    columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Dataset path (``actions``, ``obs/<term>``) -> one name per column."""
    relative: frozenset[str] = frozenset()


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _names(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) and v for v in value)


def _shape(value: object) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 3
        and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
    )


def _path(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip("/"))


def problems(env_args: Mapping) -> list[str]:
    """What is wrong with the metadata keys of ``env_args`` (those present), one message each."""
    out = []
    if ENV_ARGS_ROBOT in env_args and not (isinstance(r := env_args[ENV_ARGS_ROBOT], str) and r.strip()):
        out.append(f'env_args "{ENV_ARGS_ROBOT}" must be a non-empty name, got {r!r}')
    if ENV_ARGS_CONTROL_HZ in env_args and not (_is_number(hz := env_args[ENV_ARGS_CONTROL_HZ]) and hz > 0):
        out.append(f'env_args "{ENV_ARGS_CONTROL_HZ}" must be a positive number, got {hz!r}')
    cams = env_args.get(ENV_ARGS_CAMERAS)
    if cams is not None and not (isinstance(cams, dict) and all(_path(k) and _shape(v) for k, v in cams.items())):
        out.append(f'env_args "{ENV_ARGS_CAMERAS}" must map camera terms to [H, W, C], got {cams!r}')
    cols = env_args.get(ENV_ARGS_COLUMNS)
    if cols is not None and not (isinstance(cols, dict) and all(_path(k) and _names(v) for k, v in cols.items())):
        out.append(f'env_args "{ENV_ARGS_COLUMNS}" must map dataset paths to lists of names, got {cols!r}')
    rel = env_args.get(ENV_ARGS_RELATIVE)
    if rel is not None and not (isinstance(rel, list) and all(_path(p) for p in rel)):
        out.append(f'env_args "{ENV_ARGS_RELATIVE}" must be a list of dataset paths, got {rel!r}')
    return out


def read(env_args: Mapping) -> Metadata:
    """The well-formed metadata of ``env_args``; what is malformed is left out (the validator names it)."""
    robot = env_args.get(ENV_ARGS_ROBOT)
    hz = env_args.get(ENV_ARGS_CONTROL_HZ)
    cams = env_args.get(ENV_ARGS_CAMERAS)
    cols = env_args.get(ENV_ARGS_COLUMNS)
    rel = env_args.get(ENV_ARGS_RELATIVE)
    return Metadata(
        robot=robot.strip() if isinstance(robot, str) and robot.strip() else None,
        control_hz=float(hz) if _is_number(hz) and hz > 0 else None,
        cameras={k: tuple(v) for k, v in cams.items() if _path(k) and _shape(v)} if isinstance(cams, dict) else {},
        columns={k.strip("/"): tuple(v) for k, v in cols.items() if _path(k) and _names(v)}
        if isinstance(cols, dict)
        else {},
        relative=frozenset(p.strip("/") for p in rel if _path(p)) if isinstance(rel, list) else frozenset(),
    )


def fit_problems(meta: Metadata, shapes: Mapping[str, tuple[int, ...]]) -> list[tuple[str, str]]:
    """``(path, message)`` for each column list or camera that does not fit a demo's datasets (``shapes``: dataset
    path relative to the demo group -> its shape)."""
    out = []
    for path, names in meta.columns.items():
        shape = shapes.get(path)
        if shape is None:
            out.append((path, f'env_args "{ENV_ARGS_COLUMNS}" names the columns of {path}, which the demo lacks'))
        elif len(shape) != 2 or shape[1] != len(names):
            out.append((path, f'env_args "{ENV_ARGS_COLUMNS}" gives {len(names)} names for {path} of shape {shape}'))
    for cam, hwc in meta.cameras.items():
        path = f"{OBS}/{cam}"
        shape = shapes.get(path)
        if shape is None or tuple(shape[1:]) != hwc:
            got = "which the demo lacks" if shape is None else f"whose frames are {tuple(shape[1:])}"
            out.append((path, f'env_args "{ENV_ARGS_CAMERAS}" says {cam} is {list(hwc)}, {got}'))
    return out


def agreed(env_args: Iterable[Mapping]) -> dict:
    """The metadata that files say alike: each key (each entry of ``cameras`` and ``columns``) that no two of the
    files that have it disagree on. A file without a key does not count against it."""
    docs = list(env_args)
    out: dict = {}
    for key in METADATA_KEYS:
        values = [d[key] for d in docs if key in d]
        if not values:
            continue
        if all(isinstance(v, dict) for v in values):
            entries = {}
            for name in dict.fromkeys(n for v in values for n in v):
                seen = [v[name] for v in values if name in v]
                if all(s == seen[0] for s in seen):
                    entries[name] = seen[0]
            if entries:
                out[key] = entries
        elif all(_comparable(key, v) == _comparable(key, values[0]) for v in values):
            out[key] = values[0]
    return out


def _comparable(key: str, value: object) -> object:
    """``value`` as compared between files: the relative paths are a set."""
    if key == ENV_ARGS_RELATIVE and isinstance(value, list):
        return sorted(map(str, value))
    return value
