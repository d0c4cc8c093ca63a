"""LeRobot v3.0 output: our v2.1 dataset, converted by LeRobot's own v2.1 -> v3.0 converter.

``python l3/convert.py ... --codebase-version v3.0`` writes the GR00T LeRobot v2.1 dataset as usual
(:func:`l3.convert.convert`, validated) into a staging folder beside the output, then runs
``lerobot.scripts.convert_dataset_v21_to_v30`` (lerobot 0.6.x) on it in LeRobot's own venv (built by
``scripts/setup_lerobot.sh v30``: lerobot 0.6's pins of numpy, packaging and av clash with Isaac Lab's venv),
puts back what that converter leaves out (``meta/modality.json``, the q01/q99 of ``stats.json``),
checks the result against the v2.1 metadata (:func:`check`), writes its card (:mod:`l3.card`) and renames it
into place. Why a subprocess of LeRobot's converter and not a writer of our own: docs/lerobot_v30.md.

    stage = stage_path(output, overwrite)     # fails fast: no venv, or an existing output
    summary = convert(inputs, stage, ...)      # the v2.1 dataset, as without --codebase-version
    finish(summary, output, overwrite, commands=[command])  # -> v3.0 at output; nothing left behind on failure
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from l3 import card, meta
from l3 import layout as lay
from l3.errors import OutputInvalid, UsageError
from l3.output import Summary, replace_output

CODEBASE_VERSION = "v3.0"
REPO = Path(__file__).resolve().parent.parent
SETUP = REPO / "scripts" / "setup_lerobot.sh"
JOB = Path(__file__).resolve().with_name("lerobot_v30_job.py")
PYTHON_ENV = "L3_LEROBOT_PYTHON"
"""A python with lerobot 0.6.x to use instead of the venv of scripts/setup_lerobot.sh v30."""
TASKS_V30 = "meta/tasks.parquet"
EPISODES_V30 = "meta/episodes"
LEROBOT_EPISODE_KEYS = ("episode_index", "tasks", "length")
"""episodes.jsonl keys that LeRobot's converter reads; ours (source, success, ...) are added by the job."""
KEPT_STATS = ("q01", "q99")
"""stats.json entries of ours that LeRobot's converter does not recompute (it aggregates the
per-episode min/max/mean/std); GR00T normalises with them."""


def lerobot_python() -> str:
    """The python that runs LeRobot's converter: $L3_LEROBOT_PYTHON, else the built v30 venv (never built here:
    it downloads torch)."""
    if os.environ.get(PYTHON_ENV):
        return os.environ[PYTHON_ENV]
    how = f"build it once with `bash {SETUP} v30` (lerobot 0.6.1 + torch: a few GB to download, ~6 GB on disk)"
    if not SETUP.exists():
        raise UsageError(f"--codebase-version v3.0 needs a python with lerobot 0.6.x: set {PYTHON_ENV}")
    r = subprocess.run(["bash", str(SETUP), "v30", "--check"], capture_output=True, text=True)
    if r.returncode != 0:
        raise UsageError(
            f"--codebase-version v3.0 runs LeRobot's converter in its own venv, which is not built: {how} "
            f"(or set {PYTHON_ENV})"
        )
    return r.stdout.strip().splitlines()[-1]


def stage_path(output: str | Path, overwrite: bool) -> Path:
    """Where the v2.1 dataset is written first (beside ``output``); checks the venv and ``output`` first."""
    output = Path(output)
    lerobot_python()
    if (output.exists() or output.is_symlink()) and not overwrite:
        raise UsageError(f"output {output} already exists (use --overwrite to replace it)")
    stage = output.parent / f".{output.name}.v21-{os.getpid()}"
    _remove(stage, _old(stage), _new(stage), _fields(stage))
    return stage


def _old(stage: Path) -> Path:
    """Where LeRobot's converter moves the v2.1 input (it converts in place)."""
    return stage.with_name(f"{stage.name}_old")


def _new(stage: Path) -> Path:
    """LeRobot's converter's own staging folder."""
    return stage.with_name(f"{stage.name}_v30")


def _fields(stage: Path) -> Path:
    """Our episode-level fields, one JSON line per episode, while LeRobot's converter runs."""
    return stage.with_name(f"{stage.name}.fields.jsonl")


def _remove(*paths: Path) -> None:
    for p in paths:
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


