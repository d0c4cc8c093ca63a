"""The lift task's cameras on the real simulator (kit-less Newton, Warp ray tracer, CPU): what they see,
that recording them keeps memory flat, and their frames as GR00T videos (frames == rows, PSNR, LeRobot)."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest

pytest.importorskip("isaaclab")

import torch  # noqa: E402
from conftest import lerobot_python, run_probe, run_scripted  # noqa: E402

from l2.format.schema import LIFT_CAMERA_TERMS  # noqa: E402
from l2.lift.camera_cfg import CAMERA_HEIGHT, CAMERA_WIDTH  # noqa: E402
from l2.recording import sim  # noqa: E402
from l3 import layout  # noqa: E402
from l3.convert import convert  # noqa: E402
from l3.validate import validate  # noqa: E402
from l3.video import decode, psnr  # noqa: E402

pytestmark = pytest.mark.sim

REPO = Path(__file__).resolve().parents[1]
TASK = f"{sim.DEFAULT_TASK}-Scripted"
TOP_DOWN = (1.0, 0.0, 0.0, 0.0)
PSNR_MEAN_DB, PSNR_MIN_DB = 40.0, 35.0


def _cube_mask(img: torch.Tensor | np.ndarray) -> np.ndarray:
    """Pixels of the cube's red (diffuse 0.8, 0.1, 0.1; every lit face stays well apart from the grey/white scene)."""
    rgb = np.asarray(img).astype(int)
    return (rgb[..., 0] > 100) & (rgb[..., 0] - rgb[..., 1] > 60) & (rgb[..., 0] - rgb[..., 2] > 60)


def _project(camera, env_id: int, point_w: torch.Tensor) -> tuple[float, float]:
    """Pixel (u, v) of a world point in one env's camera image (pinhole, ROS camera axes)."""
    from isaaclab.utils.math import quat_apply_inverse

    data = camera.data
    p = quat_apply_inverse(data.quat_w_ros.torch[env_id : env_id + 1], (point_w - data.pos_w.torch[env_id])[None])[0]
    k = data.intrinsic_matrices.torch[env_id]
    return float(k[0, 0] * p[0] / p[2] + k[0, 2]), float(k[1, 1] * p[1] / p[2] + k[1, 2])


def _centroid(mask: np.ndarray) -> tuple[float, float]:
    ys, xs = np.nonzero(mask)
    return float(xs.mean()), float(ys.mean())


@pytest.fixture(scope="module")
def views():
    """Two envs with both cubes at the same local pose, then env 0's cube moved and its hand above the cube."""
    env_cfg = sim.load_env_cfg(TASK, "cpu", num_envs=2, seed=5)
    out: dict = {}
    with sim.make_env(env_cfg, TASK) as env:
        obs, _ = env.reset()
        robot, cube, ee = env.scene["robot"], env.scene["object"], env.scene["ee_frame"]
        table = env.scene["table_cam"]
        origins = env.scene.env_origins

        def place_cubes(local_xy: list[tuple[float, float]]) -> torch.Tensor:
            pose = torch.zeros(2, 7)
            pose[:, :2] = torch.tensor(local_xy) + origins[:, :2]
            pose[:, 2] = 0.02
            pose[:, 6] = 1.0
            cube.write_root_pose_to_sim_index(root_pose=pose, env_ids=torch.arange(2))
            cube.write_root_velocity_to_sim_index(root_velocity=torch.zeros(2, 6), env_ids=torch.arange(2))
            return pose[:, :3]

        def hold() -> torch.Tensor:  # keep both hands where they are, gripper open
            return torch.cat(
                [ee.data.target_pos_source.torch[:, 0], ee.data.target_quat_source.torch[:, 0], torch.ones(2, 1)],
                dim=-1,
            )

        env.step(hold())
        cube_w = place_cubes([(0.5, 0.0), (0.5, 0.0)])
        for _ in range(3):
            obs, *_ = env.step(hold())
        out["table"] = obs["cameras"]["table_cam"].clone()
        out["wrist_home"] = obs["cameras"]["wrist_cam"][0].clone()
        out["cube_uv"] = _project(table, 0, cube_w[0])
        out["cube_uv_env1"] = _project(table, 1, cube_w[1])

        cube_w = place_cubes([(0.45, 0.12), (0.5, 0.0)])
        for _ in range(3):
            obs, *_ = env.step(hold())
        out["table_moved"] = obs["cameras"]["table_cam"][0].clone()
        out["cube_uv_moved"] = _project(table, 0, cube_w[0])

        # env 0's hand 15 cm above its cube, pointing down
        root_pos = robot.data.root_pos_w.torch[0]
        above = torch.cat(
            [cube_w[0] - root_pos + torch.tensor([0.0, 0.0, 0.15]), torch.tensor(TOP_DOWN), torch.ones(1)]
        )
        for _ in range(60):
            action = hold()
            action[0] = above
            obs, *_ = env.step(action)
        out["ee_above"] = ee.data.target_pos_source.torch[0, 0].clone()
        out["wrist_above"] = obs["cameras"]["wrist_cam"][0].clone()
        out["above_target"] = above[:3]
    return out


