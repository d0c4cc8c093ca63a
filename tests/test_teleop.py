"""Teleop source: accumulation, traces and the terminal keyboard alone; real CPU sessions of
l2/teleop/run.py driven by the shipped example trace (replay), with discard, Ctrl-C and --append."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

pytest.importorskip("isaaclab")

import torch  # noqa: E402
from conftest import refused_in_one_line  # noqa: E402
from isaaclab.utils.math import apply_delta_pose  # noqa: E402

from l2.format.validate import validate_file  # noqa: E402
from l2.teleop.accumulator import DeltaPoseAccumulator  # noqa: E402
from l2.teleop.trace import ReplayDevice, TraceRecorder, load_trace  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RUN = REPO / "l2" / "teleop" / "run.py"
EXAMPLE = REPO / "config" / "teleop" / "lift_cube_trace.json"
HOME = (0.45, 0.0, 0.35, 1.0, 0.0, 0.0, 0.0)  # FrankaTeleopLiftCubeEnvCfg.ee_home
SCRIPTED_OBS = {
    "joint_pos": (9,),
    "joint_vel": (9,),
    "object_position": (3,),
    "target_object_position": (7,),
    "actions": (8,),
    "object_orientation": (4,),
    "ee_position": (3,),
    "ee_orientation": (4,),
    "table_cam": (224, 224, 3),
    "wrist_cam": (224, 224, 3),
}
"""obs/<term> row shapes of the scripted file (tests/test_scripted.py), cameras included."""
NO_CAMERAS = "presets=no_cameras"
"""For the session-logic tests below (discard, Ctrl-C): the cameras only slow them down."""


# -- no simulator ---------------------------------------------------------------------------------------


def test_accumulator_integrates_deltas_like_isaac_labs_ik_relative_rule():
    acc = DeltaPoseAccumulator()
    acc.reset(torch.tensor(HOME[:3]), torch.tensor(HOME[3:]))
    pos, quat = torch.tensor([HOME[:3]]), torch.tensor([HOME[3:]])
    rng = np.random.default_rng(0)
    for _ in range(50):
        cmd = torch.tensor(np.r_[rng.uniform(-0.005, 0.005, 3), rng.uniform(-0.03, 0.03, 3), -1.0], dtype=torch.float32)
        action = acc.apply(cmd)
        pos, quat = apply_delta_pose(pos, quat, cmd[None, :6])
        quat = quat / torch.linalg.vector_norm(quat, dim=-1, keepdim=True)
        assert torch.equal(action[0, :3], pos[0]) and torch.equal(action[0, 3:7], quat[0])
        assert action[0, 7] == -1.0
    # the workspace box clamps the target
    for _ in range(200):
        action = acc.apply(torch.tensor([0.0, 0.0, -0.01, 0, 0, 0, 1.0]))
    assert action[0, 2] == 0.0 and action[0, 7] == 1.0


def test_trace_round_trip_recorder_and_replay_order(tmp_path):
    rec = TraceRecorder(seed=3, task="t", device="keyboard", overrides=["presets=variety,no_cameras", "env.x=1"])
    assert rec.trace.presets == ["variety"]  # the scene's presets are kept, the camera presets are not
    cmd = torch.tensor([0.001, 0, 0, 0, 0, 0.0123456789, 1.0])
    rec.add(cmd, [], applied=False)  # paused, nothing happened: not kept
    rec.add(cmd, ["start"], applied=True)
    rec.add(cmd, [], applied=True)
    rec.add(cmd, ["reset"], applied=True)
    rec.add(cmd, ["pause"], applied=False)
    rec.trace.save(tmp_path / "t.json")
    trace = load_trace(tmp_path / "t.json")
    assert trace == rec.trace
    assert trace.events == [(0, "start"), (2, "reset"), (3, "pause")] and len(trace.commands) == 4
    assert np.float32(trace.commands[0][5]) == np.float32(0.0123456789)  # float32-exact
    assert trace.commands[3] == [0, 0, 0, 0, 0, 0, 1.0]  # a paused tick carries a neutral command

    seen = []
    dev = ReplayDevice(trace)
    for name in ("start", "pause", "reset", "quit"):
        dev.add_callback(name, lambda n=name: seen.append((dev._tick, n)))
    out = [dev.advance() for _ in range(5)]
    assert seen == [(0, "start"), (2, "reset"), (3, "pause"), (4, "quit")]  # events fire before the tick's command
    assert torch.equal(out[1], cmd.to(torch.float32))

    bad = json.loads((tmp_path / "t.json").read_text())
    bad["events"].append([1, "jump"])
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="unknown event"):
        load_trace(tmp_path / "bad.json")


def test_a_leader_arm_trace_holds_joint_positions_and_idles_where_it_stopped(tmp_path):
    rec = TraceRecorder(seed=1, task="t", device="leader", control="joint")
    joints = torch.tensor([0.1, -0.9, 0.2, 1.5, -0.8, 1.0])
    with pytest.raises(ValueError, match="starts with a command"):
        rec.add(joints, ["start"], applied=False)
    rec.add(joints, ["start"], applied=True)
    rec.add(joints + 0.25, ["pause"], applied=False)  # the leader at rest: the follower stays where it was sent
    rec.trace.save(tmp_path / "leader.json")
    trace = load_trace(tmp_path / "leader.json")
    assert trace.control == "joint" and trace.command_dim == 6
    assert np.array_equal(np.float32(trace.commands), np.stack([joints.numpy()] * 2))  # float32-exact
    dev = ReplayDevice(trace)
    assert (
        torch.equal(dev.advance(), joints) and torch.equal(dev.advance(), joints) and torch.equal(dev.advance(), joints)
    )

    bad = json.loads((tmp_path / "leader.json").read_text())
    bad["commands"].append([0.0] * 7)
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="has 7 values, expected 6"):
        load_trace(tmp_path / "bad.json")


def test_example_trace_is_shipped_and_valid():
    trace = load_trace(EXAMPLE)
    assert trace.seed is not None and trace.control == "delta"
    assert trace.events[0] == (0, "start") and trace.events[-1][1] == "quit"
    assert 50 < len(trace.commands) < 1000


def test_terminal_keyboard_reads_keys_without_kit():
    import pty

    from l2.teleop.devices import POS_STEP, ROT_STEP, TerminalKeyboard

    master, slave = pty.openpty()
    stream = os.fdopen(slave, "r")
    pressed = []
    kb = TerminalKeyboard(stream=stream)
    kb.add_callback("SPACE", lambda: pressed.append("space"))
    kb.add_callback("R", lambda: pressed.append("r"))
    kb.add_callback("ESCAPE", lambda: pressed.append("esc"))

    def read_up_to(n: int) -> None:
        """Wait until the reader has passed the n-th callback key (keys are read in order)."""
        deadline = time.monotonic() + 60
        while len(pressed) < n:
            assert time.monotonic() < deadline, f"the keyboard read {pressed} only"
            time.sleep(0.01)

    try:
        os.write(master, b"wwdk cr")  # the R last: once it is seen, every key before it was read
        read_up_to(2)
        out = kb.advance()
        assert torch.allclose(out[:3], torch.tensor([2 * POS_STEP, -POS_STEP, 0.0]))
        assert torch.allclose(out[3:6], torch.tensor([0.0, 0.0, ROT_STEP]))
        assert out[6] == -1.0  # K closed the gripper
        assert torch.equal(kb.advance()[:6], torch.zeros(6))  # steps are consumed by advance()
        os.write(master, b"\x1b\x1b[Ar")  # Esc, an arrow key (ignored), R
        read_up_to(4)
        assert pressed == ["space", "r", "esc", "r"]
    finally:
        kb.close()
        stream.close()
        os.close(master)


def test_teleop_cfg_keeps_the_scripted_observations_and_moves_success_out_of_terminations():
    from l2.recording import sim

    teleop = sim.load_env_cfg("L2-Lift-Cube-Franka-IK-Abs-Teleop", "cpu", 1, seed=0)
    scripted = sim.load_env_cfg("L2-Lift-Cube-Franka-IK-Abs-Scripted", "cpu", 1, seed=0)
    assert teleop.success_term is not None and teleop.terminations.success is None
    assert teleop.terminations.time_out is None and teleop.terminations.object_dropping is not None
    assert teleop.observations.policy.concatenate_terms is False
    for group in ("policy", "cameras"):
        assert getattr(teleop.observations, group).to_dict() == getattr(scripted.observations, group).to_dict()
    terms = {*teleop.observations.policy.to_dict(), *teleop.observations.cameras.to_dict()}
    assert set(SCRIPTED_OBS) <= terms


# -- real sessions (kit-less Newton on the CPU) ----------------------------------------------------------


def _run(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(RUN), *args], capture_output=True, text=True, timeout=600, **kw)


def _composed_trace(path: Path, *suffix_events: tuple[int, str], wander: int) -> Path:
    """The example pick (its final quit removed) followed by ``wander`` ticks of small moves and events
    at ticks counted from the end of the pick."""
    trace = load_trace(EXAMPLE)
    end = len(trace.commands)
    trace.events = [e for e in trace.events if e[1] != "quit"]
    for i in range(wander):
        sign = 1.0 if (i // 20) % 2 == 0 else -1.0
        trace.commands.append([0.0, 0.004 * sign, 0.0, 0.0, 0.0, 0.0, 1.0])
    trace.events += [(end + t, name) for t, name in suffix_events]
    trace.save(path)
    return path


def _demos(path: Path) -> dict[str, h5py.Group]:
    f = h5py.File(path, "r")
    return {name: f["data"][name] for name in sorted(f["data"], key=lambda n: int(n.split("_")[1]))}


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    out = tmp_path_factory.mktemp("teleop") / "teleop_lift_cube.hdf5"
    log = out.with_name("actions.npz")
    proc = _run("--teleop_device", "replay", "--trace", str(EXAMPLE), "--output", str(out), "--log_actions", str(log))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out, log, proc.stdout


@pytest.mark.sim
def test_replayed_trace_lifts_the_cube_into_one_valid_demo(replayed):
    out, log, stdout = replayed
    report = validate_file(out)
    assert report.ok, [str(v) for v in report.violations]
    assert report.episodes == report.successes == 1
    assert report.env_name == "L2-Lift-Cube-Franka-IK-Abs-Teleop"
    assert "saved demo_0:" in stdout and "1 in the file" in stdout
    assert "instruction: Pick up the cube and lift it." in stdout  # shown to the operator at each attempt
    with h5py.File(out) as f:
        assert f["data/demo_0"].attrs["instruction"] == "Pick up the cube and lift it."
    trace = load_trace(EXAMPLE)
    demo = _demos(out)["demo_0"]
    T = demo.attrs["num_samples"]
    assert demo.attrs["success"] and demo.attrs["seed"] == trace.seed
    # The obs terms of the scripted file, with the same widths.
    assert {k: demo["obs"][k].shape for k in demo["obs"]} == {k: (T, *w) for k, w in SCRIPTED_OBS.items()}
    assert demo["obs/wrist_cam"].dtype == np.uint8 and demo["obs/wrist_cam"].chunks == (1, 224, 224, 3)
    assert demo["obs/object_position"][-1, 2] > 0.08  # lifted
    # Recorded actions == the actions the session sent == the delta accumulation of the trace.
    actions = demo["actions"][()]
    sent = np.load(log)["actions"]
    assert np.array_equal(sent[:T], actions)
    acc = DeltaPoseAccumulator()
    acc.reset(torch.tensor(HOME[:3]), torch.tensor(HOME[3:]))
    expected = np.concatenate([acc.apply(torch.tensor(c)).numpy() for c in trace.commands[:T]])
    assert np.array_equal(expected, actions)


@pytest.mark.sim
def test_append_keeps_demos_and_continues_numbering(replayed, tmp_path):
    src, _, _ = replayed
    out = tmp_path / "teleop_lift_cube.hdf5"
    shutil.copy(src, out)
    refused = _run("--teleop_device", "replay", "--trace", str(EXAMPLE), "--output", str(out))
    refused_in_one_line(refused, str(out), "exists")
    proc = _run("--teleop_device", "replay", "--trace", str(EXAMPLE), "--output", str(out), "--append")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "saved demo_1:" in proc.stdout and "2 in the file" in proc.stdout
    report = validate_file(out)
    assert report.ok and report.episodes == report.successes == 2
    with h5py.File(src) as f:
        old = f["data/demo_0/actions"][()]
    demos = _demos(out)
    assert list(demos) == ["demo_0", "demo_1"]
    assert np.array_equal(demos["demo_0"]["actions"][()], old)
    assert np.array_equal(demos["demo_1"]["actions"][()], old)  # the same trace and seed replay the same demo
    total = demos["demo_0"].file["data"].attrs["total"]
    assert total == sum(int(d.attrs["num_samples"]) for d in demos.values())


@pytest.mark.sim
def test_reset_and_discard_writes_only_the_successful_attempt(tmp_path):
    trace = _composed_trace(tmp_path / "discard.json", (30, "reset"), (50, "quit"), wander=60)
    out = tmp_path / "teleop_lift_cube.hdf5"
    proc = _run("--teleop_device", "replay", "--trace", str(trace), "--output", str(out), "--keep-failed", NO_CAMERAS)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "discarded the attempt (30 steps)" in proc.stdout
    report = validate_file(out)
    assert report.ok and report.episodes == report.successes == 1
    failed = _demos(out.with_name("teleop_lift_cube_failed.hdf5"))
    assert list(failed) == ["demo_0"]  # the discarded attempt; the one cut by quit is not written
    assert failed["demo_0"].attrs["num_samples"] == 30 and not failed["demo_0"].attrs["success"]


@pytest.mark.sim
def test_sigint_during_the_second_attempt_keeps_the_first_demo(tmp_path, replayed):
    # The trace pauses and starts again 100 ticks into the second attempt: the session's "running" line after
    # "saved demo_0" says that attempt is under way, with steps taken that must not be written.
    trace = _composed_trace(tmp_path / "long.json", (100, "pause"), (101, "start"), wander=2000)
    out = tmp_path / "teleop_lift_cube.hdf5"
    proc = subprocess.Popen(
        [
            sys.executable,
            str(RUN),
            "--teleop_device",
            "replay",
            "--trace",
            str(trace),
            "--output",
            str(out),
            "--step_hz",
            "20",
            NO_CAMERAS,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},  # each line as it is printed
    )
    lines = []
    try:
        for sign in ("saved demo_0", "paused", "running"):  # in this order
            for line in proc.stdout:
                lines.append(line)
                if line.startswith(sign):
                    break
            else:
                raise AssertionError(f"the session ended before printing {sign!r}:\n{''.join(lines)[-3000:]}")
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    stdout = "".join(lines) + rest
    assert proc.returncode == 0, stdout[-3000:]
    assert "interrupted" in stdout
    report = validate_file(out)
    assert report.ok and report.episodes == report.successes == 1, [str(v) for v in report.violations]
    with h5py.File(replayed[0]) as f:
        reference = f["data/demo_0/actions"][()]
    demos = _demos(out)
    assert list(demos) == ["demo_0"]
    assert np.array_equal(demos["demo_0"]["actions"][()], reference)


def _wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    """Until something accepts TCP connections on the loopback ``port`` (viser prints its banner before that)."""
    import socket

    deadline = time.monotonic() + timeout
    while True:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        assert proc.poll() is None and time.monotonic() < deadline, f"nothing listens on port {port}"
        time.sleep(0.5)


@pytest.mark.sim
def test_browser_view_shows_the_scene_and_the_instruction(tmp_path):
    """``--visualizer viser`` serves the live scene: headless Chromium (WebGL on SwiftShader) sees the robot and
    the three cubes at the operator's viewpoint, and the attempt's instruction in the control pane."""
    from browser import live_page
    from conftest import free_port
    from PIL import Image

    port = free_port()
    variety_trace = REPO / "config" / "teleop" / "lift_cube_variety_trace.json"
    proc = subprocess.Popen(
        [sys.executable, str(RUN), "--teleop_device", "replay", "--trace", str(variety_trace), "--output",
         str(tmp_path / "teleop.hdf5"), "--visualizer", "viser", "--viewer_port", str(port),
         "--step_hz", "0.5", NO_CAMERAS],  # 127 ticks at 0.5 Hz: the session stays live for 4 min
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    lines, instruction, objects, colored = [], None, 0, 0
    try:
        deadline = time.monotonic() + 300
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("instruction: "):
                instruction = line.removeprefix("instruction: ").strip()
            if instruction and f":{port}" in line:  # viser's banner: the page is served
                break
            assert time.monotonic() < deadline, "the browser view was not served in time"
        assert instruction and proc.poll() is None, "".join(lines)[-3000:]
        _wait_for_port(port, proc)
        png = tmp_path / "view.png"
        for _ in range(4):  # the scene arrives over the page's websocket after the page itself
            dom = live_page(f"http://localhost:{port}", png)
            rgb = np.asarray(Image.open(png).convert("RGB")).astype(int)
            scene = rgb[:700, 100:900]  # left of the control pane, above the axes gizmo
            ground = np.median(scene[600:].reshape(-1, 3), axis=0)  # the grey ground plane, in front
            objects = ((np.abs(scene - ground).max(-1) > 12) & (scene.min(-1) < 250)).sum()  # not ground, not sky
            colored = (scene.max(-1) - scene.min(-1) > 40).sum()  # the cubes (the robot and the ground are grey)
            # From the operator's viewpoint the arm, the mat and the cubes fill ~30k and ~500 pixels; from viser's
            # default one (the whole ground plane), ~4k and ~30.
            if objects > 15000 and colored > 300:
                break
        assert proc.poll() is None, "the session ended before the page was checked"
    finally:
        proc.terminate()
        proc.communicate(timeout=120)
    assert objects > 15000 and colored > 300, (objects, colored)
    assert "Instruction" in dom and instruction in dom, dom[-3000:]
