"""Small L2 HDF5 files for the L3 tests, written with h5py following docs/l2-hdf5-schema.md."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np

from l2.format import schema
from l3 import card

ENV_NAME = "Isaac-Lift-Cube-Franka-IK-Abs-v0"
CAMERAS = ("table_cam", "wrist_cam")
"""The camera obs terms of the lift-cube task (``config/lift_cube.yaml`` maps both)."""
CAMERA = f"obs/{CAMERAS[0]}"
CAM_H, CAM_W = 48, 64


def make_demo(
    rng: np.random.Generator,
    T: int,
    *,
    success: bool = True,
    camera: bool = False,
    legacy: bool = False,
    seed: int | None = None,
    frame_size: tuple[int, int] = (CAM_H, CAM_W),
) -> dict:
    """Arrays and attrs of one lift-cube episode (random but realistic shapes and dtypes)."""
    quat = rng.normal(size=(T, 4)).astype(np.float32)
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)  # qx, qy, qz, qw
    if legacy:
        quat = quat[:, [3, 0, 1, 2]]  # stored w, x, y, z
    actions = np.concatenate(
        [rng.normal(size=(T, 3)).astype(np.float32), quat, np.sign(rng.normal(size=(T, 1))).astype(np.float32)], axis=1
    )
    obs = {
        "joint_pos": rng.normal(size=(T, 9)).astype(np.float32),
        "joint_vel": rng.normal(size=(T, 9)).astype(np.float32),
        "object_position": rng.normal(size=(T, 3)).astype(np.float32),
        "target_object_position": rng.normal(size=(T, 7)).astype(np.float32),
        "actions": np.roll(actions, 1, axis=0),
    }
    if camera:
        h, w = frame_size
        yy, xx = np.mgrid[0:h, 0:w]
        for k, name in enumerate(CAMERAS):
            frames = np.zeros((T, h, w, 3), dtype=np.uint8)
            for t in range(T):  # a moving gradient plus a moving square, different per camera
                frames[t, :, :, 0] = (xx * 4 + t * 7 + 50 * k) % 256
                frames[t, :, :, 1] = (yy * 5 + t * 3) % 256
                x0 = (t * 3 + 11 * k) % (w - 8)
                frames[t, 10:18, x0 : x0 + 8, 2] = 255
            obs[name] = frames
    attrs = {"num_samples": T, "success": success}
    if seed is not None:
        attrs["seed"] = seed
    return {"actions": actions, "obs": obs, "attrs": attrs}


SIM_ARGS = {"dt": 0.005, "decimation": 4, "render_interval": 4, "num_envs": 4}
"""What Isaac Lab's RecorderManager merges into env_args: the lift task's 50 Hz control rate."""
ISAACLAB_STORAGE = {"compression": "gzip", "compression_opts": 2}
"""How Isaac Lab's HDF5DatasetFileHandler stores each dataset (and so every L2 source)."""


def write_l2(
    path: str | Path,
    demos: list[dict],
    *,
    format_version: int | None = schema.FORMAT_VERSION,
    env_name: str = ENV_NAME,
    storage: dict | None = None,
    sim_args: dict | None = SIM_ARGS,
) -> Path:
    """Write demos as /data/demo_<i> (in order) into an L2 file; ``storage``: h5py dataset options
    (None: contiguous, uncompressed; :data:`ISAACLAB_STORAGE`: as the L2 recorder writes them)."""
    storage = storage or {}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w") as f:
        if format_version is not None:
            f.attrs[schema.ATTR_FORMAT_VERSION] = format_version
        data = f.create_group(schema.DATA_GROUP)
        data.attrs[schema.ATTR_TOTAL] = sum(d["attrs"]["num_samples"] for d in demos)
        env_args = {"env_name": env_name, "type": schema.ENV_ARGS_TYPE}
        if sim_args is not None:
            env_args["sim_args"] = sim_args
        data.attrs[schema.ATTR_ENV_ARGS] = json.dumps(env_args)
        for i, d in enumerate(demos):
            g = data.create_group(schema.demo_name(i))
            for k, v in d["attrs"].items():
                g.attrs[k] = v
            g.create_dataset(schema.ACTIONS, data=d["actions"], **storage)
            obs = g.create_group(schema.OBS)
            for k, v in d["obs"].items():
                # the recorder writes camera frames one chunk per frame (l2/recording/camera_frames.py)
                chunks = {"chunks": (1, *v.shape[1:])} if storage and v.ndim == 4 else {}
                obs.create_dataset(k, data=v, **storage, **chunks)
    return path