def test_table_camera_sees_the_lit_workspace_and_only_its_own_env(views):
    table = views["table"].numpy()
    assert table.shape == (2, CAMERA_HEIGHT, CAMERA_WIDTH, 3) and table.dtype == np.uint8
    for img in table:  # lit, not blank, not black
        assert 60 < img.mean() < 220 and img.std() > 20
        assert (img.max(axis=-1) > 20).mean() > 0.99
    # Both envs in the same state: the same picture. A neighbouring env in view would make them differ.
    differs = np.abs(table[0].astype(int) - table[1].astype(int)).max(axis=-1) > 8
    assert differs.mean() < 0.005


def test_table_camera_shows_the_cube_where_it_is(views):
    for img, (u, v) in ((views["table"][0], views["cube_uv"]), (views["table_moved"], views["cube_uv_moved"])):
        mask = _cube_mask(img)
        assert mask.sum() > 100, "the cube is not in the picture"
        cu, cv = _centroid(mask)
        assert abs(cu - u) < 4 and abs(cv - v) < 4, ((cu, cv), (u, v))
        ys, xs = np.nonzero(mask)
        assert xs.max() - xs.min() + 1 >= 14  # the cube is about 15 px wide or more at 224 x 224
    # the cube moved in the image as it moved on the ground
    moved = np.subtract(views["cube_uv_moved"], views["cube_uv"])
    seen = np.subtract(_centroid(_cube_mask(views["table_moved"])), _centroid(_cube_mask(views["table"][0])))
    assert np.linalg.norm(moved) > 15 and np.linalg.norm(seen - moved) < 4


def test_wrist_camera_follows_the_hand_and_sees_the_cube_below_it(views):
    assert torch.linalg.vector_norm(views["ee_above"] - views["above_target"]) < 0.02, "the hand did not get there"
    home, above = views["wrist_home"].numpy(), views["wrist_above"].numpy()
    assert np.abs(home.astype(int) - above.astype(int)).mean() > 10  # the view moved with the hand
    mask = _cube_mask(above)
    assert mask.sum() > 500, "the cube below the hand is not in the wrist image"
    cu, _ = _centroid(mask)
    assert abs(cu - CAMERA_WIDTH / 2) < CAMERA_WIDTH / 4  # between the fingers, not at the edge


