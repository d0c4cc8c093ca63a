"""Runs INSIDE a LeRobot venv (scripts/setup_lerobot.sh), not under pytest.

    python l3_lerobot_probe.py load DIR         # lerobot 0.3.x: LeRobotDataset v2.1, read every frame
    python l3_lerobot_probe.py load_v30 DIR NPZ # lerobot 0.6.x: LeRobotDataset v3.0, read every frame into NPZ
    python l3_lerobot_probe.py merge_so101 DIR WORK NPZ  # lerobot 0.6.x: our SO-101 v3.0 output merged with a
                                                # recording made with LeRobot's API (docs/so101_dataset.md)
    python l3_lerobot_probe.py norm_so101 JSON OUT  # lerobot 0.6.x: MotorsBus._normalize on the ticks in JSON

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


SO101_MOTORS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper")
"""so101_follower's motors, in its order (lerobot/robots/so_follower/so_follower.py; checked against its source)."""
SO101_EXTRA = ["next.reward", "next.done", "annotation.human.task_description"]
"""Our columns that a LeRobot recording has not (GR00T's): removed before merging."""


def so101_features(cameras: dict[str, tuple[int, int]]) -> dict:
    """The dataset features lerobot-record writes for so101_follower with these cameras (name -> (h, w)):
    ``hw_to_dataset_features`` of the robot's action and observation features (the robot itself cannot be built
    here: its bus needs the Feetech SDK)."""
    import inspect

    from lerobot.robots.so_follower import so_follower
    from lerobot.utils.feature_utils import hw_to_dataset_features

    source = inspect.getsource(so_follower.SOFollower)
    assert all(f'"{m}": Motor(' in source for m in SO101_MOTORS), "so101_follower's motors changed"
    motors = {f"{m}.pos": float for m in SO101_MOTORS}  # SOFollower._motors_ft
    cams = {k: (h, w, 3) for k, (h, w) in cameras.items()}  # SOFollower._cameras_ft
    return {
        **hw_to_dataset_features(motors, "action"),
        **hw_to_dataset_features({**motors, **cams}, "observation"),
    }


