"""Bad files, folders, configs and option values given to the file commands (no simulator) end in one line.

Each case runs one command in its own process, in a folder of its own holding copies of small valid inputs (an L2
file with cameras, a converted dataset, a mapping config, RL and BC run folders) and the bad input of its category.
Every case must end with the exit status the command documents (2, with one ``error:`` line: conftest's
``refused_in_one_line``; 1 for a validator's "not valid", one line on stderr), no traceback, and the folder as it
was: nothing written, nothing replaced.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from conftest import refused_in_one_line
from l3_fixtures import make_l2_file, state_only_config

from l2.format import cli_args
from l3 import layout

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "config" / "lift_cube.yaml"
RL_TAGS = ("Episode_Termination/success", "Train/mean_reward")
BC_TAGS = ("Train/Loss", "Valid/Loss")


# --------------------------------------------------------------------------------------------- inputs
def _events(folder: Path, tags: tuple[str, ...]) -> None:
    """A TensorBoard event file with three steps of ``tags`` (what the plot commands read)."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(folder))
    for step in range(3):
        values = [summary_pb2.Summary.Value(tag=tag, simple_value=0.5) for tag in tags]
        writer.add_event(event_pb2.Event(step=step, wall_time=1.0, summary=summary_pb2.Summary(value=values)))
    writer.close()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    """Small valid inputs of every command, copied into each case's folder."""
    from l3.convert import convert

    root = tmp_path_factory.mktemp("inputs")
    demos = make_l2_file(root / "demos.hdf5", 3, camera=True, length=8)
    data = demos.read_bytes()
    (root / "truncated.hdf5").write_bytes(data[: len(data) // 2])
    (root / "random.hdf5").write_bytes(os.urandom(4096))
    (root / "empty").mkdir()
    config = state_only_config(root, CONFIG)
    config.rename(root / "config.yaml")
    make = root / "make"
    convert([str(make_l2_file(make / "state.hdf5", 2, length=8))], root / "dataset", config=root / "config.yaml")
    shutil.rmtree(make)
    rl = root / "rl_run"
    (rl / "params").mkdir(parents=True)
    _events(rl, RL_TAGS)
    (rl / "params" / "train.yaml").write_text("critic_warmup: 1\n")
    bc = root / "bc_run"
    (bc / "logs" / "tb").mkdir(parents=True)
    _events(bc / "logs" / "tb", BC_TAGS)
    (bc / "summary.json").write_text(json.dumps({"name": "bc", "num_demos": 2, "rollouts": {"1": [1, 2]}}))
    (bc / "config.json").write_text(json.dumps({"algo": {"rnn": {"enabled": False}}, "experiment": {}}))
    return root


def _tree(root: Path) -> dict[str, str]:
    """Every file and folder below ``root``: relative path -> content hash (``dir`` for a folder)."""
    out = {}
    for p in sorted(root.rglob("*")):
        out[str(p.relative_to(root))] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


# --------------------------------------------------------------------------------------------- bad inputs
def _write(rel: str, content: str | bytes) -> Callable[[Path], None]:
    def setup(cwd: Path) -> None:
        path = cwd / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)

    return setup


def _edit_json(rel: str, edit: Callable[[dict], object]) -> Callable[[Path], None]:
    def setup(cwd: Path) -> None:
        doc = json.loads((cwd / rel).read_text())
        edit(doc)
        (cwd / rel).write_text(json.dumps(doc))

    return setup


def _truncate(rel: str) -> Callable[[Path], None]:
    def setup(cwd: Path) -> None:
        data = (cwd / rel).read_bytes()
        (cwd / rel).write_bytes(data[: len(data) // 2])

    return setup


def _config(edit: Callable[[dict], object]) -> Callable[[Path], None]:
    """``bad.yaml``: the valid config with ``edit`` applied to its document."""

    def setup(cwd: Path) -> None:
        doc = yaml.safe_load((cwd / "config.yaml").read_text())
        edit(doc)
        (cwd / "bad.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))

    return setup


def _video(**options: object) -> Callable[[Path], None]:
    return _config(lambda d: d["video"].update(options))


NOT_UTF8 = b"robot_type: caf\xe9\nstate: {a: obs/a}\naction: {b: actions}\n"
NOT_YAML = "state: {a: obs/a\naction: [\n"
EPISODE_ROW = layout.EPISODES_PATH


@dataclass(frozen=True)
class Case:
    module: str
    category: str
    args: tuple[str, ...]
    status: int = 2
    setup: Callable[[Path], None] | None = None
    env: tuple[tuple[str, str | None], ...] = ()


def _cases() -> list[Case]:
    out: list[Case] = []

    def add(module: str, category: str, *args: str, status: int = 2, setup=None, env=()) -> None:
        out.append(Case(module, category, args, status, setup, env))

    # L2 files in, nothing written
    m = "l2.format.validate"
    add(m, "missing", "typo.hdf5")
    add(m, "folder-for-file", "empty")
    add(m, "random-bytes", "random.hdf5", status=1)
    add(m, "truncated", "truncated.hdf5", status=1)
    add(m, "option-type", "demos.hdf5", "--action-dim", "x")
    add(m, "option-range", "demos.hdf5", "--action-dim", "-1")

    # L2 files in, an L2 file out
    m = "l2.tools.merge"
    add(m, "missing", "demos.hdf5", "typo.hdf5", "-o", "out.hdf5")
    add(m, "folder-for-file", "empty", "-o", "out.hdf5")
    add(m, "random-bytes", "demos.hdf5", "random.hdf5", "-o", "out.hdf5")
    add(m, "truncated", "demos.hdf5", "truncated.hdf5", "-o", "out.hdf5")
    add(m, "output-is-folder", "demos.hdf5", "-o", "empty")
    add(m, "output-under-file", "demos.hdf5", "-o", "demos.hdf5/out.hdf5")
    add(m, "option-type", "demos.hdf5", "-o", "out.hdf5", "--action-dim", "8.5")

    # an L2 file rewritten in place
    m = "l2.tools.split"
    add(m, "missing", "typo.hdf5")
    add(m, "folder-for-file", "empty")
    add(m, "random-bytes", "random.hdf5")
    add(m, "truncated", "truncated.hdf5")
    add(m, "option-type", "demos.hdf5", "--valid", "x")
    add(m, "option-range", "demos.hdf5", "--valid", "1")
    add(m, "option-range-seed", "demos.hdf5", "--seed", "-1")
    add(m, "option-range-first", "demos.hdf5", "--first", "1")

    # L2 files in, an HTML page out
    m = "l2.tools.inspect_demos"
    add(m, "missing", "typo.hdf5", "-o", "r.html")
    add(m, "folder-for-file", "empty", "-o", "r.html")
    add(m, "random-bytes", "random.hdf5", "-o", "r.html")
    add(m, "truncated", "truncated.hdf5", "-o", "r.html")
    add(m, "output-is-folder", "demos.hdf5", "-o", "empty")
    add(m, "output-under-file", "demos.hdf5", "-o", "demos.hdf5/r.html")
    add(m, "option-range", "demos.hdf5", "-o", "r.html", "--frames", "0")
    add(m, "option-type", "demos.hdf5", "-o", "r.html", "--episodes", "two")

    # an L2 file in, a PNG out
    m = "l2.tools.frame_strip"
    add(m, "missing", "typo.hdf5", "-o", "s.png")
    add(m, "folder-for-file", "empty", "-o", "s.png")
    add(m, "random-bytes", "random.hdf5", "-o", "s.png")
    add(m, "truncated", "truncated.hdf5", "-o", "s.png")
    add(m, "output-is-folder", "demos.hdf5", "-o", "empty")
    add(m, "output-under-file", "demos.hdf5", "-o", "demos.hdf5/s.png")
    add(m, "option-range", "demos.hdf5", "-o", "s.png", "--scale", "0")
    add(m, "option-type", "demos.hdf5", "-o", "s.png", "--scale", "nan")
    add(m, "option-range-demo", "demos.hdf5", "-o", "s.png", "--demo", "-1")
    add(m, "no-such-demo", "demos.hdf5", "-o", "s.png", "--demo", "7")

    # L2 files and a config in, a dataset folder out
    m = "l3.convert"
    add(m, "missing", "typo.hdf5", "-o", "out")
    add(m, "empty-folder", "empty", "-o", "out")
    add(m, "empty-folder-print-config", "empty", "--print-config")
    add(m, "random-bytes", "random.hdf5", "-o", "out")
    add(m, "truncated", "truncated.hdf5", "-o", "out")
    add(m, "config-missing", "demos.hdf5", "-c", "typo.yaml", "-o", "out")
    add(m, "config-is-folder", "demos.hdf5", "-c", "empty", "-o", "out")
    add(m, "config-not-utf8", "demos.hdf5", "-c", "bad.yaml", "-o", "out", setup=_write("bad.yaml", NOT_UTF8))
    add(m, "config-not-yaml", "demos.hdf5", "-c", "bad.yaml", "-o", "out", setup=_write("bad.yaml", NOT_YAML))
    add(m, "config-random-bytes", "demos.hdf5", "-c", "random.hdf5", "-o", "out")
    configs = {
        "config-unknown-key": _config(lambda d: d.update(fsp=5)),
        "config-mistyped": _config(lambda d: d.update(fps="x")),
        "config-mistyped-slice": _config(lambda d: d["action"]["gripper"].update(slice=[7, True])),
        "config-mistyped-camera": _config(lambda d: d.update(cameras={"table_cam": 5})),
        "config-unknown-input-format": _config(lambda d: d.update(inputs={"l2x": {"state": d["state"]}})),
        "video-codec": _video(codec="nosuch"),
        "video-not-h264": _video(codec="mpeg4"),
        "video-gop": _video(gop="x"),
        "video-gop-huge": _video(gop=99999999999),
        "video-preset": _video(preset="fastest"),
        "video-crf": _video(crf=99),
        "video-unknown-key": _video(fps=5),
        "video-not-mapping": _config(lambda d: d.update(video=[1])),
    }
    for category, setup in configs.items():
        add(m, category, "demos.hdf5", "-c", "bad.yaml", "-o", "out", setup=setup)
    add(m, "output-is-file", "demos.hdf5", "-o", "random.hdf5")
    add(m, "output-under-file", "demos.hdf5", "-o", "demos.hdf5/out")
    add(m, "output-exists", "demos.hdf5", "-o", "dataset")
    add(m, "option-range", "demos.hdf5", "-o", "out", "--workers", "0")
    add(m, "option-type", "demos.hdf5", "-o", "out", "--max-episodes", "1.5")
    add(m, "option-type-score", "demos.hdf5", "-o", "out", "--min-score", "nan")

    # a dataset folder in (validators: 1 for "not valid", 2 for an unusable path)
    m = "l3.validate"
    add(m, "missing", "typo")
    add(m, "file-for-folder", "demos.hdf5")
    add(m, "empty-folder", "empty", status=1)
    add(m, "random-bytes", "dataset", status=1, setup=_write("dataset/" + layout.INFO_PATH, os.urandom(512)))
    add(m, "truncated", "dataset", status=1, setup=_truncate("dataset/" + layout.data_path(0)))
    add(m, "meta-row-not-object", "dataset", status=1, setup=_write("dataset/" + EPISODE_ROW, "5\n[1]\n"))
    add(m, "meta-info-list", "dataset", status=1, setup=_write("dataset/" + layout.INFO_PATH, "[1, 2]"))
    add(m, "meta-info-number", "dataset", status=1, setup=_write("dataset/" + layout.INFO_PATH, "7"))
    wrong = {
        "meta-field-type": _edit_json("dataset/" + layout.INFO_PATH, lambda d: d.update(chunks_size="1000")),
        "meta-features-type": _edit_json("dataset/" + layout.INFO_PATH, lambda d: d["features"].update(action=3)),
        "meta-modality-type": _edit_json("dataset/" + layout.MODALITY_PATH, lambda d: d.update(state=[1])),
        "meta-stats-type": _edit_json("dataset/" + layout.STATS_PATH, lambda d: d.update(action="x")),
        "meta-tasks-type": _write("dataset/" + layout.TASKS_PATH, '{"task_index": "0", "task": 1}\n'),
    }
    for category, setup in wrong.items():
        add(m, category, "dataset", status=1, setup=setup)

    # a dataset folder in, an HTML page out
    m = "l3.inspect_dataset"
    add(m, "missing", "typo", "-o", "r.html")
    add(m, "file-for-folder", "demos.hdf5", "-o", "r.html")
    add(m, "empty-folder", "empty", "-o", "r.html")
    add(m, "random-bytes", "dataset", "-o", "r.html", setup=_write("dataset/" + layout.INFO_PATH, os.urandom(512)))
    add(m, "truncated", "dataset", "-o", "r.html", setup=_truncate("dataset/" + layout.data_path(0)))
    add(m, "meta-row-not-object", "dataset", "-o", "r.html", setup=_write("dataset/" + EPISODE_ROW, "5\n"))
    add(m, "meta-info-list", "dataset", "-o", "r.html", setup=_write("dataset/" + layout.INFO_PATH, "[1, 2]"))
    for category, setup in wrong.items():
        add(m, category, "dataset", "-o", "r.html", setup=setup)
    add(m, "output-is-folder", "dataset", "-o", "empty")
    add(m, "output-under-file", "dataset", "-o", "demos.hdf5/r.html")
    add(m, "option-range", "dataset", "-o", "r.html", "--frames", "0")

    # run folders in, a PNG out
    m = "l2.rl.plot"
    add(m, "missing", "typo")
    add(m, "file-for-folder", "demos.hdf5")
    add(m, "empty-folder", "empty")
    add(m, "random-bytes", "empty", setup=_write("empty/events.out.tfevents.1", os.urandom(2048)))
    add(m, "config-not-utf8", "rl_run", setup=_write("rl_run/params/train.yaml", b"critic_warmup: \xff\n"))
    add(m, "config-not-yaml", "rl_run", setup=_write("rl_run/params/train.yaml", NOT_YAML))
    add(m, "config-mistyped", "rl_run", setup=_write("rl_run/params/train.yaml", "critic_warmup: many\n"))
    add(m, "config-not-mapping", "rl_run", setup=_write("rl_run/params/train.yaml", "- 1\n"))
    add(m, "output-is-folder", "rl_run", "--output", "empty")
    add(m, "output-under-file", "rl_run", "--output", "demos.hdf5/c.png")

    m = "l2.bc.plot"
    add(m, "missing", "typo")
    add(m, "file-for-folder", "demos.hdf5")
    add(m, "empty-folder", "empty")
    add(m, "random-bytes", "bc_run", setup=_write("bc_run/summary.json", os.urandom(512)))
    add(m, "not-utf8", "bc_run", setup=_write("bc_run/config.json", b'{"algo": "\xff"}'))
    add(m, "json-not-object", "bc_run", setup=_write("bc_run/summary.json", "[1]"))
    add(m, "json-field-type", "bc_run", setup=_edit_json("bc_run/summary.json", lambda d: d.update(rollouts=[1])))
    add(m, "json-rollout-type", "bc_run", setup=_edit_json("bc_run/summary.json", lambda d: d["rollouts"].update(x=1)))
    add(m, "json-config-type", "bc_run", setup=_edit_json("bc_run/config.json", lambda d: d.update(algo=[])))
    add(m, "output-is-folder", "bc_run", "--output", "empty")
    add(m, "output-under-file", "bc_run", "--output", "demos.hdf5/c.png")

    # the offline robots: their place comes from the environment
    for m, var, usd in (
        ("l2.assets.franka_build", "L2L3_FRANKA_USD", "panda.usdc"),
        ("l2.assets.so101_build", "L2L3_SO101_USD", "so101.usdc"),
    ):
        add(m, "usd-is-folder", env=((var, "empty"),))
        add(m, "usd-missing", env=((var, f"typo/{usd}"),))
        add(m, "cache-under-file", "--force", env=((var, None), ("L2L3_CACHE", "demos.hdf5")))
        add(m, "option-unknown", "--forse")
    return out


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=[f"{c.module}-{c.category}" for c in CASES])
def test_bad_input_ends_in_one_line(case: Case, inputs: Path, tmp_path: Path) -> None:
    cwd = tmp_path / "case"
    shutil.copytree(inputs, cwd)
    if case.setup is not None:
        case.setup(cwd)
    before = _tree(cwd)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    for name, value in case.env:
        if value is None:
            env.pop(name, None)
        else:
            env[name] = str(cwd / value)
    proc = subprocess.run(
        [sys.executable, "-m", case.module, *case.args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if case.status == 2:
        refused_in_one_line(proc)
    else:  # a validator's "not valid": the violations on stdout, their count in one line on stderr
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        shown = f"exit {proc.returncode}\nstderr:\n{proc.stderr}\nstdout:\n{proc.stdout[-2000:]}"
        assert proc.returncode == case.status and len(lines) == 1, shown
        assert "Traceback" not in proc.stdout + proc.stderr, shown
    assert _tree(cwd) == before, "the command changed its folder"


# --------------------------------------------------------------------------------------------- cli_args types
def test_float_below_refuses_its_maximum_and_says_so() -> None:
    parse = cli_args.float_below(0.0, 1.0)
    assert (parse.kind, parse.minimum, parse.maximum, parse.maximum_excluded) == ("float", 0.0, 1.0, True)
    assert parse("0") == 0.0 and parse("0.999") == 0.999
    for bad in ("1", "1.5", "-0.1", "nan", "inf", "x"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse(bad)


def test_finite_float_takes_any_finite_number() -> None:
    parse = cli_args.finite_float
    assert (parse.kind, parse.minimum, parse.maximum) == ("float", None, None)
    assert parse("-1") == -1.0 and parse("1e300") == 1e300
    for bad in ("inf", "-inf", "nan", "x", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            parse(bad)
    assert not math.isnan(parse("0"))


# --------------------------------------------------------------------------------------------- mapping loader
@pytest.mark.parametrize(
    ("content", "says"),
    [
        (NOT_UTF8, "not UTF-8 text (byte 0xe9"),
        (NOT_YAML.encode(), "invalid YAML"),
        (b"fps: 2024-13-45\n", "invalid YAML (month must be in 1..12)"),
        (b"- 1\n", "the top level: expected a YAML mapping"),
        (b"state: {a: obs/a}\naction: {b: {from: actions, slice: [0, 2], names: [x, 2]}}\n", "action.b.names"),
        (b"state: {a: obs/a}\naction: {b: actions}\ninputs: {l2: {fps: 5}}\n", "inputs.l2: only state"),
        (b"state: {a: obs/a}\naction: {b: actions}\ninputs: {l2: {state: {a: 5}}}\n", "inputs.l2.state.a"),
        (b"state: {a: obs/a}\naction: {b: actions}\nvideo: {gop: 1.5}\n", "video.gop: expected an integer"),
        (
            b"state: {a: obs/a}\naction: {b: actions}\nvideo: {pix_fmt: yuv422p}\n",
            "video.pix_fmt: expected one of auto",
        ),
    ],
)
def test_load_mapping_names_the_file_and_key(tmp_path: Path, content: bytes, says: str) -> None:
    """What l3/convert.py, l2.evaluate --config and l2.serve --config load a config with."""
    from l3.config_file import load_mapping
    from l3.errors import ConfigError

    path = tmp_path / "my.yaml"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as err:
        load_mapping(path)
    assert str(err.value).startswith(f"{path}: ") and says in str(err.value), str(err.value)
    assert "\n" not in str(err.value)


def test_read_through_check_ahead_of_no_regular_file(tmp_path: Path, inputs: Path) -> None:
    """Paths none of which is a regular file (a folder, a missing file) ask the read-through helper nothing: an
    empty request used to read as one "" path, whose answer had no slot (IndexError, and again at exit)."""
    from l2.format import hdf5_guard

    hdf5_guard.read_through_all([str(tmp_path), str(tmp_path / "missing.hdf5")])
    assert not hdf5_guard.checked_ahead(str(tmp_path))
    hdf5_guard.check_ahead([str(inputs / "demos.hdf5")])  # a file after it is checked as before
    assert hdf5_guard.read_through(str(inputs / "demos.hdf5")) is None
    hdf5_guard._HELPER.close()  # what runs at exit