def test_presets_select_renderer_robot_and_no_cameras_without_editing_code():
    from isaaclab_newton.renderers import NewtonWarpRendererCfg
    from isaaclab_physx.renderers import IsaacRtxRendererCfg

    default = sim.load_env_cfg(TASK, "cpu", 1, seed=0)
    assert isinstance(default.scene.table_cam.renderer_cfg, NewtonWarpRendererCfg)
    assert default.scene.wrist_cam.prim_path.endswith("panda_link7/wrist_cam")
    assert set(default.observations.cameras.to_dict()) >= set(LIFT_CAMERA_TERMS)
    rtx = sim.load_env_cfg(TASK, "cpu", 1, seed=0, overrides=["renderer=isaacsim_rtx"])
    assert isinstance(rtx.scene.table_cam.renderer_cfg, IsaacRtxRendererCfg)
    assert isinstance(rtx.scene.wrist_cam.renderer_cfg, IsaacRtxRendererCfg)
    nucleus = sim.load_env_cfg(TASK, "cpu", 1, seed=0, overrides=["presets=franka_nucleus"])
    assert nucleus.scene.wrist_cam.prim_path == "{ENV_REGEX_NS}/Robot/panda_link7/wrist_cam"
    for overrides in (["presets=no_cameras"], ["presets=franka_nucleus,no_cameras"]):
        off = sim.load_env_cfg(TASK, "cpu", 1, seed=0, overrides=overrides)
        assert off.scene.table_cam is None and off.scene.wrist_cam is None and off.observations.cameras is None


def test_offline_franka_has_no_guide_sphere_to_be_seen():
    from pxr import Usd

    from l2.assets.franka_build import ensure_franka_usd

    stage = Usd.Stage.Open(str(ensure_franka_usd()))
    assert [p for p in stage.Traverse() if p.GetName() == "panda_link7"]
    assert not [str(p.GetPath()) for p in stage.Traverse() if "end_effector" in p.GetName()]


def _held_bytes(env) -> int:
    """Bytes of recorded values the RecorderManager holds in RAM for the running episodes."""

    def size(node) -> int:
        if isinstance(node, dict):
            return sum(size(v) for v in node.values())
        if isinstance(node, list):
            return sum(size(v) for v in node)
        return node.nbytes if isinstance(node, torch.Tensor) else 0

    return sum(size(env.recorder_manager.get_episode(i).data) for i in range(env.num_envs))


def _rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def test_recording_memory_does_not_grow_with_the_episode(tmp_path):
    """Long episodes with both cameras: what the recorder holds in RAM stays at the state terms' size."""
    from l2.recording.handler import configure_recording

    steps, warmup = 100, 10
    env_cfg = sim.load_env_cfg(TASK, "cpu", num_envs=2, seed=1, overrides=["env.episode_length_s=60"])
    configure_recording(env_cfg, tmp_path / "scripted_lift_cube.hdf5", TASK)
    with sim.make_env(env_cfg, TASK) as env:
        env.reset()
        ee = env.scene["ee_frame"].data
        action = torch.cat([ee.target_pos_source.torch[:, 0], ee.target_quat_source.torch[:, 0], torch.ones(2, 1)], -1)
        for i in range(warmup + steps):
            if i == warmup:
                held0, rss0 = _held_bytes(env), _rss_bytes()
            env.step(action)
        assert not env.termination_manager.dones.any()
        held, rss = _held_bytes(env) - held0, _rss_bytes() - rss0
        spool = next(tmp_path.glob(".scripted_lift_cube.*.frames.spool"))
        spooled = spool.stat().st_size
    frames = steps * 2 * len(LIFT_CAMERA_TERMS) * CAMERA_HEIGHT * CAMERA_WIDTH * 3  # kept in RAM otherwise
    print(
        f"{steps} steps x 2 envs: frames {frames / 1e6:.1f} MB, recorder RAM +{held / 1e6:.3f} MB, "
        f"RSS +{rss / 1e6:.1f} MB, spool file {spooled / 1e6:.1f} MB"
    )
    assert held < frames / 500  # only the state terms: ~0.2 kB per env and step
    assert rss < frames / 2
    assert not list(tmp_path.glob("*.spool")), "the spool file outlived the run"


