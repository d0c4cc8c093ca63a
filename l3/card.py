"""The dataset card: ``README.md`` at the root of every dataset L3 writes, as the Hugging Face Hub shows it.

YAML front matter (license, ``task_categories``, tags, ``configs`` naming the parquet files) and a Markdown body
that says what the dataset holds, read from its own meta files: the robot, the cameras, the state and action keys,
the tasks, the episodes per source, and last the commands that made it. It is written into the temporary folder
before that is renamed into place (:func:`l3.convert.convert` for v2.1, :func:`l3.v30.finish` for v3.0).

Nothing in it depends on the clock or on where the folder was written: two conversions of the same inputs write
the same card but for its commands (:func:`without_commands`).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

from l3 import layout as lay
from l3 import meta

CARD_PATH = "README.md"
DEFAULT_LICENSE = "apache-2.0"
DATA_FILES = "data/*/*.parquet"
"""The parquet files of both layouts: ``data/chunk-000/episode_000000.parquet`` (v2.1), ``.../file-000.parquet``
(v3.0); the Hub's dataset viewer reads them as the ``default`` config."""
COMMANDS_HEADING = "## How it was made"
"""The card's last section: the commands, the only part that differs between runs of the same conversion."""
LICENSE_ID = re.compile(r"[a-z0-9][a-z0-9.+-]*\Z")
"""The shape of the Hub's license identifiers (``apache-2.0``, ``cc-by-nc-4.0``, ``openrail++``, ``other``)."""
MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|#])")


def license_problem(text: str) -> str | None:
    """Why ``text`` is not a license identifier the Hub knows the shape of (None: it is)."""
    if LICENSE_ID.match(text):
        return None
    return f"{text!r} is not a Hugging Face license identifier (lowercase, e.g. apache-2.0, mit, cc-by-4.0, other)"


def license_id(text: str) -> str:
    """``--license``: a Hub license identifier, refused in one line otherwise."""
    problem = license_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def front_matter(robot_type: str | None, license: str) -> dict[str, Any]:
    """The card's YAML metadata, as LeRobot datasets carry it on the Hub."""
    return {
        "license": license,
        "task_categories": ["robotics"],
        "tags": list(dict.fromkeys(["LeRobot", "gr00t", *([robot_type] if robot_type else [])])),
        "configs": [{"config_name": "default", "data_files": DATA_FILES}],
    }


def _text(value: Any) -> str:
    """Free text (an instruction) for a Markdown table cell: one line, Markdown's characters escaped."""
    return MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(str(value).split()))


