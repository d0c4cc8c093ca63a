"""What a policy sees and what it answers, both through the mapping config L3 converted the training data with.

Forward (env -> policy): the env's obs terms, named as in the L2 file (``obs/joint_pos``, ``obs/table_cam``),
become GR00T's observation ``{"video": {key: (B, T, H, W, 3) uint8}, "state": {key: (B, T, D) float32},
"language": {key: [[text] * T] * B}}`` with the modality keys, column slices, quaternion order and task text
of the config: each key is taken by :meth:`l3.mapping.Slice.take`, the very function L3 builds its dataset
columns with. Backward (policy -> env): the action chunk ``{key: (B, H, D)}`` is written back into the
env's action columns by :meth:`l3.mapping.Slice.put`, the inverse of ``take``; every column must be covered
exactly once, so a mapping that drops or doubles an action column is refused before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from l3.mapping import Mapping, Slice

LANGUAGE_PREFIX = "annotation."
"""GR00T's language keys are the annotation columns, e.g. ``annotation.human.action.task_description``."""


class ModalityError(ValueError):
    """A mismatch between a mapping, an env and a policy, in one line."""


def _width(s: Slice) -> int | None:
    """The width a mapping key declares (names, slice or padding), None when only the data can tell."""
    if s.zeros is not None:
        return s.zeros
    if s.names:
        return len(s.names)
    if s.start is not None and s.end is not None:
        return s.end - s.start
    return None


@dataclass(frozen=True)
class ModalityAdapter:
    """The mapping of one dataset, seen from a policy: observation keys, action keys and the instruction."""

    mapping: Mapping
    where: str = "the mapping"
    """Names the config in messages (its path)."""

    # ------------------------------------------------------------------------------------ the keys
    @property
    def language_keys(self) -> list[str]:
        return [LANGUAGE_PREFIX + key for key, kind in self.mapping.annotations if kind == "task"]

    @property
    def instruction(self) -> str:
        return self.mapping.task

    def action_widths(self) -> dict[str, int | None]:
        return {s.key: _width(s) for s in self.mapping.action}

    def state_widths(self) -> dict[str, int | None]:
        return {s.key: _width(s) for s in self.mapping.state}

    def needed_terms(self) -> list[str]:
        """Every dataset path the observation reads (``obs/<term>``), in mapping order."""
        return list(
            dict.fromkeys(
                [s.source for s in self.mapping.state if s.zeros is None] + [c.source for c in self.mapping.cameras]
            )
        )

    # -------------------------------------------------------------------------------- env -> policy
    def observation(self, terms: dict[str, np.ndarray], instruction: str | None = None) -> dict:
        """GR00T's observation (T = 1) from a batch of obs terms ``{"obs/<term>": (B, ...)}``."""
        missing = [path for path in self.needed_terms() if path not in terms]
        if missing:
            raise ModalityError(
                f"{self.where} reads {missing[0]}, which the env does not observe (its terms: "
                f"{', '.join(sorted(terms)) or 'none'})"
            )
        batch = next(iter(terms.values())).shape[0] if terms else 0
        state = {}
        for s in self.mapping.state:
            if s.zeros is not None:
                state[s.key] = np.zeros((batch, 1, s.zeros), np.float32)
                continue
            source = terms[s.source]
            if source.ndim != 2:
                raise ModalityError(
                    f"{self.where}: state.{s.key} reads {s.source}, which is not a (B, D) term (shape {source.shape})"
                )
            value = s.take(source.astype(np.float32, copy=False))
            width = _width(s)
            if width is not None and value.shape[1] != width:
                raise ModalityError(
                    f"{self.where}: state.{s.key} names {width} columns, the env's {s.source} gives {value.shape[1]}"
                )
            state[s.key] = value[:, None, :]
        video = {}
        for c in self.mapping.cameras:
            frames = terms[c.source]
            if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
                raise ModalityError(
                    f"{self.where}: camera {c.key} reads {c.source}, which is not (B, H, W, 3) uint8 "
                    f"(got {frames.dtype} {frames.shape})"
                )
            video[c.key] = np.ascontiguousarray(frames[:, None])
        text = self.instruction if instruction is None else instruction
        language = {key: [[text]] * batch for key in self.language_keys}
        return {"video": video, "state": state, "language": language}

    # -------------------------------------------------------------------------------- policy -> env
    def check_action_layout(self, action_dims: dict[str, int]) -> None:
        """Refuse a mapping whose action keys do not cover each column of the env's action sources
        (``{"actions": 8}``) exactly once."""
        for s in self.mapping.action:
            if s.zeros is not None:
                raise ModalityError(f"{self.where}: action.{s.key} is padding (zeros), which no env action can take")
            if s.source not in action_dims:
                raise ModalityError(
                    f"{self.where}: action.{s.key} comes from {s.source}, but the env's action is "
                    f"{' + '.join(action_dims)} ({sum(action_dims.values())} values)"
                )
        for source, dim in action_dims.items():
            covered = np.zeros(dim, int)
            for s in self.mapping.action:
                if s.source == source:
                    covered[s.start : s.end] += 1
            if (covered != 1).any():
                bad = int(np.flatnonzero(covered != 1)[0])
                how = "not mapped" if covered[bad] == 0 else "mapped twice"
                raise ModalityError(
                    f"{self.where}: column {bad} of the env's {source} ({dim} values) is {how}: the "
                    "action keys must split it exactly once"
                )
            declared = {s.key: _width(s) for s in self.mapping.action if s.source == source}
            for s in self.mapping.action:
                real = len(range(dim)[slice(s.start, s.end)])
                if s.source == source and declared[s.key] not in (None, real):
                    raise ModalityError(
                        f"{self.where}: action.{s.key} names {declared[s.key]} columns but takes {real} of {source}"
                    )

    def env_actions(self, action: dict, action_dims: dict[str, int], batch: int) -> dict[str, np.ndarray]:
        """The env's action sources ``{"actions": (B, H, dim)}`` from a policy's chunk ``{key: (B, H, width)}``."""
        expected = {s.key: len(range(action_dims[s.source])[slice(s.start, s.end)]) for s in self.mapping.action}
        if not isinstance(action, dict) or set(action) != set(expected):
            got = sorted(action) if isinstance(action, dict) else type(action).__name__
            raise ModalityError(
                f"the policy answered action keys {got}, {self.where} expects "
                f"{', '.join(f'{k} ({w})' for k, w in expected.items())}"
            )
        horizon = None
        for key, width in expected.items():
            value = action[key]
            if (
                not isinstance(value, np.ndarray)
                or value.ndim != 3
                or value.shape[0] != batch
                or value.shape[2] != width
                or (horizon is not None and value.shape[1] != horizon)
            ):
                shape = value.shape if isinstance(value, np.ndarray) else type(value).__name__
                raise ModalityError(
                    f"the policy answered action.{key} of shape {shape}, expected ({batch}, "
                    f"{'H' if horizon is None else horizon}, {width}) ({self.where})"
                )
            horizon = value.shape[1]
        if not horizon:
            raise ModalityError("the policy answered an empty action chunk (horizon 0)")
        out = {source: np.zeros((batch, horizon, dim), np.float32) for source, dim in action_dims.items()}
        for s in self.mapping.action:
            s.put(action[s.key].astype(np.float32, copy=False), out[s.source])
        return out