@pytest.fixture(scope="module")
def converted(scripted_run, tmp_path_factory) -> Path:
    """The scripted source's camera demos (224 x 224) converted with the shipped mapping."""
    out = tmp_path_factory.mktemp("gr00t") / "ds"
    convert([str(scripted_run[0])], out, config=REPO / "config" / "lift_cube.yaml", log=lambda m: None)
    return out


def test_recorded_frames_become_videos_with_one_frame_per_row_at_40_db(scripted_run, converted):
    assert validate(converted) == []
    episodes = [json.loads(line) for line in (converted / layout.EPISODES_PATH).read_text().splitlines()]
    modality = json.loads((converted / layout.MODALITY_PATH).read_text())
    assert sorted(modality["video"]) == sorted(LIFT_CAMERA_TERMS)
    scores = []
    with h5py.File(scripted_run[0]) as f:
        for e in episodes:
            for cam in LIFT_CAMERA_TERMS:
                video = converted / layout.video_path(e["episode_index"], layout.video_key(cam))
                decoded = np.stack(list(decode(video)))
                recorded = f[f"data/{e['demo']}/obs/{cam}"][()]
                assert len(decoded) == len(recorded) == e["length"]
                scores.append(psnr(recorded, decoded))
    scores = np.concatenate(scores)
    print(f"PSNR of {len(scores)} frames: mean {scores.mean():.1f} dB, min {scores.min():.1f} dB")
    assert scores.mean() >= PSNR_MEAN_DB and scores.min() >= PSNR_MIN_DB


@pytest.mark.lerobot
def test_recorded_camera_dataset_loads_in_lerobot_reading_every_frame(converted, tmp_path):
    info = json.loads((converted / layout.INFO_PATH).read_text())
    got = run_probe(lerobot_python("v21"), "load", converted, tmp_path)
    assert got["frames"] == got["frames_read"] == info["total_frames"]
    assert got["cameras"] == [f"observation.images.{c}" for c in LIFT_CAMERA_TERMS]


@pytest.fixture(scope="module")
def variety_run(tmp_path_factory) -> Path:
    """Two scripted demos of the variety scene (seed 11, the README's) with both 224 x 224 cameras."""
    out = tmp_path_factory.mktemp("variety") / "scripted_lift_cube.hdf5"
    proc = run_scripted(
        *("--num_envs", "2", "--num_demos", "2", "--workers", "1", "--seed", "11", "--output", str(out)),
        "presets=variety",
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


def test_variety_frames_become_videos_at_40_db_per_camera(variety_run, tmp_path):
    """The variety scene's colored cubes and mats are where yuv420p loses most (its cap there is 40-42 dB, below what
    video.pix_fmt auto keeps yuv420p for): through the decoder each camera keeps >= 40 dB mean PSNR
    (docs/cameras.md#video-quality-per-scene)."""
    out = tmp_path / "ds"
    convert([str(variety_run)], out, config=REPO / "config" / "lift_cube.yaml", log=lambda m: None)
    episodes = [json.loads(line) for line in (out / layout.EPISODES_PATH).read_text().splitlines()]
    scores: dict[str, list[np.ndarray]] = {cam: [] for cam in LIFT_CAMERA_TERMS}
    with h5py.File(variety_run) as f:
        for e in episodes:
            for cam in LIFT_CAMERA_TERMS:
                video = out / layout.video_path(e["episode_index"], layout.video_key(cam))
                scores[cam].append(psnr(f[f"data/{e['demo']}/obs/{cam}"][()], np.stack(list(decode(video)))))
    means = {cam: float(np.concatenate(s).mean()) for cam, s in scores.items()}
    print("variety scene, mean PSNR per camera:", {cam: round(m, 2) for cam, m in means.items()})
    assert min(means.values()) >= PSNR_MEAN_DB, means
