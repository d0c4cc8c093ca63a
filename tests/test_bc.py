"""Imitation learning end to end, in small: demos collected by the one command, robomimic's trainer, the
checkpoint served over the policy-server protocol from robomimic's venv and evaluated in the task; the serve
commands refuse checkpoints that do not fit the mapping; LeRobot's own training loop runs on our v3.0 output."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import h5py
import pytest
import yaml
from conftest import free_port, lerobot_python, robomimic_python

pytest.importorskip("isaaclab")

pytestmark = [pytest.mark.sim, pytest.mark.robomimic]

REPO = Path(__file__).resolve().parents[1]
LOWDIM = REPO / "config" / "robomimic" / "lift_cube_lowdim.yaml"


@pytest.fixture(scope="module")
def bc_run(tmp_path_factory):
    """``python -m l2.bc.train`` on 8 demos it collects itself (1 worker), 2 epochs, evaluated for 2 episodes."""
    tmp = tmp_path_factory.mktemp("bc")
    data = tmp / "scripted_lift_cube.hdf5"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "l2.bc.train",
            "--data",
            str(data),
            "--num_demos",
            "8",
            "--workers",
            "1",
            "--epochs",
            "2",
            "--save-every",
            "1",
            "--episodes",
            "2",
            "--checkpoint-episodes",
            "1",
            "--output",
            str(tmp / "logs"),
            "--name",
            "tiny",
            "--robomimic-python",
            robomimic_python(),
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return tmp, data, tmp / "logs" / "tiny", proc.stdout


def test_every_stage_leaves_its_output(bc_run):
    tmp, data, run, stdout = bc_run
    with h5py.File(data) as f:  # collected, merged, split
        assert len(f["data"]) == 8
        train, valid = (len(f[f"mask/{k}_8"]) for k in ("train", "valid"))
        assert (train, valid) == (7, 1)
        assert "object_orientation" in f["data/demo_0/obs"]
    config = json.loads((run / "config.json").read_text())
    assert config["train"]["hdf5_filter_key"] == "train_8" and config["train"]["num_epochs"] == 2
    assert not config["experiment"]["validate"]  # one validation demo: less than a batch, robomimic would stop
    assert "trained without validation loss" in stdout
    assert config["observation"]["modalities"]["obs"]["low_dim"] == [
        "joint_pos",
        "object_position",
        "object_orientation",
        "ee_position",
        "ee_orientation",
    ]
    assert sorted(p.name for p in (run / "models").glob("*.pth")) == ["model_epoch_1.pth", "model_epoch_2.pth"]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["episodes"] == 2 and summary["num_demos"] == 8 and summary["epochs"] == 2
    assert summary["rollouts"] == {"1": [summary["rollouts"]["1"][0], 1], "2": [summary["successes"], 2]}
    for epoch, episodes in ((1, 1), (2, 2)):
        report = json.loads((run / f"eval_epoch_{epoch}.json").read_text())
        assert report["episodes"] == episodes and report["policy"].startswith("server:127.0.0.1:")
        assert report["config"].endswith("lift_cube_lowdim.yaml") and report["timing"]["requests"] > 10
    assert (run / "learning_curve.png").stat().st_size > 10_000
    assert "Train Epoch 2" in (run / "train.log").read_text()


def _serve(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [robomimic_python(), "-m", "l2.serve", "robomimic", *args, "--port", "0"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )


def test_serve_refuses_a_checkpoint_that_does_not_fit(bc_run, tmp_path):
    _, _, run, _ = bc_run
    checkpoint = str(run / "models" / "model_epoch_2.pth")
    proc = _serve(checkpoint, "--config", str(REPO / "config" / "lift_cube.yaml"))
    assert proc.returncode == 2 and proc.stderr.count("error: ") == 1, proc.stderr[-2000:]
    assert re.search(
        r"the checkpoint observes (ee_position \(3\)|ee_orientation \(4\)|object_orientation \(4\)), "
        r"which \S*config/lift_cube.yaml does not send",
        proc.stderr,
    ), proc.stderr
    doc = yaml.safe_load(LOWDIM.read_text())
    del doc["action"]["gripper"]
    narrow = tmp_path / "no_gripper.yaml"
    narrow.write_text(yaml.safe_dump(doc))
    proc = _serve(checkpoint, "--config", str(narrow))
    assert proc.returncode == 2 and "the checkpoint acts with 8 values" in proc.stderr and "take 7" in proc.stderr
    proc = _serve(str(tmp_path / "missing.pth"))
    assert proc.returncode == 2 and proc.stderr.strip().endswith("missing.pth: no such file or folder (see --help)")


@pytest.mark.lerobot
def test_lerobot_trains_act_on_our_v30_output_and_serves_it(scripted_run, tmp_path):
    """ACT through LeRobot 0.6.1's own ``lerobot-train`` for 40 steps on the session's scripted demos converted
    to v3.0 (both cameras): the loss falls; the checkpoint is served and evaluated for one episode."""
    python = lerobot_python("v30")
    out = tmp_path / "v30"
    conv = subprocess.run(
        [
            sys.executable,
            "l3/convert.py",
            str(scripted_run[0]),
            "--config",
            "config/lift_cube.yaml",
            "--output",
            str(out),
            "--codebase-version",
            "v3.0",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=REPO,
    )
    assert conv.returncode == 0, conv.stderr[-3000:]
    train = subprocess.run(
        [
            sys.executable,
            "-m",
            "l2.bc.lerobot_train",
            str(out),
            "--output",
            str(tmp_path / "act"),
            "--steps",
            "40",  # 3 s a step on 2 cores; the mean loss of steps 1-8 falls from about 40 to 8-11 by step 20
            "--batch-size",
            "4",
            "--log-every",
            "8",
            "--lerobot-python",
            python,
        ],
        capture_output=True,
        text=True,
        timeout=3000,
        cwd=REPO,
    )
    assert train.returncode == 0, train.stdout[-3000:] + train.stderr[-3000:]
    losses = [float(x) for x in re.findall(r" loss:([0-9.]+)", train.stdout + train.stderr)]
    assert len(losses) >= 5 and losses[-1] < 0.5 * losses[0], losses
    pretrained = tmp_path / "act" / "checkpoints" / "last" / "pretrained_model"
    assert (pretrained / "model.safetensors").is_file()
    port = free_port()
    server = subprocess.Popen(
        [python, "-m", "l2.serve", "lerobot", str(pretrained), "--host", "127.0.0.1", "--port", str(port), "--quiet"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        for line in server.stdout:
            if line.startswith("serving "):
                break
        else:
            pytest.fail(f"l2.serve lerobot did not start: {server.returncode}")
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "l2.evaluate",
                "--policy",
                f"server:127.0.0.1:{port}",
                "--episodes",
                "1",
                "--num_envs",
                "1",
                "--action-horizon",
                "10",
                "--report",
                str(tmp_path / "act.json"),
            ],
            capture_output=True,
            text=True,
            timeout=1800,
            cwd=REPO,
        )
    finally:
        server.kill()
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((tmp_path / "act.json").read_text())
    assert report["episodes"] == 1 and report["timing"]["requests"] >= 2
