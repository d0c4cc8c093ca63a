"""Timing helpers shared by the benchmarks."""

from __future__ import annotations

import time
from collections.abc import Iterable


def time_calls(obj: object, names: Iterable[str], total: list[float]) -> None:
    """Wrap the methods ``names`` of ``obj`` so the seconds spent inside them add up in ``total[0]``."""
    for name in names:
        inner = getattr(obj, name)

        def timed(*args, _inner=inner, **kwargs):
            start = time.perf_counter()
            try:
                return _inner(*args, **kwargs)
            finally:
                total[0] += time.perf_counter() - start

        setattr(obj, name, timed)
