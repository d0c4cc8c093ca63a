"""Runs INSIDE LeRobot's own venv (``scripts/setup_lerobot.sh v30``), started by :mod:`l3.v30`; never imported.

    python lerobot_v30_job.py DIR FIELDS_JSONL

Converts the LeRobot v2.1 dataset at DIR to v3.0 in place with LeRobot's own converter
(``lerobot.scripts.convert_dataset_v21_to_v30``, lerobot 0.6.x): afterwards DIR holds the v3.0
dataset and ``DIR_old`` the v2.1 one. DIR's episodes.jsonl must hold only LeRobot's keys
(episode_index, tasks, length): the converter builds its episodes table batch by batch and fails
when an episode lacks a key that another has (sim and real-robot episodes carry different fields).
Our episode-level fields (one JSON line per episode in FIELDS_JSONL, in episode order: source,
success, ...) are added afterwards as whole columns (``datasets.Dataset.add_column``, one type per
column, null where an episode lacks the field) and written back with LeRobot's ``write_episodes``.
Then LeRobot's ``LeRobotDatasetMetadata`` opens the result; one JSON line says what it sees.
Offline; nothing is pushed. Any failure: a traceback, exit 1.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"


def add_fields(root: Path, fields: list[dict]) -> None:
    """Add each key of ``fields`` (first-seen order) as an episode-level column of meta/episodes."""
    import pyarrow as pa
    from datasets import Dataset
    from lerobot.datasets.io_utils import write_episodes
    from lerobot.datasets.utils import DEFAULT_EPISODES_PATH

    path = root / DEFAULT_EPISODES_PATH.format(chunk_index=0, file_index=0)
    episodes = Dataset.from_parquet(str(path))
    if episodes["episode_index"] != list(range(len(fields))):
        raise ValueError(f"{path}: episodes {episodes['episode_index']} for {len(fields)} episodes")
    for key in dict.fromkeys(k for f in fields for k in f):
        if key in episodes.column_names:
            raise ValueError(f"{path}: LeRobot's converter already wrote a column {key!r}")
        episodes = episodes.add_column(key, pa.array([f.get(key) for f in fields]))
    write_episodes(episodes, root)


def main(root: Path, fields_path: Path) -> dict:
    import lerobot

    try:
        from lerobot.scripts.convert_dataset_v21_to_v30 import convert_dataset
    except ImportError as e:
        raise SystemExit(
            f"lerobot {lerobot.__version__} at {sys.executable} has no v2.1 -> v3.0 converter at "
            f"lerobot.scripts.convert_dataset_v21_to_v30 (lerobot 0.6.x has it): {e}"
        ) from e
    from lerobot.datasets.dataset_metadata import LeRobotDatasetMetadata

    logging.basicConfig(level=logging.WARNING)
    fields = [json.loads(line) for line in fields_path.read_text(encoding="utf-8").splitlines()]
    # repo_id only names the dataset (nothing is fetched with root given and push_to_hub off)
    repo_id = f"local/{root.name.strip('.') or 'dataset'}"
    convert_dataset(repo_id=repo_id, root=root, push_to_hub=False, force_conversion=True)
    add_fields(root, fields)
    meta = LeRobotDatasetMetadata(repo_id, root=root)
    return {
        "lerobot": lerobot.__version__,
        "codebase_version": meta.info.codebase_version,
        "episodes": meta.total_episodes,
        "frames": meta.total_frames,
        "tasks": len(meta.tasks),
        "episode_columns": list(meta.episodes.column_names),
    }


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), Path(sys.argv[2]))))
