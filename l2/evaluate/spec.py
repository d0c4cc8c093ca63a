"""What an evaluation is asked for: the policy (``--policy``), the defaults, and the error it reports in one line."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from l2.format import cli_args
from l2.recording.errors import OneLineError

REPO = Path(__file__).resolve().parents[2]


DEFAULT_CONFIG = REPO / "config" / "lift_cube.yaml"


DEFAULT_EPISODES = 16


POLICY_SOURCE = "policy"
"""The source tag of recorded evaluation rollouts (``--record``), which L3 tags their episodes with."""


NON_FINITE = "non_finite_action"


class EvaluationError(OneLineError):
    """A problem to report in one line (exit status 2)."""


@dataclass(frozen=True)
class PolicySpec:
    kind: str
    """``rsl_rl``, ``server`` or ``replay``."""
    target: str
    """The checkpoint, ``host:port`` or the dataset folder."""

    @property
    def served(self) -> bool:
        return self.kind in ("server", "replay")

    def __str__(self) -> str:
        return f"{self.kind}:{self.target}"


def parse_policy(text: str | None) -> PolicySpec:
    """``rsl_rl:PATH``, ``server:HOST:PORT`` or ``replay:DATASET``."""
    kind, _, target = text.partition(":")
    if kind not in ("rsl_rl", "server", "replay") or not target:
        raise argparse.ArgumentTypeError(f"--policy {text!r}: expected rsl_rl:PATH, server:HOST:PORT or replay:DATASET")
    try:
        if kind == "server":
            cli_args.host_port(target)
        elif kind == "rsl_rl":
            cli_args.existing_file(target)
        else:
            cli_args.existing_folder(target)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"--policy {text!r}: {exc}") from None
    return PolicySpec(kind, target)
