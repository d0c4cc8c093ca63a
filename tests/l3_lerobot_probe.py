"""Runs INSIDE a LeRobot venv (scripts/setup_lerobot.sh), not under pytest.

    python l3_lerobot_probe.py load DIR         # lerobot 0.3.x: LeRobotDataset v2.1, read every frame
    python l3_lerobot_probe.py load_v30 DIR NPZ # lerobot 0.6.x: LeRobotDataset v3.0, read every frame into NPZ

Prints one JSON line with what it found; any failure is a traceback and a non-zero exit.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

REPO_ID = "l3test/lift_cube"


def read_all(ds, info: dict) -> dict:
    """Read every item; check shapes against info.json; return counts."""
    feats = info["features"]
    cams = [k for k, f in feats.items() if f["dtype"] == "video"]
    state_dim, action_dim = feats["observation.state"]["shape"][0], feats["action"]["shape"][0]
    tasks = set()
    for i in range(len(ds)):
        item = ds[i]
        assert tuple(item["observation.state"].shape) == (state_dim,), item["observation.state"].shape
        assert tuple(item["action"].shape) == (action_dim,), item["action"].shape
        assert int(item["index"]) == i, (int(item["index"]), i)
        for cam in cams:
            h, w, c = feats[cam]["shape"]
            assert tuple(item[cam].shape) == (c, h, w), (cam, item[cam].shape)
            assert float(item[cam].min()) >= 0.0 and float(item[cam].max()) <= 1.0
        tasks.add(item["task"])
    return {"frames_read": len(ds), "cameras": cams, "tasks": sorted(tasks)}


def load(root: Path) -> dict:
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    info = json.loads((root / "meta/info.json").read_text())
    ds = LeRobotDataset(REPO_ID, root=root, video_backend="pyav")
    assert ds.num_episodes == info["total_episodes"], (ds.num_episodes, info["total_episodes"])
    assert ds.num_frames == info["total_frames"], (ds.num_frames, info["total_frames"])
    out = read_all(ds, info)
    out.update(episodes=ds.num_episodes, frames=ds.num_frames, stats_keys=sorted(ds.meta.stats))
    return out


def load_v30(root: Path, npz: Path) -> dict:
    """lerobot 0.6.x: open a v3.0 dataset, read every item (videos decoded), save the frames to ``npz``; the
    episode metadata as LeRobot exposes it (ds.meta.episodes) and a per-source episode_filter."""
    import lerobot
    import numpy as np
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    info = json.loads((root / "meta/info.json").read_text())
    ds = LeRobotDataset(REPO_ID, root=root, video_backend="pyav")
    assert ds.meta.info.codebase_version == "v3.0", ds.meta.info.codebase_version
    assert ds.num_episodes == info["total_episodes"], (ds.num_episodes, info["total_episodes"])
    assert ds.num_frames == info["total_frames"], (ds.num_frames, info["total_frames"])
    out = read_all(ds, info)
    items = [ds[i] for i in range(len(ds))]
    arrays = {k: np.stack([it[k].numpy() for it in items]) for k in items[0] if k != "task"}
    arrays["task"] = np.array([it["task"] for it in items])
    np.savez(npz, **arrays)
    episodes = [{k: v for k, v in row.items()} for row in ds.meta.episodes]
    by_source = {}
    for src in sorted({e["source"] for e in episodes}):
        sub = LeRobotDataset(REPO_ID, root=root, video_backend="pyav", episode_filter=lambda e, s=src: e["source"] == s)
        by_source[src] = {
            "episodes": sub.num_episodes,
            "frames": sub.num_frames,
            "sources": sorted({sub.meta.episodes[int(i)]["source"] for i in sub.episodes}),
        }
    out.update(
        lerobot=lerobot.__version__,
        frames=ds.num_frames,
        episodes=episodes,
        by_source=by_source,
        stats={k: sorted(v) for k, v in ds.meta.stats.items()},
    )
    return out


if __name__ == "__main__":
    mode, root, rest = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
    result = {"load": load, "load_v30": load_v30}[mode](root, *map(Path, rest))
    print(json.dumps(result))
