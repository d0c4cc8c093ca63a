"""Ray for the scale-out commands (``python -m l2.distributed``, ``l3/convert.py --engine ray``): join a cluster or
start a local instance. Ray is imported only when called (the ``ray`` extra, docs/ray.md)."""

from __future__ import annotations

import os


def start_ray(address: str | None):
    """Join ``address``, or start a local instance with one CPU per core (no dashboard, logs under Ray's
    temp dir, outside the repository)."""
    import ray

    if ray.is_initialized():
        return ray
    kw = {"log_to_driver": False, "logging_level": "WARNING"}
    if address:
        ray.init(address=address, **kw)
    else:
        ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, **kw)
    return ray
