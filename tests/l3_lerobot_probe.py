"""Runs INSIDE a LeRobot venv (scripts/setup_lerobot.sh), not under pytest.

    python l3_lerobot_probe.py load DIR     # lerobot 0.3.x: LeRobotDataset v2.1, read every frame
    python l3_lerobot_probe.py v30 DIR      # lerobot 0.4.x: v2.1 -> v3.0 converter on a copy, reload

Prints one JSON line with what it found; any failure is a traceback and a non-zero exit.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
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


def v30(root: Path) -> dict:
    import lerobot
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    from lerobot.datasets.v30.convert_dataset_v21_to_v30 import convert_dataset

    info = json.loads((root / "meta/info.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / REPO_ID
        shutil.copytree(root, work)
        convert_dataset(repo_id=REPO_ID, root=tmp, push_to_hub=False, force_conversion=True)
        new_info = json.loads((work / "meta/info.json").read_text())
        assert new_info["codebase_version"] == "v3.0", new_info["codebase_version"]
        ds = LeRobotDataset(REPO_ID, root=work, video_backend="pyav")
        assert ds.num_episodes == info["total_episodes"], (ds.num_episodes, info["total_episodes"])
        assert ds.num_frames == info["total_frames"], (ds.num_frames, info["total_frames"])
        out = read_all(ds, info)
    out.update(lerobot=lerobot.__version__, codebase_version=new_info["codebase_version"])
    return out


if __name__ == "__main__":
    mode, root = sys.argv[1], Path(sys.argv[2])
    result = {"load": load, "v30": v30}[mode](root)
    print(json.dumps(result))
