"""Runs INSIDE robomimic's venv (scripts/setup_robomimic.sh), not under pytest.

    python l2_robomimic_probe.py FILE FILTER_KEY

Builds robomimic's own SequenceDataset on an L2 file, restricted to a filter key, in two configurations:

- ``lazy``: every obs term (cameras as robomimic's ``rgb`` modality, the rest ``low_dim``), read from the
  file on each item, ``dataset_keys=("actions",)``, batched by a torch DataLoader and processed as
  robomimic's training does (``process_obs_dict``: frames to (C, H, W) floats in [0, 1]);
- ``cached``: Isaac Lab's robomimic config for the lift task (``hdf5_cache_mode="all"``,
  ``dataset_keys`` actions/rewards/dones) on the low-dim terms.

Both with ``load_next_obs=False``: L2 files (like Isaac Lab's) hold no ``next_obs``. Prints one JSON
line with what it found; any failure is a traceback and a non-zero exit.
"""

from __future__ import annotations

import json
import sys

import h5py
import numpy as np


def obs_specs(path: str) -> dict[str, list[str]]:
    """robomimic modalities of the obs terms of the file's first demo: (T, H, W, 3) uint8 = rgb, else low_dim."""
    with h5py.File(path, "r") as f:
        obs = f["data/demo_0/obs"]
        rgb = sorted(k for k in obs if obs[k].ndim == 4 and obs[k].dtype == np.uint8)
        low_dim = sorted(k for k in obs if k not in rgb)
    return {"low_dim": low_dim, "rgb": rgb}


def main(path: str, filter_key: str) -> dict:
    import robomimic
    import robomimic.utils.obs_utils as ObsUtils
    import torch
    from robomimic.utils.dataset import SequenceDataset

    specs = obs_specs(path)
    ObsUtils.initialize_obs_utils_with_obs_specs({"obs": specs})
    keys = specs["low_dim"] + specs["rgb"]
    with h5py.File(path, "r") as f:
        wanted = sorted(n.decode() for n in f[f"mask/{filter_key}"][()])
        lengths = {d: int(f[f"data/{d}"].attrs["num_samples"]) for d in wanted}
        shapes = {k: f[f"data/demo_0/obs/{k}"].shape[1:] for k in keys}
        action_dim = f["data/demo_0/actions"].shape[1]

    lazy = SequenceDataset(
        path,
        obs_keys=keys,
        dataset_keys=("actions",),
        filter_by_attribute=filter_key,
        load_next_obs=False,
        hdf5_cache_mode=None,
        seq_length=1,
    )
    assert sorted(lazy.demos) == wanted, (lazy.demos, wanted)
    assert len(lazy) == sum(lengths.values()), (len(lazy), lengths)
    items = 0
    loader = torch.utils.data.DataLoader(lazy, batch_size=16, shuffle=False, num_workers=0)
    for batch in loader:
        b = batch["actions"].shape[0]
        assert tuple(batch["actions"].shape) == (b, 1, action_dim), batch["actions"].shape
        obs = ObsUtils.process_obs_dict(batch["obs"])
        for k in specs["low_dim"]:
            assert tuple(obs[k].shape) == (b, 1, *shapes[k]), (k, obs[k].shape)
        for k in specs["rgb"]:
            h, w, c = shapes[k]
            assert tuple(obs[k].shape) == (b, 1, c, h, w), (k, obs[k].shape)
            assert float(obs[k].min()) >= 0.0 and float(obs[k].max()) <= 1.0
        items += b

    cached = SequenceDataset(
        path,
        obs_keys=specs["low_dim"],
        dataset_keys=("actions", "rewards", "dones"),
        filter_by_attribute=filter_key,
        load_next_obs=False,
        hdf5_cache_mode="all",
    )
    cached_items = 0
    for i in range(len(cached)):
        item = cached[i]
        assert item["actions"].shape == (1, action_dim), item["actions"].shape
        assert item["rewards"].shape == (1, 1) and item["dones"].shape == (1, 1)
        cached_items += 1
    return {
        "robomimic": robomimic.__version__,
        "demos": lazy.demos,
        "items": items,
        "cached_items": cached_items,
        "low_dim": specs["low_dim"],
        "rgb": specs["rgb"],
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
