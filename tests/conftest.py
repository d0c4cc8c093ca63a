"""Fixtures shared by several test modules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTED_RUN = REPO / "l2" / "scripted" / "run.py"


def run_scripted(*args: str) -> subprocess.CompletedProcess:
    """``l2/scripted/run.py`` in its own process (one simulator per process)."""
    return subprocess.run([sys.executable, str(SCRIPTED_RUN), *args], capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="session")
def scripted_run(tmp_path_factory):
    """A real scripted collection with the default cameras: 3 demos from 4 envs, every action logged."""
    out = tmp_path_factory.mktemp("scripted") / "scripted_lift_cube.hdf5"
    log = out.with_name("actions.npz")
    proc = run_scripted("--num_envs", "4", "--num_demos", "3", "--output", str(out), "--log_actions", str(log))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out, log, proc.stdout


@pytest.fixture
def ray_alone(tmp_path_factory):
    """One local Ray instance at a time: the test holds a lock that every pytest-xdist worker of this run shares
    (a file beside the workers' temporary folders) while it starts Ray."""
    import fcntl

    with open(tmp_path_factory.getbasetemp().parent / "ray.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def free_port() -> int:
    """A TCP port on the loopback that nothing listens on right now (for a test's policy server)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------- LeRobot, in its own venv
PROBE = Path(__file__).resolve().parent / "l3_lerobot_probe.py"


def venv_python(script: str, *args: str) -> str:
    """The python of a test venv built (once) by ``scripts/<script>`` (see scripts/test_venv.sh)."""
    r = subprocess.run(["bash", str(REPO / "scripts" / script), *args], capture_output=True, text=True, timeout=3600)
    assert r.returncode == 0, f"scripts/{script} {' '.join(args)} failed:\n{r.stderr[-4000:]}"
    return r.stdout.strip().splitlines()[-1]


def lerobot_python(flavour: str) -> str:
    """The python of LeRobot's venv (``v21``: lerobot 0.3.x, ``v30``: 0.6.x), built once by scripts/setup_lerobot.sh."""
    return venv_python("setup_lerobot.sh", flavour)


def robomimic_python() -> str:
    """The python of robomimic 0.3.0's venv, built once by scripts/setup_robomimic.sh."""
    return venv_python("setup_robomimic.sh")


def run_probe(python: str, mode: str, root: Path, tmp: Path, *extra: str) -> dict:
    """Run tests/l3_lerobot_probe.py on a dataset inside a LeRobot venv, offline; its JSON result."""
    env = {
        **os.environ,
        "HF_HOME": str(tmp / "hf"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_LEROBOT_HOME": str(tmp / "lerobot_home"),
        "PYTHONPATH": "",
    }
    r = subprocess.run(
        [python, str(PROBE), mode, str(root), *extra], capture_output=True, text=True, env=env, timeout=900, cwd=tmp
    )
    assert r.returncode == 0, f"LeRobot probe '{mode}' failed:\n{r.stdout[-2000:]}\n{r.stderr[-6000:]}"
    return json.loads(r.stdout.strip().splitlines()[-1])


def mount_tmpfs(folder: Path, options: str) -> None:
    """A real small (or read-only) filesystem at ``folder``: a tmpfs, which root can mount (as in CI); the test is
    skipped, saying why, where it cannot be mounted. Unmount with :func:`umount`."""
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True)
    if mount.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mount.stderr.decode().strip()}")


def umount(folder: Path) -> None:
    subprocess.run(["umount", str(folder)], check=False)
