"""A task that lacks what a source needs is refused in one line before any simulator starts, with nothing
written: here the RL commands (train, rollout, evaluate's default policy) on tasks that are not RL tasks or ship
no policy, and Mimic on a task with no Mimic env and cfg. The scripted and teleop sources' own refusals are tested
beside them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("isaaclab")

REPO = Path(__file__).resolve().parents[1]
NOT_RL = "L2-Stack-Cube-SO101-Joint-v0"  # a demonstration task: no rsl_rl runner cfg
NO_POLICY = "L2-Stack-Cube-SO101-RL-v0"  # an RL task that ships no policy


def _refused(args: list[str], tmp_path: Path) -> str:
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300, cwd=REPO)
    errors = [line for line in proc.stderr.splitlines() if line.strip() and "Warning" not in line]
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert len(errors) == 1, proc.stderr
    assert not list(tmp_path.iterdir()), list(tmp_path.iterdir())
    return errors[0]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["l2/rl/train.py", "--task", NOT_RL, "--log_root", "{tmp}"], "not an RL task"),
        (["l2/rl/rollout.py", "--task", NOT_RL, "--output", "{tmp}/rl.hdf5"], "not an RL task"),
        (["l2/rl/rollout.py", "--task", NO_POLICY, "--output", "{tmp}/rl.hdf5"], "no rsl_rl policy is shipped"),
        (["-m", "l2.evaluate", "--task", NOT_RL, "--report", "{tmp}/eval.json"], "no rsl_rl policy is shipped"),
        (
            ["-m", "l2.mimic", "--task", NOT_RL, "--input", "README.md", "--output", "{tmp}/m.hdf5"],
            "not a Mimic task",
        ),
    ],
    ids=["train-not-rl", "rollout-not-rl", "rollout-no-policy", "evaluate-no-policy", "mimic-not-mimic"],
)
def test_a_task_without_what_a_source_needs_is_refused_in_one_line(args, expected, tmp_path):
    line = _refused([a.replace("{tmp}", str(tmp_path)) for a in args], tmp_path)
    assert expected in line and args[args.index("--task") + 1] in line, line