def _table(head: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _fenced(lines: Sequence[str]) -> str:
    """A code block that no backtick run of ``lines`` can close."""
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return "\n".join([fence, *lines, fence])


def _cameras(info: dict) -> str:
    videos = [(k, f) for k, f in info["features"].items() if f.get("dtype") == "video"]
    if not videos:
        return "None: state and action only."
    rows = []
    for key, f in videos:
        h, w = f["shape"][:2]
        v = f.get("info") or {}
        rows.append(
            (
                f"`{key}`",
                f"{w}x{h}",
                v.get("video.fps", info["fps"]),
                v.get("video.codec", "?"),
                v.get("video.pix_fmt", "?"),
            )
        )
    return _table(("video key", "width x height", "fps", "codec", "pixel format"), rows)


def _keys(info: dict, modality: dict) -> str:
    """The state and action keys (modality.json) with their columns and names (info.json)."""
    rows = []
    for group, column in (("state", lay.STATE), ("action", lay.ACTION)):
        names = info["features"][column].get("names") or []
        for key, e in modality.get(group, {}).items():
            start, end = e["start"], e["end"]
            rows.append(
                (
                    f"`{group}.{key}`",
                    f"`{column}[{start}:{end}]`",
                    ", ".join(map(str, names[start:end])),
                    "absolute" if e.get("absolute", True) else "relative",
                    e.get("rotation_type") or "",
                )
            )
    return _table(("key", "columns", "names", "values", "rotation"), rows)


def _tasks(tasks: Sequence[str], episodes: Sequence[dict], modality: dict) -> str:
    """The tasks by index with the episodes of each: as instruction, or for the validity labels (``valid`` /
    ``invalid``, which no episode has as instruction) by success."""
    used = {t: sum(t in e.get("tasks", ()) for e in episodes) for t in tasks}
    labels = [t for t in (lay.VALID, lay.INVALID) if t in used and not used[t]]
    for t in labels:
        used[t] = sum(e.get("success") is (t == lay.VALID) for e in episodes)
    out = [_table(("task_index", "task", "episodes"), ((k, _text(t), used[t]) for k, t in enumerate(tasks)))]
    if labels:
        out.append(f"{' / '.join(f'`{t}`' for t in labels)}: labels of the validity annotation, not instructions.")
    annotations = [f"`{lay.ANNOTATION_PREFIX}{key}`" for key in modality.get("annotation", {})]
    if annotations:
        out.append(f"Annotation columns (indices into the tasks): {', '.join(annotations)}.")
    return "\n\n".join(out)


def _sources(episodes: Sequence[dict]) -> str:
    """Episodes, successes and frames per source tag, in order of first episode, and their total."""
    recorded = all(isinstance(e.get("success"), bool) for e in episodes)
    counts: dict[str, list[int]] = {}
    for e in episodes:
        c = counts.setdefault(str(e.get("source", "unknown")), [0, 0, 0])
        c[0] += 1
        c[1] += e.get("success") is True
        c[2] += e["length"]
    rows = [(src, *c) for src, c in counts.items()]
    rows.append(("**total**", *(sum(r[i] for r in rows) for i in (1, 2, 3))))
    if not recorded:
        rows = [(src, n, "not recorded", frames) for src, n, _, frames in rows]
    return _table(("source", "episodes", "successful", "frames"), rows)


def render(
    info: dict,
    modality: dict,
    tasks: Sequence[str],
    episodes: Sequence[dict],
    commands: Sequence[str],
    license: str = DEFAULT_LICENSE,
) -> str:
    """The card of a dataset with these meta files (info.json, modality.json, the task texts by index, the episode
    rows) made by ``commands``."""
    robot = info.get("robot_type")
    fps, frames = info["fps"], info["total_frames"]
    doc = yaml.safe_dump(front_matter(robot, license), sort_keys=False, allow_unicode=True, default_flow_style=False)
    sections = [
        f"---\n{doc}---",
        "# GR00T LeRobot dataset",
        f"A LeRobot {info['codebase_version']} dataset with NVIDIA GR00T's `{lay.MODALITY_PATH}`, written by L3 "
        f"(`l3/convert.py`): {info['total_episodes']} episodes, {frames} frames at {fps} fps "
        f"({frames / fps:.1f} s). License: {license}.",
        f"## Robot\n\n`{robot}`" if robot else "## Robot\n\nNot recorded (`robot_type` is null).",
        f"## Cameras\n\n{_cameras(info)}",
        f"## State and action\n\n{_keys(info, modality)}",
        f"## Tasks\n\n{_tasks(tasks, episodes, modality)}",
        f"## Episodes per source\n\n{_sources(episodes)}",
        f"{COMMANDS_HEADING}\n\n{_fenced(commands)}",
    ]
    return "\n\n".join(sections) + "\n"


def write_card(
    root: Path,
    commands: Sequence[str],
    license: str = DEFAULT_LICENSE,
    tasks: Sequence[str] | None = None,
    episodes: Sequence[dict] | None = None,
) -> None:
    """Write ``root/README.md`` from ``root``'s meta files; ``tasks`` and ``episodes`` default to the v2.1 ones
    (``tasks.jsonl``, ``episodes.jsonl``), a v3.0 dataset gives its own."""
    root = Path(root)
    if tasks is None:
        rows = meta.read_jsonl_strict(root, lay.TASKS_PATH)
        tasks = [r["task"] for r in sorted(rows, key=lambda r: r["task_index"])]
    if episodes is None:
        episodes = meta.read_jsonl_strict(root, lay.EPISODES_PATH)
    info, modality = meta.read_json(root, lay.INFO_PATH), meta.read_json(root, lay.MODALITY_PATH)
    text = render(info, modality, tasks, episodes, commands, license)
    (root / CARD_PATH).write_text(text, encoding="utf-8")


def without_commands(card: str) -> str:
    """The card up to its commands: what two conversions of the same inputs, run differently, write alike."""
    return card.partition(COMMANDS_HEADING)[0]


def differing_files(a: Path, b: Path) -> list[str]:
    """The files that datasets ``a`` and ``b`` do not hold alike (on one side only, other bytes, a card with other text
    before its commands), as relative paths; none for two conversions of the same inputs, however they ran."""
    files = [{p.relative_to(d).as_posix() for p in Path(d).rglob("*") if p.is_file()} for d in (a, b)]
    differ = sorted(files[0] ^ files[1])
    for rel in sorted(files[0] & files[1]):
        if rel == CARD_PATH:
            texts = [without_commands((Path(d) / rel).read_text(encoding="utf-8")) for d in (a, b)]
            same = texts[0] == texts[1]
        else:
            same = (Path(a) / rel).read_bytes() == (Path(b) / rel).read_bytes()
        if not same:
            differ.append(rel)
    return differ
