"""The one reader of a dataset's ``meta/`` files (the writer is :class:`l3.writer.MetaWriter`): ``info.json``,
``stats.json``, ``modality.json`` and the JSON-lines files, for the validator, the inspection report and the v3.0
conversion alike. Paths are relative to the dataset root, as :mod:`l3.layout` names them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
    """The parsed JSON file ``root/rel``; MetaError when missing or not JSON."""
    text = _text(Path(root), rel)
    try:
        return json.loads(text)
    except ValueError as exc:
        raise MetaError(Path(root), rel, f"not valid JSON ({exc})") from None


def read_jsonl(root: str | Path, rel: str) -> tuple[list[Any], list[MetaError]]:
    """The rows of the JSON-lines file ``root/rel`` and one MetaError per line that is blank (:data:`BLANK_LINE`)
    or not JSON; MetaError raised when the file is missing or not UTF-8."""
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
            rows.append(json.loads(line))
        except ValueError as exc:
            problems.append(MetaError(root, rel, f"not valid JSON ({exc})", n))
    return rows, problems


def read_jsonl_strict(root: str | Path, rel: str) -> list[Any]:
    """The rows of ``root/rel``; the first problem of :func:`read_jsonl` is raised."""
    rows, problems = read_jsonl(root, rel)
    if problems:
        raise problems[0]
    return rows
