"""``l3/convert.py --engine ray``: the per-episode work as Ray tasks instead of a local process pool.

Only the map changes: each task runs the same function on one item (one episode), with the same worker
state, so the bytes written are those of ``--engine local``. Results come back in item order; at most
``workers`` tasks are in flight (each holds one episode in memory, like a pool worker), and a finished
result waits for the earlier ones in a window of ``2 * workers``. The output folder must be on storage
that every node sees (the tasks write the episode files there; the driver writes ``meta/``).
"""

from __future__ import annotations

import importlib
import os
from collections import deque
from collections.abc import Callable, Iterator

from l2.tools.ray_cluster import start_ray

_STATE: dict = {"key": None}
_END = object()


def _call(fn_path: str, state_key: str, state: dict, item):
    """In a Ray worker: set the pool-worker state once per conversion, then run ``fn(item)``."""
    module, name = fn_path.split(":")
    mod = importlib.import_module(module)
    if _STATE["key"] != state_key:  # a new conversion: drop the files the last one kept open
        from l3 import inputs

        inputs.close_cached()
        mod._init_worker(state)
        _STATE["key"] = state_key
    return getattr(mod, name)(item)


def start(address: str | None) -> bool:
    """Connect to ``address`` or start a local instance sized to the machine; True when this call did."""
    import ray

    if ray.is_initialized():
        return False
    start_ray(address)
    return True


def imap(fn: Callable, items: list, workers: int, state: dict, address: str | None = None) -> Iterator:
    """``map(fn, items)`` as Ray tasks, in order, ``workers`` at a time (``fn`` a module-level function of
    a module with ``_init_worker(state)``, e.g. :func:`l3.convert._convert_one`)."""
    import ray

    workers = max(1, workers)
    started = start(address)
    try:
        task = ray.remote(num_cpus=1, max_retries=0)(_call)
        module = "l3.convert" if fn.__module__ == "__main__" else fn.__module__
        fn_path = f"{module}:{fn.__name__}"
        state_ref = ray.put(state)
        key = f"{os.getpid()}-{id(state)}-{os.urandom(4).hex()}"
        window: deque = deque()  # submitted and not yet yielded, in item order
        pending = iter(items)
        while True:
            done = set(ray.wait(list(window), num_returns=len(window), timeout=0)[0]) if window else set()
            # top up: `workers` tasks running, `2 * workers` results held at most
            while len(window) - len(done) < workers and len(window) < 2 * workers:
                item = next(pending, _END)
                if item is _END:
                    break
                window.append(task.remote(fn_path, key, state_ref, item))
            if not window:
                return
            if window[0] in done:
                try:
                    result = ray.get(window.popleft())
                except ray.exceptions.RayTaskError as exc:  # the task's own error, as a local worker raises it
                    raise exc.cause from None
                yield result
            else:
                ray.wait(list(window), num_returns=len(done) + 1)
    finally:
        if started:
            ray.shutdown()