def merge_so101(ours: Path, work: Path, npz: Path) -> dict:
    """lerobot 0.6.x: record a stand-in for a real SO-101 dataset with LeRobot's own API (so101_follower's features,
    cameras front and wrist at our size, fps 30, LeRobot's default encoder), bring our v3.0 output to the same
    features with LeRobot's tools as docs/so101_dataset.md tells, merge both with ``merge_datasets`` and read the
    result back; our episodes' rows go to ``npz``."""
    import inspect

    import lerobot
    import numpy as np
    from lerobot.configs.video import encoder_config_from_video_info
    from lerobot.datasets.dataset_tools import merge_datasets, reencode_dataset, remove_feature
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    from lerobot.robots.so_follower import so_follower
    from lerobot.robots.so_follower.config_so_follower import SOFollowerConfig

    mine = LeRobotDataset("local/so101_sim", root=ours, video_backend="pyav")
    cams = {
        k.removeprefix("observation.images."): tuple(mine.meta.features[k]["shape"][:2]) for k in mine.meta.camera_keys
    }
    real_root = work / "real"
    real = LeRobotDataset.create(
        "local/so101_real", fps=30, features=so101_features(cams), root=real_root, robot_type="so101_follower"
    )
    rng = np.random.default_rng(7)
    real_tasks = ["Put the cube in the box.", "Pick up the cube and lift it."]
    for ep, task in enumerate(real_tasks):
        for t in range(6 + ep):
            frame = {"task": task}
            for key in ("observation.state", "action"):  # degrees for the arm, 0..100 for the gripper
                frame[key] = np.append(rng.uniform(-90, 90, 5), rng.uniform(0, 100)).astype(np.float32)
            for cam, (h, w) in cams.items():
                frame[f"observation.images.{cam}"] = np.full((h, w, 3), 40 * t % 256, np.uint8)
            real.add_frame(frame)
        real.save_episode()
    real.finalize()
    real = LeRobotDataset("local/so101_real", root=real_root, video_backend="pyav")

    # 1. our columns a recording has not; 2. the per-feature fps LeRobot's v2.1 -> v3.0 converter adds; 3. the
    # recording's video encoder (its codec is part of the features LeRobot compares)
    prepared = work / "sim_prepared"
    remove_feature(mine, SO101_EXTRA, output_dir=prepared, repo_id="local/so101_sim_prepared")
    info_path = prepared / "meta/info.json"
    info = json.loads(info_path.read_text())
    for feature in info["features"].values():
        feature.pop("fps", None)
    info_path.write_text(json.dumps(info, indent=4))
    prepared_ds = LeRobotDataset("local/so101_sim_prepared", root=prepared, video_backend="pyav")
    encoder = encoder_config_from_video_info(real.meta.features[real.meta.camera_keys[0]]["info"])
    reencode_dataset(prepared_ds, rgb_encoder=encoder)
    prepared_ds = LeRobotDataset("local/so101_sim_prepared", root=prepared, video_backend="pyav")

    merged_root = work / "merged"
    merge_datasets([real, prepared_ds], "local/so101_merged", output_dir=merged_root)
    merged = LeRobotDataset("local/so101_merged", root=merged_root, video_backend="pyav")
    info = json.loads((merged_root / "meta/info.json").read_text())
    out = read_all(merged, info)
    items = [merged[i] for i in range(len(merged))]
    np.savez(
        npz, **{k: np.stack([it[k].numpy() for it in items]) for k in ("observation.state", "action", "episode_index")}
    )
    episodes = [
        {k: row[k] for k in ("episode_index", "tasks", "length", "source", "success")} for row in merged.meta.episodes
    ]
    out.update(
        lerobot=lerobot.__version__,
        use_degrees_default=SOFollowerConfig.__dataclass_fields__["use_degrees"].default,
        degrees_when_use_degrees="MotorNormMode.DEGREES if config.use_degrees" in inspect.getsource(so_follower),
        episodes=episodes,
        frames=merged.num_frames,
        real_frames=real.num_frames,
        tasks=sorted(merged.meta.tasks.index),
        robot_type=info["robot_type"],
        fps=info["fps"],
        features=sorted(info["features"]),
        names=info["features"]["observation.state"]["names"],
    )
    return out


def norm_so101(ticks_json: Path, out_json: Path) -> dict:
    """lerobot 0.6.x: what ``MotorsBus._normalize`` makes of raw servo ticks, per norm mode and calibrated range
    (JSON: ``[{"mode": ..., "range_min": ..., "range_max": ..., "ticks": [...]}, ...]``), written to ``out_json``."""
    from types import SimpleNamespace

    from lerobot.motors import Motor, MotorCalibration, MotorNormMode
    from lerobot.motors.feetech.tables import MODEL_RESOLUTION
    from lerobot.motors.motors_bus import MotorsBus

    cases = json.loads(ticks_json.read_text())
    results = []
    for case in cases:
        motor = Motor(1, "sts3215", MotorNormMode(case["mode"]))
        bus = SimpleNamespace(
            calibration={"m": MotorCalibration(1, 0, 0, case["range_min"], case["range_max"])},
            motors={"m": motor},
            apply_drive_mode=False,
            model_resolution_table=MODEL_RESOLUTION,
            _id_to_name=lambda _id: "m",
            _id_to_model=lambda _id: "sts3215",
        )
        results.append([MotorsBus._normalize(bus, {1: t})[1] for t in case["ticks"]])
    out_json.write_text(json.dumps(results))
    return {"cases": len(results)}


if __name__ == "__main__":
    mode, root, rest = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
    modes = {"load": load, "load_v30": load_v30, "merge_so101": merge_so101, "norm_so101": norm_so101}
    result = modes[mode](root, *map(Path, rest))
    print(json.dumps(result))
