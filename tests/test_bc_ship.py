"""``python -m l2.bc.ship``: a finished run shipped whole; an unfinished one refused with the target untouched."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from l2.bc.ship import RUN_FILES, SHIPPED

REPO = Path(__file__).resolve().parents[1]


def _ship(run: Path, target: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "l2.bc.ship", str(run), "--to", str(target)]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)


def test_ship_writes_the_run_whole_and_refuses_an_unfinished_one(tmp_path):
    run, target = tmp_path / "run", tmp_path / "policy"
    (run / "models").mkdir(parents=True)
    target.mkdir()
    (target / "model.pth").write_bytes(b"the policy shipped before")
    for name in RUN_FILES:
        shutil.copy(SHIPPED / name, run / name)
    epochs = json.loads((run / "summary.json").read_text())["epochs"]

    refused = _ship(run, target)  # no checkpoint of the last epoch yet
    assert refused.returncode == 2, refused.stderr
    lines = [line for line in refused.stderr.splitlines() if line.strip()]
    assert lines == [
        f"error: {run}/models/model_epoch_{epochs}.pth: missing (the run's last epoch, by its summary.json)"
    ]
    assert sorted(p.name for p in target.iterdir()) == ["model.pth"]
    assert (target / "model.pth").read_bytes() == b"the policy shipped before"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["policy", "run"]  # no temporary left beside it

    shutil.copy(SHIPPED / "model.pth", run / "models" / f"model_epoch_{epochs}.pth")
    shipped = _ship(run, target)
    assert shipped.returncode == 0, shipped.stderr
    assert sorted(p.name for p in target.iterdir()) == sorted(["model.pth", *RUN_FILES, "lift_cube_lowdim.yaml"])
    summary = json.loads((target / "summary.json").read_text())
    assert summary["successes"] == json.loads((SHIPPED / "summary.json").read_text())["successes"]
    assert summary["checkpoint"].endswith("policy/model.pth")