def _write_jsonl(path: Path, rows: Iterable[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def split_fields(stage: Path) -> Path:
    """Leave only LeRobot's keys in ``stage``'s episodes.jsonl, ours in :func:`_fields` (see lerobot_v30_job.py)."""
    rows = _jsonl(stage / lay.EPISODES_PATH)
    _write_jsonl(_fields(stage), ({k: v for k, v in r.items() if k not in LEROBOT_EPISODE_KEYS} for r in rows))
    _write_jsonl(stage / lay.EPISODES_PATH, ({k: r[k] for k in LEROBOT_EPISODE_KEYS} for r in rows))
    return _fields(stage)


def run_converter(stage: Path, fields: Path, python: str) -> dict:
    """Run LeRobot's v2.1 -> v3.0 converter on ``stage`` (in place, v2.1 kept at ``stage``_old) and add our episode
    ``fields``; LeRobot's view of the result. Offline; its Hugging Face caches go to a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="l3-lerobot-") as hf:
        env = {
            **os.environ,
            "HF_HOME": hf,
            "HF_LEROBOT_HOME": f"{hf}/lerobot",
            "HF_HUB_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
            "PYTHONPATH": "",
            "TQDM_DISABLE": "1",
        }
        r = subprocess.run([python, str(JOB), str(stage), str(fields)], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        tail = "\n".join(r.stderr.strip().splitlines()[-15:])
        raise OutputInvalid(f"LeRobot's v2.1 -> v3.0 converter ({python}) failed:\n{tail}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def complete(root: Path, v21: Path) -> None:
    """Put back what LeRobot's converter leaves out: meta/modality.json (GR00T's key slices, unused by LeRobot), the
    inferred mapping (meta/l3_mapping.yaml, when there is one) and the dataset-wide q01/q99 of our stats.json."""
    shutil.copy2(v21 / lay.MODALITY_PATH, root / lay.MODALITY_PATH)
    if (v21 / lay.MAPPING_PATH).is_file():
        shutil.copy2(v21 / lay.MAPPING_PATH, root / lay.MAPPING_PATH)
    ours = meta.read_json(v21, lay.STATS_PATH)
    path = root / lay.STATS_PATH
    stats = meta.read_json(root, lay.STATS_PATH)
    for feature, s in ours.items():
        for k in KEPT_STATS:
            if k in s and feature in stats:
                stats[feature].setdefault(k, s[k])
    path.write_text(json.dumps(stats, indent=4) + "\n")


def _jsonl(path: Path) -> list[dict]:
    return meta.read_jsonl_strict(path.parent, path.name)


def _same(got: Any, want: Any) -> bool:
    """``got`` (read back from parquet) is ``want``; a struct column gives every record every key, so keys that
    ``want`` lacks must be null."""
    if isinstance(want, dict) and isinstance(got, dict):
        return all(_same(got.get(k), v) for k, v in want.items()) and all(
            got[k] is None for k in got.keys() - want.keys()
        )
    if isinstance(want, list) and isinstance(got, list):
        return len(got) == len(want) and all(_same(g, w) for g, w in zip(got, want, strict=True))
    return got == want


def read_episodes(root: Path) -> list[dict]:
    """meta/episodes/*/*.parquet of a v3.0 dataset as rows, by episode index, without the stats/ columns."""
    rows: list[dict] = []
    for f in sorted((root / EPISODES_V30).glob("*/*.parquet")):
        t = pq.read_table(f)
        rows += t.select([c for c in t.column_names if not c.startswith("stats/")]).to_pylist()
    return sorted(rows, key=lambda r: r["episode_index"])


def read_tasks(root: Path) -> dict[int, str]:
    """meta/tasks.parquet of a v3.0 dataset: task text by task index."""
    return {t["task_index"]: t["task"] for t in pq.read_table(root / TASKS_V30).to_pylist()}


def check(root: Path, v21: Path, fields: Path) -> list[str]:
    """What in the v3.0 dataset at ``root`` disagrees with the v2.1 one it came from (``v21``, its episode fields in
    ``fields``; empty: nothing): totals, tasks, every episode's fields (source tags included) and length, data rows,
    video files."""
    bad: list[str] = []
    info, old = (meta.read_json(r, lay.INFO_PATH) for r in (root, v21))
    if info.get("codebase_version") != CODEBASE_VERSION:
        bad.append(f"{lay.INFO_PATH}: codebase_version {info.get('codebase_version')!r}, expected {CODEBASE_VERSION}")
    for k in ("total_episodes", "total_frames", "total_tasks", "fps", "robot_type"):
        if info.get(k) != old.get(k):
            bad.append(f"{lay.INFO_PATH}: {k} {info.get(k)!r}, v2.1 had {old.get(k)!r}")
    feats = info.get("features", {})
    for k, f in old["features"].items():
        if feats.get(k, {}).get("dtype") != f["dtype"] or feats[k].get("shape") != f["shape"]:
            bad.append(f"{lay.INFO_PATH}: feature {k} {feats.get(k)}, v2.1 had {f}")

    got = read_tasks(root)
    want = {t["task_index"]: t["task"] for t in _jsonl(v21 / lay.TASKS_PATH)}
    if got != want:
        bad.append(f"{TASKS_V30}: {got} differs from tasks.jsonl {want}")

    episodes = read_episodes(root)
    want_eps = [{**e, **f} for e, f in zip(_jsonl(v21 / lay.EPISODES_PATH), _jsonl(fields), strict=True)]
    if len(episodes) != len(want_eps):
        bad.append(f"{EPISODES_V30}: {len(episodes)} episodes, episodes.jsonl has {len(want_eps)}")
    offset = 0
    for ep, want_ep in zip(episodes, want_eps, strict=False):
        i = want_ep["episode_index"]
        for k, v in want_ep.items():
            if k not in ep:
                bad.append(f"{EPISODES_V30}: episode {i} lost field {k!r}")
            elif not _same(ep[k], v):
                bad.append(f"{EPISODES_V30}: episode {i} {k} {ep[k]!r}, episodes.jsonl has {v!r}")
        span = (ep.get("dataset_from_index"), ep.get("dataset_to_index"))
        if span != (offset, offset + want_ep["length"]):
            bad.append(f"{EPISODES_V30}: episode {i} rows {span}, expected {(offset, offset + want_ep['length'])}")
        offset += want_ep["length"]

    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in (root / "data").glob("*/*.parquet"))
    if rows != old["total_frames"]:
        bad.append(f"data/: {rows} rows, expected {old['total_frames']}")
    for key, f in info["features"].items():
        if f["dtype"] == "video":
            files = {(ep[f"videos/{key}/chunk_index"], ep[f"videos/{key}/file_index"]) for ep in episodes}
            for chunk, file in sorted(files):
                rel = info["video_path"].format(video_key=key, chunk_index=chunk, file_index=file)
                if not (root / rel).is_file():
                    bad.append(f"{rel}: missing")
    return bad


