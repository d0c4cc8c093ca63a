"""Fixtures shared by several test modules."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTED_RUN = REPO / "l2" / "scripted" / "run.py"


def pytest_configure(config) -> None:
    """Under pytest-xdist, each worker, and every simulator or trainer its tests start, gets its share of the cores'
    OpenMP and torch threads (as ``--workers`` gives each collector: :func:`l2.recording.shards.thread_limit`); with the
    default, one thread per core in every process, their waiting threads spin on the cores the others need. An
    ``OMP_NUM_THREADS`` the user set is kept."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if workers < 2 or "OMP_NUM_THREADS" in os.environ:
        return
    from l2.recording.shards import thread_limit
    from l2.recording.workers import usable_cores

    threads = max(1, usable_cores() // workers)
    os.environ.update(thread_limit(threads))
    if "torch" in sys.modules:  # already imported by a plugin: its thread pool is not made yet
        sys.modules["torch"].set_num_threads(threads)


def run_scripted(*args: str) -> subprocess.CompletedProcess:
    """``l2/scripted/run.py`` in its own process (one simulator per process)."""
    return subprocess.run([sys.executable, str(SCRIPTED_RUN), *args], capture_output=True, text=True, timeout=900)


def run_ok(*args: str, timeout: float = 1200) -> subprocess.CompletedProcess:
    """``python *args`` from the repository root in its own process, which must exit 0 (its output's tail shown
    otherwise)."""
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def refused_in_one_line(proc: subprocess.CompletedProcess, *naming: str, status: int = 2) -> str:
    """A command that refused as every command promises (docs/cli.md): exit ``status``, stderr exactly one non-empty
    line, that line starting ``error:`` (``<prog>: error:`` for a bad argument, argparse's form) and holding each of
    ``naming`` (the file it refuses, a word), no traceback on either stream. Returns the line. A traceback that
    happens to say the same words (an uncaught FileExistsError names the file too) fails here."""
    told = proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, told
    assert proc.returncode == status, f"exit status {proc.returncode}, not {status}:\n{told}"
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and re.match(r"([^:]+: )?error: ", lines[0]), f"stderr is not one 'error:' line:\n{told}"
    for text in naming:
        assert text in lines[0], f"the error line does not name {text!r}: {lines[0]}"
    return lines[0]


@contextlib.contextmanager
def run_lock(tmp_path_factory, name: str):
    """An exclusive lock that every pytest-xdist worker of this run shares (a file beside their temporary
    folders)."""
    import fcntl

    with open(tmp_path_factory.getbasetemp().parent / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="session")
def scripted_run(tmp_path_factory):
    """A real scripted collection with the default cameras: 3 demos from 4 envs, every action logged. Made once
    per run: the first pytest-xdist worker that needs it collects it while the others wait (read it, never write
    it)."""
    shared = tmp_path_factory.getbasetemp().parent / "scripted_run"  # beside every worker's temporary folder
    shared.mkdir(exist_ok=True)
    out, log, stdout = shared / "scripted_lift_cube.hdf5", shared / "actions.npz", shared / "stdout.txt"
    with run_lock(tmp_path_factory, "scripted_run"):
        if not stdout.exists():
            proc = run_scripted("--num_envs", "4", "--num_demos", "3", "--output", str(out), "--log_actions", str(log))
            assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
            stdout.write_text(proc.stdout)
    return out, log, stdout.read_text()


@pytest.fixture
def ray_alone(tmp_path_factory):
    """One local Ray instance at a time: the test holds a lock that every pytest-xdist worker of this run shares
    while it starts Ray."""
    with run_lock(tmp_path_factory, "ray"):
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


# --------------------------------------------------------------------------- order over pytest-xdist workers
SPREAD = ("tests/test_bench_smoke.py",)
"""Modules whose tests share no module fixture: each test is its own unit of work, so they spread over workers."""

SCOPE_SECONDS = {
    "test_bench_smoke.py::test_benchmark_runs_and_prints_its_table[cameras.py]": 380,
    "test_bc.py": 820,
    "test_workers.py": 545,
    "test_variety.py": 520,
    "test_evaluate.py": 520,
    "test_teleop.py": 470,
    "test_distributed.py": 415,
    "test_faults.py": 395,
    "test_rl.py": 285,
    "test_cameras.py": 250,
    "test_bench_smoke.py::test_benchmark_runs_and_prints_its_table[ray_scaleout.py]": 215,
    "test_replay.py": 155,
    "test_stack_pipeline.py": 150,
    "test_mimic.py": 135,
    "test_l3_real_lerobot.py": 110,
    "test_scripted.py": 110,
    "test_l3_lerobot.py": 105,
    "test_recording.py": 100,
    "test_stack_teleop.py": 95,
    "test_bench_smoke.py::test_benchmark_runs_and_prints_its_table[record_overhead.py]": 90,
    "test_hdf5_hang.py": 85,
    "test_bench_smoke.py::test_benchmark_runs_and_prints_its_table[variety.py]": 85,
    "test_bench_smoke.py::test_benchmark_runs_and_prints_its_table[crash_campaign.py]": 80,
    "test_bench_smoke.py::test_benchmark_runs_and_prints_its_table[fault_campaign.py]": 60,
    "test_bench_smoke.py::test_benchmark_runs_and_prints_its_table[convert.py]": 55,
    "test_l3_so101.py": 60,
    "test_inspect.py": 50,
}
"""Seconds each unit of work took on one worker of a 2-core machine (the workers' timelines in the output of
``scripts/test.sh -v``, 2026-12-02); units not named take less. The longest start first, so that no worker is left
alone with a long module at the end while the other has nothing to do (xdist's own order left one idle 8 min)."""


def _scope(nodeid: str) -> str:
    """The unit of work a test belongs to: itself in a SPREAD module, else its module (or class)."""
    return nodeid if nodeid.startswith(SPREAD) else nodeid.rsplit("::", 1)[0]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: -SCOPE_SECONDS.get(_scope(item.nodeid).removeprefix("tests/"), 0))  # stable


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``--dist loadscope`` in the order above (not xdist's largest-count-first), with SPREAD modules split."""
    if config.getoption("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _scope(nodeid)

    config.option.loadscopereorder = False  # keep the collection order pytest_collection_modifyitems made
    return Scheduling(config, log)