def make_l2_file(
    path: str | Path,
    n: int = 3,
    *,
    seed: int = 0,
    length: int = 12,
    failed: tuple[int, ...] = (),
    camera: bool = False,
    legacy: bool = False,
    frame_size: tuple[int, int] = (CAM_H, CAM_W),
) -> Path:
    """An L2 file of ``n`` episodes of lengths length, length+1, ...; ``failed`` demos have success=False."""
    rng = np.random.default_rng(seed)
    demos = [
        make_demo(
            rng,
            length + i,
            success=i not in failed,
            camera=camera,
            legacy=legacy,
            seed=seed * 100 + i,
            frame_size=frame_size,
        )
        for i in range(n)
    ]
    return write_l2(path, demos, format_version=None if legacy else schema.FORMAT_VERSION)


def assert_same_dataset(a: Path, b: Path, suffix: str = "") -> list[Path]:
    """Assert that datasets ``a`` and ``b`` hold the same files, byte for byte, but for the commands in their cards
    (another output folder, ``--workers``, ``--engine``); return a's files ending in ``suffix``."""
    assert card.differing_files(a, b) == []
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert Path(card.CARD_PATH) in files
    return [rel for rel in files if rel.name.endswith(suffix)]


def state_only_config(tmp: str | Path, base: str | Path) -> Path:
    """A copy of a mapping config without its cameras, for state-only inputs."""
    import yaml

    doc = yaml.safe_load(Path(base).read_text())
    doc["cameras"] = {}
    out = Path(tmp) / f"{Path(base).stem}_state_only.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


# --------------------------------------------------------------------------- the SO-101's lift task
SO101_ENV_NAME = "L2-Lift-Cube-SO101-JointPos-Scripted"
SO101_CAMERAS = ("front", "wrist")
"""The camera obs terms of the SO-101's lift task (``config/so101_lift_cube.yaml`` maps both)."""
SO101_LIMITS = np.array(
    [[-1.9199, 1.9199], [-1.7453, 1.7453], [-1.6900, 1.6900], [-1.6581, 1.6581], [-2.7438, 2.8412], [-0.1745, 1.7453]]
)
"""Joint limits (rad) of shoulder_pan, shoulder_lift, elbow_flex, wrist_flex, wrist_roll, gripper (docs/so101.md)."""
SO101_SIM_ARGS = {"dt": 1 / 120, "decimation": 4, "render_interval": 4, "num_envs": 4}
"""The SO-101 task's 30 Hz control rate."""
SO101_FRAME = (224, 224)


def make_so101_demo(
    rng: np.random.Generator, T: int, *, success: bool = True, camera: bool = True, frame_size=SO101_FRAME
) -> dict:
    """One SO-101 lift episode as the task records it: ``actions`` (T, 6) absolute joint-position targets (rad),
    ``obs/joint_pos`` (T, 6) within the joint limits, ``obs/joint_vel``, cameras ``obs/front`` and ``obs/wrist``."""
    lo, hi = SO101_LIMITS[:, 0], SO101_LIMITS[:, 1]
    joint_pos = rng.uniform(lo * 0.98, hi * 0.98, size=(T, 6)).astype(np.float32)
    actions = np.clip(joint_pos + rng.normal(scale=0.05, size=(T, 6)), lo * 0.98, hi * 0.98).astype(np.float32)
    obs = {
        "joint_pos": joint_pos,
        "joint_vel": rng.normal(size=(T, 6)).astype(np.float32),
        "object_position": rng.normal(size=(T, 3)).astype(np.float32),
    }
    if camera:
        h, w = frame_size
        yy, xx = np.mgrid[0:h, 0:w]
        for k, name in enumerate(SO101_CAMERAS):
            frames = np.zeros((T, h, w, 3), dtype=np.uint8)
            for t in range(T):
                frames[t, :, :, 0] = (xx + t * 5 + 60 * k) % 256
                frames[t, :, :, 1] = (yy + t * 2) % 256
                frames[t, :, :, 2] = 128
            obs[name] = frames
    return {"actions": actions, "obs": obs, "attrs": {"num_samples": T, "success": success}}


def make_so101_file(path: str | Path, n: int = 2, *, seed: int = 0, length: int = 10, **kw) -> Path:
    """An SO-101 lift L2 file of ``n`` episodes of lengths length, length+1, ... (30 Hz)."""
    rng = np.random.default_rng(seed)
    demos = [make_so101_demo(rng, length + i, **kw) for i in range(n)]
    return write_l2(path, demos, env_name=SO101_ENV_NAME, sim_args=SO101_SIM_ARGS)
