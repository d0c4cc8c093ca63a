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

from bench.fuzz_inputs import BYTE_MUTATIONS, MUTATIONS, READERS, campaign  # noqa: E402


@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_mutation_kind_fails_cleanly(reader):
    outcomes = campaign([reader], per_reader=len(MUTATIONS), seed=11, timeout=120)
    # It tried something: a mutant per mutation, every kind the reader takes applied to a file (a .tar.gz takes
    # the byte mutations only), and the checks answered both ways (a mutant refused, not every one converted).
    assert len(outcomes) == len(MUTATIONS) and {o.reader for o in outcomes} == {reader}, outcomes
    kinds = BYTE_MUTATIONS if reader == "platform_tar" else MUTATIONS
    applied = {o.kind for o in outcomes if not o.what.startswith("not applied")}
    assert applied == set(kinds), f"mutations not tried: {sorted(set(kinds) - applied)}"
    assert any(not o.converted for o in outcomes), "every mutant converted: were they mutated?"
    failures = [f"{o.kind} ({o.what}): {'; '.join(o.problems)}" for o in outcomes if o.problems]
    assert not failures, "\n".join(failures)
