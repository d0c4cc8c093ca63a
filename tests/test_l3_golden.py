"""The converter's output bytes are pinned: a fixed input converts to exactly the recorded files.

Speed work on the converter (issue 25) must not change a single byte of a dataset. The digests in
``tests/golden/convert_sha256.json`` were recorded before that work, with the versions of the libraries
that decide the bytes (pyarrow writes the parquet, PyAV's libx264 the videos) that pyproject.toml pins.
A deliberate change of the output (a new field, an upgrade of those pins) re-records them with
``python tests/test_l3_golden.py --record`` and says why in its commit.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "golden" / "convert_sha256.json"
CONFIG = REPO / "config" / "lift_cube.yaml"


def _inputs(d: Path) -> list[str]:
    """Two L2 files stored as the recorder stores them (gzip; one chunk per camera frame), cameras included,
    one failed demo (left out) and one episode longer than a video chunk of the reader."""
    from l3_fixtures import ISAACLAB_STORAGE, make_demo, write_l2

    rng = np.random.default_rng(2025)
    files = []
    for k, (source, lengths) in enumerate((("scripted", (30, 41, 37)), ("rl", (70, 25)))):
        demos = [
            make_demo(rng, n, camera=True, success=(k, i) != (0, 1), seed=k * 10 + i) for i, n in enumerate(lengths)
        ]
        files.append(str(write_l2(d / f"{source}_lift_cube.hdf5", demos, storage=ISAACLAB_STORAGE)))
    return files


def _digests(d: Path) -> dict[str, str]:
    """Convert in ``d`` by relative paths (episodes.jsonl records each episode's file as it was given, the card the
    command line: the config too)."""
    from l3.convert import convert

    cwd = os.getcwd()
    os.chdir(d)
    try:
        shutil.copyfile(CONFIG, CONFIG.name)
        convert(_inputs(Path("in")), "ds", config=CONFIG.name, log=lambda m: None)
    finally:
        os.chdir(cwd)
    out = d / "ds"
    return {
        str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }


def test_conversion_output_is_byte_identical_to_the_recorded_one(tmp_path):
    want = json.loads(GOLDEN.read_text())
    got = _digests(tmp_path)
    assert sorted(got) == sorted(want)
    assert any(name.endswith(".mp4") for name in got) and any(name.endswith(".parquet") for name in got)
    changed = [name for name in want if got[name] != want[name]]
    assert not changed, f"output bytes changed: {changed}"


if __name__ == "__main__" and sys.argv[1:] == ["--record"]:
    import tempfile

    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(REPO / "tests"))
    with tempfile.TemporaryDirectory() as tmp:
        digests = _digests(Path(tmp))
    GOLDEN.write_text(json.dumps(digests, indent=1) + "\n")
    print(f"recorded {len(digests)} files into {GOLDEN}")
