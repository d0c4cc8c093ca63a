"""The one reader of a dataset's ``meta/`` files (the writer is :class:`l3.writer.MetaWriter`): ``info.json``,
``stats.json``, ``modality.json`` and the JSON-lines files, for the validator, the inspection report and the v3.0
conversion alike. Paths are relative to the dataset root, as :mod:`l3.layout` names them.

Each file of :data:`SHAPES` is checked for the shape its readers rely on (objects where they read fields, the
fields' types), so that a document or row that is valid JSON of another shape is refused as a :class:`MetaError`
naming the file, the line and the field, never met later as an ``AttributeError``. What the values mean (totals,
indices, slices) is :mod:`l3.validate`'s to check."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from l3 import layout

BLANK_LINE = "blank line (GR00T loaders crash on it)"


class MetaError(Exception):
    """A meta file that is missing or does not parse: ``where`` is its path relative to the root (with ``:line``
    for one line of a JSON-lines file)."""

    def __init__(self, root: Path, rel: str, message: str, line: int | None = None):
        self.root, self.rel, self.line, self.message = Path(root), rel, line, message
        self.where = rel if line is None else f"{rel}:{line}"
        super().__init__(f"{self.root / rel}{'' if line is None else f':{line}'}: {message}")

    @property
    def missing(self) -> bool:
        return self.message == "missing"


def _text(root: Path, rel: str) -> str:
    p = Path(root) / rel
    if not p.is_file():
        raise MetaError(root, rel, "missing")
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise MetaError(root, rel, f"not valid UTF-8 ({exc})") from None


def read_json(root: str | Path, rel: str) -> Any:
    """The parsed JSON file ``root/rel``; MetaError when missing, not JSON or not of its shape (:data:`SHAPES`)."""
    text = _text(Path(root), rel)
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise MetaError(Path(root), rel, f"not valid JSON ({exc})") from None
    problem = SHAPES[rel](doc) if rel in SHAPES else None
    if problem is not None:
        raise MetaError(Path(root), rel, problem)
    return doc


def read_jsonl(root: str | Path, rel: str) -> tuple[list[Any], list[MetaError]]:
    """The rows of the JSON-lines file ``root/rel`` and one MetaError per line that is blank (:data:`BLANK_LINE`),
    not JSON or not of its shape (:data:`SHAPES`: such rows are left out); MetaError raised when the file is
    missing or not UTF-8."""
    root = Path(root)
    text = _text(root, rel)
    rows, problems = [], []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the end of the last line
    for n, line in enumerate(lines, 1):
        if not line.strip():
            problems.append(MetaError(root, rel, BLANK_LINE, n))
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            problems.append(MetaError(root, rel, f"not valid JSON ({exc})", n))
            continue
        problem = SHAPES[rel](row) if rel in SHAPES else None
        if problem is not None:
            problems.append(MetaError(root, rel, problem, n))
        else:
            rows.append(row)
    return rows, problems


def read_jsonl_strict(root: str | Path, rel: str) -> list[Any]:
    """The rows of ``root/rel``; the first problem of :func:`read_jsonl` is raised."""
    rows, problems = read_jsonl(root, rel)
    if problems:
        raise problems[0]
    return rows


# --------------------------------------------------------------------------------------------- shapes
def _is_int(v: Any, low: int = 0) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= low


def _numbers(v: Any) -> bool:
    """A number or a bool, or a rectangular array (nested lists) of them (``next.done``'s statistics are bools)."""
    if not isinstance(v, (bool, int, float, list)):
        return False
    try:
        return np.asarray(v).dtype.kind in "biuf"  # not object (None, text, a mix)
    except (ValueError, OverflowError):  # ragged, or an integer past int64
        return False


KINDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "count": (_is_int, "an integer >= 0"),
    "positive": (lambda v: _is_int(v, 1), "an integer >= 1"),
    "rate": (lambda v: not isinstance(v, bool) and isinstance(v, (int, float)) and 0 < v < math.inf, "a number > 0"),
    "text": (lambda v: isinstance(v, str), "text"),
    "text?": (lambda v: v is None or isinstance(v, str), "text or null"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "object": (lambda v: isinstance(v, dict), "a JSON object"),
    "object?": (lambda v: v is None or isinstance(v, dict), "a JSON object or null"),
    "texts": (lambda v: isinstance(v, list) and all(isinstance(t, str) for t in v), "a list of text"),
    "shape": (lambda v: isinstance(v, list) and bool(v) and all(_is_int(n) for n in v), "a list of integers >= 0"),
    "numbers": (_numbers, "a number or an array of numbers"),
}
"""The kinds of field a meta file holds: (test, what it must be)."""


def _show(v: Any) -> str:
    text = json.dumps(v)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _fields(doc: Any, kinds: dict[str, str], required: tuple[str, ...] = (), at: str = "") -> str | None:
    """What is wrong with the object ``doc`` (at field path ``at``): not an object, a ``required`` field missing, or a
    field of ``kinds`` (``{field: kind of KINDS}``) of another kind; None when nothing is."""
    if not isinstance(doc, dict):
        return f"{at + ': ' if at else ''}expected a JSON object, got {_show(doc)}"
    prefix = f"{at}." if at else ""
    for name in required:
        if name not in doc:
            return f"{prefix}{name}: missing"
    for name, kind in kinds.items():
        test, what = KINDS[kind]
        if name in doc and not test(doc[name]):
            return f"{prefix}{name}: expected {what}, got {_show(doc[name])}"
    return None


def _each(doc: dict, field: str, check: Callable[[Any, str], str | None]) -> str | None:
    """The first problem of ``check(value, "field.key")`` over the object ``doc[field]`` (when present)."""
    for key, value in (doc.get(field) or {}).items():
        problem = check(value, f"{field}.{key}")
        if problem is not None:
            return problem
    return None


INFO_FIELDS = {
    "codebase_version": "text",
    "robot_type": "text?",
    "fps": "rate",
    "chunks_size": "positive",
    **{k: "count" for k in ("total_episodes", "total_frames", "total_tasks", "total_videos", "total_chunks")},
    "splits": "object",
    "data_path": "text",
    "video_path": "text?",
    "features": "object",
}
PATH_TEMPLATES = {
    "data_path": {"episode_chunk": 0, "episode_index": 0},
    "video_path": {"episode_chunk": 0, "episode_index": 0, "video_key": "k"},
}
"""The fields of a v2.1 info.json that :mod:`l3.layout` formats into paths, and what it formats them with."""


def _feature(f: Any, at: str) -> str | None:
    problem = _fields(f, {"dtype": "text", "shape": "shape", "info": "object?"}, ("dtype", "shape"), at)
    if problem is None and f["dtype"] == "video" and len(f["shape"]) != 3:
        problem = f"{at}.shape: expected [height, width, channels] for a video, got {_show(f['shape'])}"
    return problem


def info_problem(doc: Any) -> str | None:
    """What is wrong with the shape of an ``info.json`` document (None: nothing)."""
    problem = _fields(doc, INFO_FIELDS) or _each(doc, "features", _feature)
    if problem is None and doc.get("codebase_version") == layout.CODEBASE_VERSION:
        for field, values in PATH_TEMPLATES.items():
            if isinstance(doc.get(field), str):
                try:
                    doc[field].format(**values)
                except (KeyError, IndexError, ValueError):
                    return f"{field}: expected a path template of {{{'}, {'.join(values)}}}, got {_show(doc[field])}"
    return problem


MODALITY_ENTRIES: dict[str, tuple[dict[str, str], tuple[str, ...]]] = {
    "state": ({"rotation_type": "text?"}, ()),
    "action": ({"rotation_type": "text?"}, ()),
    "video": ({"original_key": "text"}, ("original_key",)),
    "annotation": ({}, ()),
}
"""modality.json's blocks: the fields of their entries (the slices' values are :mod:`l3.validate`'s to check)."""


def modality_problem(doc: Any) -> str | None:
    """What is wrong with the shape of a ``modality.json`` document (None: nothing)."""
    problem = _fields(doc, dict.fromkeys(MODALITY_ENTRIES, "object?"))
    for block, (kinds, required) in MODALITY_ENTRIES.items():
        if problem is None:
            problem = _each(doc, block, lambda e, at, k=kinds, r=required: _fields(e, k, r, at))
    return problem


def stats_problem(doc: Any, at: str = "") -> str | None:
    """What is wrong with the shape of a ``stats.json`` document, or of a row's ``stats`` (at ``at``): an object of
    features, each an object of statistics, each a number or an array of numbers."""
    problem = _fields(doc, {}, (), at)
    for key, stats in doc.items() if problem is None else ():
        where = f"{at}.{key}" if at else str(key)
        problem = _fields(stats, dict.fromkeys(stats, "numbers") if isinstance(stats, dict) else {}, (), where)
        if problem is not None:
            break
    return problem


def _episode_stats_row(row: Any) -> str | None:
    problem = _fields(row, {"episode_index": "count", "stats": "object"}, ("episode_index", "stats"))
    return problem or stats_problem(row["stats"], "stats")


SHAPES: dict[str, Callable[[Any], str | None]] = {
    layout.INFO_PATH: info_problem,
    layout.MODALITY_PATH: modality_problem,
    layout.STATS_PATH: stats_problem,
    layout.EPISODES_PATH: lambda row: _fields(
        row,
        {"episode_index": "count", "tasks": "texts", "length": "count", "source": "text", "success": "bool"},
        ("episode_index", "tasks", "length"),
    ),
    layout.TASKS_PATH: lambda row: _fields(row, {"task_index": "count", "task": "text"}, ("task_index", "task")),
    layout.EPISODES_STATS_PATH: _episode_stats_row,
}
"""What a document (``.json``) or each row (``.jsonl``) of a meta file must look like, by path relative to the root:
a function returning the first problem, naming its field, or None."""
