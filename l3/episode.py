"""The in-memory episode that every reader yields and the writer consumes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np


class FrameSource(Protocol):
    """Camera frames of one episode, read lazily in chunks so memory stays small."""

    shape: tuple[int, int, int, int]
    """(T, H, W, 3)."""

    def chunks(self) -> Iterator[np.ndarray]:
        """Yield consecutive (n, H, W, 3) uint8 arrays covering frames 0..T-1 in order."""
        ...


@dataclass
class Episode:
    """One episode, already mapped to GR00T modalities.

    ``state`` / ``action`` map modality keys (in mapping order) to (T, d) float32 arrays;
    ``cameras`` map camera keys to frame sources; ``fields`` are extra episodes.jsonl fields
    (input file, demo name, env_name, seed, ...).
    """

    length: int
    state: dict[str, np.ndarray]
    action: dict[str, np.ndarray]
    cameras: dict[str, FrameSource] = field(default_factory=dict)
    task: str = ""
    source: str = "unknown"
    success: bool = True
    fields: dict[str, Any] = field(default_factory=dict)
