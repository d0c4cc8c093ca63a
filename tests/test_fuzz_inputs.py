"""A fast subset of the fuzz campaign (bench/fuzz_inputs.py): mutated inputs of every reader fail cleanly.

Each mutation kind once per reader: byte flips, truncation, zeroed blocks, wrong dtype/shape, NaN, a deleted
or mistyped attribute, a deleted node. Every mutant must give ``l2.format.validate`` exit 0/1 with ``FILE:/path``
lines, and ``l3/convert.py`` either a valid dataset or exit 2 with one ``error: FILE:/hdf5/path: message``
line and nothing left behind; ``--skip-bad`` beside a good input converts every good episode.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.fuzz_inputs import MUTATIONS, READERS, campaign  # noqa: E402


@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_mutation_kind_fails_cleanly(reader):
    outcomes = campaign([reader], per_reader=len(MUTATIONS), seed=11, timeout=120)
    failures = [f"{o.kind} ({o.what}): {'; '.join(o.problems)}" for o in outcomes if o.problems]
    assert not failures, "\n".join(failures)
