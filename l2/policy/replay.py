"""A GR00T LeRobot dataset's recorded actions, served as a policy: the test double of a GR00T server.

Like Isaac-GR00T's own replay policy, ``reset`` with ``{"episode_index": i}`` picks the episode (and
``{"step_index": t}`` the step, else 0) and each ``get_action`` answers the next ``horizon`` recorded
actions, the last one repeated past the episode's end, then moves on by ``execution_horizon`` steps. Two
additions let one batched request replay several episodes at once: ``episode_index`` may be a list (one
episode per batch item), and a ``get_action`` whose options carry ``episode_step`` (one step index per
batch item, what ``l2.evaluate`` sends) answers from those steps instead of its own counter.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from l3 import layout
from l3.mapping import Mapping
from l3.validate import validate

DEFAULT_HORIZON = 16
"""Actions per answer (GR00T N1.6's action horizon)."""


class DatasetError(ValueError):
    """A dataset that cannot be served, in one line naming the file."""


def _expected_modality(mapping: Mapping) -> dict | None:
    """modality.json's state/action blocks for ``mapping`` (None when its widths need the data to be known)."""
    if not all(s.names for s in (*mapping.state, *mapping.action)):
        return None
    return {k: v for k, v in layout.Layout(mapping).modality().items() if k in ("state", "action")}


def check_modality(root: Path, modality: dict, mapping: Mapping, where: str) -> None:
    """Refuse a dataset whose modality.json does not have the mapping's state and action keys, in its order and
    widths (and rotation types): a policy trained on it would not speak the mapping's language."""
    expected = _expected_modality(mapping)
    for group in ("state", "action"):
        keys = [s.key for s in (mapping.state if group == "state" else mapping.action)]
        got = modality.get(group, {})
        if list(got) != keys:
            raise DatasetError(f"{root / layout.MODALITY_PATH}: {group} keys {list(got)} differ from {where}'s {keys}")
        if expected is None:
            continue
        for key, entry in expected[group].items():
            have = {k: got[key].get(k) for k in ("start", "end", "rotation_type")}
            want = {k: entry.get(k) for k in ("start", "end", "rotation_type")}
            if have != want:
                raise DatasetError(f"{root / layout.MODALITY_PATH}: {group}.{key} is {have}, {where} makes {want}")


class DatasetReplayPolicy:
    """Serves the ``action`` column of a GR00T LeRobot dataset, split into modality.json's action keys."""

    def __init__(
        self,
        root: str | Path,
        mapping: Mapping | None = None,
        horizon: int = DEFAULT_HORIZON,
        execution_horizon: int | None = None,
        where: str = "the mapping config",
    ):
        self.root = Path(root)
        if horizon < 1:
            raise DatasetError(f"--horizon must be at least 1, got {horizon}")
        violations = validate(self.root, deep=False)
        if violations:
            raise DatasetError(str(violations[0]))
        info = json.loads((self.root / layout.INFO_PATH).read_text(encoding="utf-8"))
        self.modality = json.loads((self.root / layout.MODALITY_PATH).read_text(encoding="utf-8"))
        if mapping is not None:
            check_modality(self.root, self.modality, mapping, where)
        self.num_episodes = int(info["total_episodes"])
        self._chunks_size = int(info["chunks_size"])
        self._data_path = info["data_path"]
        self.horizon = horizon
        self.execution_horizon = execution_horizon or horizon
        self._actions: dict[int, np.ndarray] = {}
        self._episodes = [0]
        self._steps = [0]

    def actions(self, episode: int) -> np.ndarray:
        """(T, action width) recorded actions of one episode, read once."""
        if not 0 <= episode < self.num_episodes:
            raise DatasetError(f"{self.root}: no episode {episode} (the dataset has {self.num_episodes})")
        if episode not in self._actions:
            import pyarrow.parquet as pq

            path = self.root / layout.data_path(episode, self._chunks_size, self._data_path)
            column = pq.read_table(path, columns=[layout.ACTION]).column(layout.ACTION).combine_chunks()
            self._actions[episode] = column.flatten().to_numpy().astype(np.float32).reshape(len(column), -1)
        return self._actions[episode]

    # ---------------------------------------------------------------------------------- the protocol
    def reset(self, options: dict | None = None) -> dict:
        options = options or {}
        episodes = options.get("episode_index", 0)
        self._episodes = [int(e) for e in (episodes if isinstance(episodes, list) else [episodes])]
        for e in self._episodes:
            self.actions(e)
        self._steps = [int(options.get("step_index", 0))] * len(self._episodes)
        return {
            "episode_index": episodes,
            "episode_length": [len(self.actions(e)) for e in self._episodes],
            "current_step": self._steps[0],
        }

    def get_modality_config(self) -> dict:
        """The dataset's modality.json (GR00T answers its ModalityConfigs; the keys are what a client needs)."""
        return self.modality

    def get_action(self, observation: dict | None, options: dict | None = None) -> tuple[dict, dict]:
        options = options or {}
        batch = _batch_size(observation, options)
        if len(self._episodes) not in (1, batch):
            raise DatasetError(f"reset named {len(self._episodes)} episodes for a batch of {batch}")
        episodes = self._episodes * batch if len(self._episodes) == 1 else self._episodes
        given = options.get("episode_step")
        if given is not None:
            steps = [int(t) for t in (given if isinstance(given, list) else [given] * batch)]
            if len(steps) != batch:
                raise DatasetError(f"episode_step has {len(steps)} entries for a batch of {batch}")
        else:
            steps = self._steps * batch if len(self._steps) == 1 else self._steps
        chunks = []
        for episode, step in zip(episodes, steps, strict=True):
            recorded = self.actions(episode)
            rows = np.clip(np.arange(step, step + self.horizon), 0, len(recorded) - 1)
            chunks.append(recorded[rows])
        chunk = np.stack(chunks)  # (B, horizon, width)
        self._steps = [s + self.execution_horizon for s in steps]
        action = {
            key: np.ascontiguousarray(chunk[:, :, entry["start"] : entry["end"]])
            for key, entry in self.modality["action"].items()
        }
        return action, {"episode_index": episodes, "current_step": steps}


def _batch_size(observation: dict | None, options: dict) -> int:
    """B from the first video or state array of a GR00T observation (else ``options["batch_size"]``, else 1)."""
    for group in ("video", "state"):
        for value in ((observation or {}).get(group) or {}).values():
            if isinstance(value, np.ndarray) and value.ndim >= 1:
                return int(value.shape[0])
    return int(options.get("batch_size", 1))
