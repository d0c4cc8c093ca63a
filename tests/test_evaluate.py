"""Closed-loop evaluation in the real task: the shipped PPO policy, the replay of converted scripted demos over
the protocol (in-process and through ``python -m l2.serve`` on a socket, both mappings), recorded rollouts
and their source tag, and each bad input refused in one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
import yaml
from conftest import free_port

pytest.importorskip("isaaclab")

from l2.format.validate import validate_file  # noqa: E402
from l2.policy import protocol  # noqa: E402
from l3.convert import convert  # noqa: E402
from l3.validate import validate  # noqa: E402
from l3.video import probe  # noqa: E402

pytestmark = pytest.mark.sim

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "config" / "lift_cube.yaml"
SPLIT_CONFIG = REPO / "config" / "lift_cube_split_pose.yaml"
SMALL_CAMERAS = [f"env.scene.{cam}.{side}=64" for cam in ("table_cam", "wrist_cam") for side in ("height", "width")]
"""The evaluations below render 64 x 64 images (the cost is per pixel); the protocol carries them the same way."""


def evaluate(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "l2.evaluate", *args], capture_output=True, text=True, timeout=timeout, cwd=REPO
    )


def _one_error_line(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return lines[0]


# ------------------------------------------------------------------------------------------ the PPO policy
@pytest.fixture(scope="module")
def ppo_run(tmp_path_factory):
    """The shipped policy over 8 episodes (one wave of 4 envs, then another), filmed and recorded, failures kept."""
    tmp = tmp_path_factory.mktemp("eval_ppo")
    record = tmp / "policy_lift_cube.hdf5"
    proc = evaluate(
        "--episodes",
        "8",
        "--num_envs",
        "4",
        "--seed",
        "3",
        "--report",
        str(tmp / "report.json"),
        "--videos",
        str(tmp / "videos"),
        "--video-episodes",
        "1",
        "--record",
        str(record),
        "--keep-failed",
        "--min-success",
        "0.75",
        *SMALL_CAMERAS,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return tmp, json.loads((tmp / "report.json").read_text()), proc.stdout


def test_shipped_policy_succeeds_and_reports(ppo_run):
    _, report, stdout = ppo_run
    assert report["episodes"] == 8 and report["episodes_requested"] == 8
    assert report["success_rate"] >= 0.75
    lo, hi = report["wilson_95"]
    assert lo < report["success_rate"] <= hi <= 1.0
    assert sorted(e["episode"] for e in report["per_episode"]) == list(range(8))
    assert {e["wave"] for e in report["per_episode"]} == {0, 1}
    for e in report["per_episode"]:
        assert (e["termination"] == "success") == e["success"]
        assert e["first_success_step"] == (e["steps"] if e["success"] else None)
    assert report["timing"]["policy_ms_per_step"] > 0 and report["timing"]["sim_ms_per_step"] > 0
    assert "success rate" in stdout and "95 % CI" in stdout


def test_videos_show_the_first_episode_from_its_first_step(ppo_run):
    tmp, report, _ = ppo_run
    first = next(e for e in report["per_episode"] if e["episode"] == 0)
    assert sorted(Path(v).name for v in report["videos"]) == ["episode_000_table_cam.mp4", "episode_000_wrist_cam.mp4"]
    for video in report["videos"]:
        info = probe(video)
        assert (info["codec"], info["width"], info["height"]) == ("h264", 64, 64)
        assert info["frames"] == first["steps"]  # one frame per action, as a recorded demo has


def test_rollouts_are_recorded_exactly_once_and_tagged_policy(ppo_run, tmp_path):
    """Each counted episode is written once (what an env ran after its episode ended is dropped), successes and
    failures in their own files, every demo tagged ``policy``, and L3 tags the episodes so."""
    tmp, report, _ = ppo_run
    record, failed = tmp / "policy_lift_cube.hdf5", tmp / "policy_lift_cube_failed.hdf5"
    written = 0
    for path, success in ((record, True), (failed, False)):
        if not path.exists():
            continue
        assert validate_file(path).ok, validate_file(path).violations[:3]
        with h5py.File(path) as f:
            for demo in f["data"].values():
                written += 1
                assert bool(demo.attrs["success"]) is success and demo.attrs["source"] == "policy"
                assert "table_cam" in demo["obs"] and "object_orientation" in demo["obs"]
    assert written == report["episodes"]
    with h5py.File(record) as f:
        lengths = sorted(int(d.attrs["num_samples"]) for d in f["data"].values())
    assert lengths == sorted(e["steps"] for e in report["per_episode"] if e["success"])
    out = tmp_path / "ds"
    convert([str(record)], out, config=CONFIG, log=lambda m: None)
    episodes = [json.loads(line) for line in (out / "meta" / "episodes.jsonl").read_text().splitlines()]
    assert {e["source"] for e in episodes} == {"policy"}


# ------------------------------------------------------------------------------------------ replay chain
@pytest.fixture(scope="module")
def replay_data(scripted_run, tmp_path_factory):
    """The session's scripted demos (3, both cameras) converted with the default and the split-pose mapping."""
    l2_file = scripted_run[0]
    tmp = tmp_path_factory.mktemp("eval_replay")
    roots = {}
    for config in (CONFIG, SPLIT_CONFIG):
        roots[config.stem] = tmp / config.stem
        convert([str(l2_file)], roots[config.stem], config=config, log=lambda m: None)
        assert validate(roots[config.stem]) == []
    return l2_file, roots, tmp