def finish(
    summary: Summary,
    output: str | Path,
    overwrite: bool,
    log: Callable[[str], None] | None = None,
    *,
    commands: Sequence[str] = (),
    license: str = card.DEFAULT_LICENSE,
) -> Summary:
    """Convert the v2.1 dataset at ``summary.output`` (from :func:`stage_path`) to v3.0, check it, give it its card
    (made by ``commands``) and rename it to ``output``; the staging folders are removed whatever happens."""
    log = log or (lambda msg: print(msg, file=sys.stderr))
    t0 = time.perf_counter()
    stage, output = Path(summary.output), Path(output)
    python = lerobot_python()
    try:
        log(f"converting to LeRobot v3.0 with LeRobot's converter ({python})")
        fields = split_fields(stage)
        seen = run_converter(stage, fields, python)
        complete(stage, _old(stage))
        problems = check(stage, _old(stage), fields)
        if seen["codebase_version"] != CODEBASE_VERSION or seen["episodes"] != summary.episodes:
            problems.append(f"LeRobotDatasetMetadata read {seen}")
        if problems:
            shown = "\n".join(f"  {p}" for p in problems[:20])
            raise OutputInvalid(f"v3.0 dataset differs from the v2.1 one it came from ({len(problems)}):\n{shown}")
        tasks = [text for _, text in sorted(read_tasks(stage).items())]
        card.write_card(stage, commands, license, tasks=tasks, episodes=read_episodes(stage))
        replace_output(stage, output, overwrite)
    finally:
        _remove(stage, _old(stage), _new(stage), _fields(stage))
    summary.output = output
    summary.count_bytes()
    summary.seconds += time.perf_counter() - t0
    log(f"LeRobot v3.0: lerobot {seen['lerobot']}'s converter and checks took {time.perf_counter() - t0:.1f} s")
    return summary
