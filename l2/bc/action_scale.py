"""Actions scaled into robomimic's output range, and back.

robomimic 0.3.0's BC squashes its output with ``tanh``: it can only predict actions in [-1, 1]. The Franka's
IK-absolute actions (metres near the base, a unit quaternion, a ±1 gripper) are inside; the SO-101's joint targets
(radians, up to 1.6) are not. For such data the trainer writes a training copy whose ``actions`` are scaled per
column from their range over the training demos onto [-1, 1] (with a small margin: ``tanh`` never reaches 1), and
stores the scale in each checkpoint under ``action_normalization_stats``, the key and layout (``{"actions":
{"scale", "offset"}}``, ``raw = normalized * scale + offset``) robomimic's later releases store their own
"min_max" action normalization under; the served policy (:mod:`l2.bc.robomimic_policy`) undoes it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import h5py
import numpy as np

KEY = "action_normalization_stats"
"""Where a checkpoint holds the scale (robomimic's own name for it)."""
ACTIONS = "actions"
LIMIT = 0.98
"""The scaled range: the demos' lowest and highest actions become -LIMIT and LIMIT."""


def fit(path: Path, demos: list[str]) -> dict[str, np.ndarray] | None:
    """The per-column scale and offset that take the actions of ``demos`` (the training split) onto
    [-LIMIT, LIMIT]; None when they are already inside [-1, 1] (nothing to scale)."""
    with h5py.File(path, "r") as f:
        actions = np.concatenate([f[f"data/{d}/{ACTIONS}"][()] for d in demos]).astype(np.float64)
    if np.abs(actions).max() <= 1.0:
        return None
    lo, hi = actions.min(axis=0), actions.max(axis=0)
    scale = np.maximum((hi - lo) / 2, 1e-6) / LIMIT  # a constant column keeps a usable scale
    return {"scale": scale[None].astype(np.float32), "offset": ((hi + lo) / 2)[None].astype(np.float32)}


def normalize(actions: np.ndarray, stats: dict[str, np.ndarray]) -> np.ndarray:
    return ((actions - stats["offset"][0]) / stats["scale"][0]).astype(np.float32)


def unnormalize(actions: np.ndarray, stats: dict[str, np.ndarray]) -> np.ndarray:
    """Rows ``(B, D)`` the network predicted, back in the data's units."""
    return (actions * np.asarray(stats["scale"])[0] + np.asarray(stats["offset"])[0]).astype(np.float32)


def write_training_copy(src: Path, dst: Path, stats: dict[str, np.ndarray]) -> None:
    """``src`` (its masks too) copied to ``dst`` with every demo's ``actions`` scaled: what robomimic trains on."""
    partial = dst.with_name(f".{dst.name}.partial")
    shutil.copyfile(src, partial)
    with h5py.File(partial, "r+") as f:
        for name in f["data"]:
            ds = f[f"data/{name}/{ACTIONS}"]
            ds[...] = normalize(ds[()], stats)
    partial.replace(dst)


def store_in_checkpoints(robomimic_python: str, checkpoints: list[Path], stats: dict[str, np.ndarray]) -> None:
    """Add the scale to each robomimic checkpoint (a torch pickle, rewritten in robomimic's venv)."""
    # Plain lists, not numpy arrays: torch.load's default (weights_only) refuses unpickling those.
    script = (
        "import json, sys, torch\n"
        "stats = json.loads(sys.argv[1])\n"
        "for path in sys.argv[2:]:\n"
        "    ckpt = torch.load(path, map_location='cpu', weights_only=False)\n"
        f"    ckpt[{KEY!r}] = {{{ACTIONS!r}: stats}}\n"
        "    torch.save(ckpt, path)\n"
    )
    payload = json.dumps({k: v.tolist() for k, v in stats.items()})
    subprocess.run([robomimic_python, "-c", script, payload, *map(str, checkpoints)], check=True)