def _reproduced(report: dict, l2_file: Path) -> float:
    with h5py.File(l2_file) as f:
        recorded = [bool(f[f"data/demo_{e['episode']}"].attrs["success"]) for e in report["per_episode"]]
    return sum(e["success"] for e, r in zip(report["per_episode"], recorded, strict=True) if r) / max(sum(recorded), 1)


def test_replay_in_process_reproduces_the_recorded_successes(replay_data):
    l2_file, roots, tmp = replay_data
    proc = evaluate(
        "--policy",
        f"replay:{roots['lift_cube']}",
        "--reset-from",
        str(l2_file),
        "--num_envs",
        "3",
        "--report",
        str(tmp / "replay.json"),
        *SMALL_CAMERAS,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((tmp / "replay.json").read_text())
    assert report["episodes"] == 3 and report["task"] == "L2-Lift-Cube-Franka-IK-Abs-Scripted"
    assert _reproduced(report, l2_file) >= 0.95


def test_served_split_pose_replay_over_a_socket_reproduces_them(replay_data):
    """``python -m l2.serve replay`` in its own process, the split-pose mapping (quaternion reordered in the
    dataset and back), chunks of 16 of which 8 are executed, a token."""
    l2_file, roots, tmp = replay_data
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "l2.serve",
            "replay",
            str(roots["lift_cube_split_pose"]),
            "--config",
            str(SPLIT_CONFIG),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--api-token",
            "t0k",
            "--quiet",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert "serving" in server.stdout.readline()
        proc = evaluate(
            "--policy",
            f"server:127.0.0.1:{port}",
            "--api-token",
            "t0k",
            "--config",
            str(SPLIT_CONFIG),
            "--reset-from",
            str(l2_file),
            "--num_envs",
            "3",
            "--action-horizon",
            "8",
            "--report",
            str(tmp / "served.json"),
            *SMALL_CAMERAS,
        )
        # one request per env (batch of 1), each after a reset naming its episode and step: GR00T's replay policy
        one = evaluate(
            "--policy",
            f"server:127.0.0.1:{port}",
            "--api-token",
            "t0k",
            "--config",
            str(SPLIT_CONFIG),
            "--reset-from",
            str(l2_file),
            "--episodes",
            "2",
            "--num_envs",
            "2",
            "--one-env-per-request",
            "--report",
            str(tmp / "one.json"),
            *SMALL_CAMERAS,
        )
    finally:
        server.kill()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((tmp / "served.json").read_text())
    assert _reproduced(report, l2_file) >= 0.95
    assert report["timing"]["requests"] >= 1 + 100 // 8  # a reset, then one request per 8 steps
    assert one.returncode == 0, one.stdout[-3000:] + one.stderr[-3000:]
    report = json.loads((tmp / "one.json").read_text())
    assert _reproduced(report, l2_file) >= 0.95
    assert report["timing"]["requests"] >= 2 * 2 * (100 // 16)  # per env and chunk: a reset and a get_action


# ------------------------------------------------------------------------------------------ bad inputs
class ScriptedPolicy:
    """A test server's policy: answers ``make(batch)``, or raises."""

    def __init__(self, make):
        self.make = make

    def get_action(self, observation, options=None):
        return self.make(observation["state"]["joint_pos"].shape[0]), {}

    def reset(self, options=None):
        return {}

    def get_modality_config(self):
        return {}


@pytest.fixture
def serve(tmp_path):
    servers = []

    def start(make) -> int:
        srv = protocol.PolicyServer(ScriptedPolicy(make), "127.0.0.1", 0)
        srv.start_thread()
        servers.append(srv)
        return srv.port

    yield start
    for srv in servers:
        srv.stop()


@pytest.fixture(scope="module")
def state_config(tmp_path_factory) -> Path:
    """The default mapping without cameras: the env then renders nothing (these tests need no image)."""
    doc = yaml.safe_load(CONFIG.read_text())
    doc["cameras"] = {}
    path = tmp_path_factory.mktemp("cfg") / "lift_cube_state.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _chunk(batch: int, value: float = 0.0, keys=("ee_pose", "gripper"), widths=(7, 1)) -> dict:
    return {k: np.full((batch, 4, w), value, np.float32) for k, w in zip(keys, widths, strict=True)}


def test_unreachable_server_is_one_line_before_the_simulator_starts():
    port = free_port()
    proc = evaluate("--policy", f"server:127.0.0.1:{port}", "--timeout", "1")
    line = _one_error_line(proc)
    assert f"tcp://127.0.0.1:{port}" in line and "within 1 s" in line
    assert "evaluating" not in proc.stdout  # refused before the env was built


def test_server_error_and_mismatched_actions_are_one_line(serve, state_config):
    def explode(batch):
        raise RuntimeError("CUDA out of memory")

    line = _one_error_line(
        evaluate(
            "--policy",
            f"server:127.0.0.1:{serve(explode)}",
            "--config",
            str(state_config),
            "--episodes",
            "1",
            "--num_envs",
            "1",
        )
    )
    assert "'get_action' failed: RuntimeError: CUDA out of memory" in line
    wrong = serve(lambda b: _chunk(b, keys=("ee_pose", "grip"), widths=(7, 1)))
    line = _one_error_line(
        evaluate(
            "--policy", f"server:127.0.0.1:{wrong}", "--config", str(state_config), "--episodes", "1", "--num_envs", "1"
        )
    )
    assert "answered action keys ['ee_pose', 'grip']" in line and "expects ee_pose (7), gripper (1)" in line


def test_non_finite_actions_end_their_episode_as_a_counted_failure(serve, state_config, tmp_path):
    def half_nan(batch):
        chunk = _chunk(batch)
        chunk["ee_pose"][:, :, :3] = (0.45, 0.0, 0.35)
        chunk["ee_pose"][:, :, 3:] = (1.0, 0.0, 0.0, 0.0)  # top-down, a valid pose: the envs just hold it
        chunk["ee_pose"][0, 0, 0] = np.nan  # env 0's first action
        return chunk

    proc = evaluate(
        "--policy",
        f"server:127.0.0.1:{serve(half_nan)}",
        "--config",
        str(state_config),
        "--episodes",
        "2",
        "--num_envs",
        "2",
        "--report",
        str(tmp_path / "r.json"),
        "env.episode_length_s=0.5",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    by_env = {e["env"]: e for e in report["per_episode"]}
    assert by_env[0]["termination"] == "non_finite_action" and not by_env[0]["success"]
    assert by_env[1]["termination"] == "time_out"
    assert report["non_finite_action_episodes"] == 1 and report["episodes"] == 2


def test_dataset_or_reset_file_of_another_task_is_refused(replay_data, tmp_path):
    l2_file, roots, _ = replay_data
    line = _one_error_line(evaluate("--policy", f"replay:{roots['lift_cube_split_pose']}"))
    assert "modality.json: action keys" in line and "config/lift_cube.yaml" in line
    other = tmp_path / "stack_cube.hdf5"
    other.write_bytes(l2_file.read_bytes())
    with h5py.File(other, "a") as f:
        env_args = json.loads(f["data"].attrs["env_args"])
        f["data"].attrs["env_args"] = json.dumps({**env_args, "env_name": "Isaac-Stack-Cube-Franka-IK-Rel-v0"})
    line = _one_error_line(evaluate("--policy", f"replay:{roots['lift_cube']}", "--reset-from", str(other)))
    assert str(other) in line and "Isaac-Stack-Cube-Franka-IK-Rel-v0" in line and "no registered Isaac Lab task" in line


def test_ctrl_c_reports_the_finished_episodes_and_leaves_a_valid_record(tmp_path):
    record = tmp_path / "policy_lift_cube.hdf5"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "l2.evaluate",
            "--episodes",
            "40",
            "--num_envs",
            "2",
            "--workers",
            "1",  # the record file grows as episodes end (a spread evaluation writes it at the end)
            "--record",
            str(record),
            "--report",
            str(tmp_path / "r.json"),
            "presets=no_cameras",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    output: list[str] = []
    threading.Thread(target=lambda: output.append(proc.stderr.read()), daemon=True).start()
    deadline = time.monotonic() + 600
    while not _has_demo(record) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)  # waits on the condition (a demo written), not on a guess of how long that takes
    assert _has_demo(record), "no demo was recorded"
    os.kill(proc.pid, signal.SIGINT)
    stdout = proc.stdout.read()
    assert proc.wait(120) == 130
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["interrupted"] and 1 <= report["episodes"] < 40
    assert "(interrupted)" in stdout
    assert validate_file(record).ok
    with h5py.File(record) as f:
        assert len(f["data"]) == report["successes"]
    assert not list(tmp_path.glob(".*spool"))


def _has_demo(path: Path) -> bool:
    try:
        with h5py.File(path, "r", locking=False) as f:
            return len(f["data"]) > 0
    except (OSError, KeyError):
        return False
