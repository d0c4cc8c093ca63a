"""Scale-out on Ray: distributed collection into shards (resume, rebuild, a killed collector) and
``l3/convert.py --engine ray`` (same bytes as the local engine). Each test starts its own local Ray
instance (through the CLIs, in a subprocess, or in-process for the converter) and shuts it down."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from l3_fixtures import assert_same_dataset, make_l2_file

from l2.format import schema
from l2.format.validate import validate_file
from l2.recording.shards import count_demos, shard_seed, shard_seeds, shard_targets
from l3 import layout
from l3.convert import convert
from l3.validate import validate

pytestmark = pytest.mark.usefixtures("ray_alone")
REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "config" / "lift_cube.yaml"
SMALL = ["--source", "scripted", "--num_demos", "4", "--workers", "2", "--quiet", "presets=no_cameras"]
"""2 workers x 2 state-only scripted demos: the smallest run that has two shards."""


def distributed(out: Path, *extra: str, wait: bool = True):
    cmd = [sys.executable, "-m", "l2.distributed", *SMALL, "--output", str(out), *extra]
    if not wait:
        return subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_shard_plan_seeds_and_source_tag():
    assert shard_targets(4, 2) == [2, 2] and shard_targets(7, 3) == [3, 2, 2] and sum(shard_targets(10, 4)) == 10
    seeds = {shard_seed(42, k, have) for k in range(4) for have in range(3)}
    assert len(seeds) == 12  # distinct per shard and per resumed part
    assert shard_seed(42, 1, 0) == shard_seed(42, 1, 0) != shard_seed(43, 1, 0)
    assert schema.source_from_path("/x/scripted_lift_cube/shard_3.hdf5") == "scripted"
    assert schema.source_from_path("data/rl_big/shard_0.hdf5") == "rl"
    assert schema.source_from_path("data/demos/shard_0.hdf5") == "unknown"
    assert schema.source_from_path("rl_lift_cube/teleop_x.hdf5") == "teleop"  # the file's own name first


@pytest.mark.sim
def test_two_workers_shards_rerun_and_rebuild(tmp_path):
    out = tmp_path / "scripted_lift_cube"
    r = distributed(out, "--num_envs", "2")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "4 of 4 in 2 shards (4 new this run)" in r.stdout
    shards = [out / "shard_0.hdf5", out / "shard_1.hdf5"]
    assert sorted(p.name for p in out.glob("*.hdf5")) == [p.name for p in shards]
    assert all(validate_file(p).ok for p in shards)
    assert [count_demos(p) for p in shards] == [2, 2]
    seeds = [set(shard_seeds(p)) for p in shards]
    assert seeds == [{shard_seed(42, 0, 0)}, {shard_seed(42, 1, 0)}]  # recorded on every demo, distinct
    before = [(digest(p), p.stat().st_mtime_ns) for p in shards]

    r = distributed(out, "--num_envs", "2")  # complete: a no-op
    assert r.returncode == 0 and "(0 new this run)" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]
    assert [(digest(p), p.stat().st_mtime_ns) for p in shards] == before

    shards[1].unlink()  # only this one is collected again, with the same seed
    r = distributed(out, "--num_envs", "2")
    assert r.returncode == 0 and "4 of 4 in 2 shards (2 new this run)" in r.stdout, r.stdout[-3000:]
    assert (digest(shards[0]), shards[0].stat().st_mtime_ns) == before[0]
    assert validate_file(shards[1]).ok and count_demos(shards[1]) == 2 and set(shard_seeds(shards[1])) == seeds[1]

    r = distributed(out, "--num_envs", "2", "--seed", "7")  # another collection in the same folder: refused
    assert r.returncode == 2 and "holds another collection" in r.stderr

    # The folder name tags the shards: one source for the converter.
    summary = convert([str(out)], tmp_path / "ds", log=lambda m: None)
    assert set(summary.per_source) == {"scripted"} and summary.episodes == 4


def _collector_pid(shard: Path) -> int | None:
    """The collector process writing ``shard`` (its command line names it after --output)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"l2/scripted/run.py" in argv and str(shard.resolve()).encode() in argv:
            return int(proc.name)
    return None


def _parent_pid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


@pytest.mark.sim
def test_killed_collector_and_worker_lose_only_their_episode(tmp_path):
    """After each shard's first demo: kill -9 shard_0's collector (its worker starts it again) and shard_1's
    Ray worker (its collector dies with it, Ray runs the task again). Both shards are continued with
    --append under a new seed, and the run ends with exactly 4 valid demos, none twice."""
    out = tmp_path / "scripted_lift_cube"
    shards = [out / "shard_0.hdf5", out / "shard_1.hdf5"]
    driver = distributed(out, "--num_envs", "1", wait=False)
    killed: dict[str, int] = {}
    try:
        deadline = time.monotonic() + 600
        while driver.poll() is None and len(killed) < 2 and time.monotonic() < deadline:
            for k, (shard, what) in enumerate(zip(shards, ("collector", "worker"), strict=True)):
                try:
                    have = count_demos(shard)
                except Exception:  # noqa: BLE001  read while the collector writes: try again
                    continue
                pid = _collector_pid(shard) if what not in killed and have == 1 else None
                if pid is None:
                    continue
                try:  # the process may end between finding it and killing it: then poll again
                    target = pid if k == 0 else _parent_pid(pid)
                    os.kill(target, signal.SIGKILL)
                except (OSError, ValueError, IndexError):
                    continue
                killed[what] = target
            time.sleep(0.2)
        stdout, _ = driver.communicate(timeout=900)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert set(killed) == {"collector", "worker"}, f"a shard finished before the test could kill it: {killed}"
    assert driver.returncode == 0, stdout[-4000:]
    assert "4 of 4 in 2 shards" in stdout
    row = next(line.split() for line in stdout.splitlines() if line.strip().startswith("shard_0 "))
    assert row[1] == "2" and row[5] == "2", row  # 2 demos, 2 collector runs
    for k, shard in enumerate(shards):
        assert validate_file(shard).ok and count_demos(shard) == 2
        assert shard_seeds(shard) == [shard_seed(42, k, 0), shard_seed(42, k, 1)]  # resumed with a new seed
    assert not list(out.glob("*.creating.hdf5")) and not _collector_pid(shards[1])


@pytest.fixture(scope="module")
def mixed_with_cameras(tmp_path_factory) -> Path:
    """Sources by file name and by shard folder, failed and legacy episodes, two cameras."""
    d = tmp_path_factory.mktemp("ray_in")
    make_l2_file(d / "scripted_lift_cube" / "shard_0.hdf5", 3, seed=1, failed=(1,), camera=True)
    make_l2_file(d / "scripted_lift_cube" / "shard_1.hdf5", 2, seed=2, camera=True)
    make_l2_file(d / "rl_lift_cube.hdf5", 2, seed=3, camera=True)
    make_l2_file(d / "teleop_lift_cube.hdf5", 2, seed=4, camera=True, legacy=True)
    return d


def test_engine_ray_writes_the_local_bytes(mixed_with_cameras, tmp_path):
    args = [str(mixed_with_cameras), "--config", str(CONFIG), "--include-failed", "--skip-bad", "--workers", "2", "-q"]
    runs = {"local": [], "ray": ["--engine", "ray"]}
    for name, extra in runs.items():
        proc = subprocess.run(
            [sys.executable, "-m", "l3.convert", *args, "-o", str(tmp_path / name), *extra],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
    assert assert_same_dataset(tmp_path / "local", tmp_path / "ray", ".mp4")
    eps = [json.loads(line) for line in (tmp_path / "ray" / layout.EPISODES_PATH).read_text().splitlines()]
    assert [e["episode_index"] for e in eps] == list(range(9))
    assert [e["source"] for e in eps] == ["rl"] * 2 + ["scripted"] * 5 + ["teleop"] * 2
    assert validate(tmp_path / "ray") == []


def test_engine_ray_in_process_errors_and_address(mixed_with_cameras, tmp_path, capsys):
    """The library call starts and stops its own Ray instance; a bad episode is the same error as with local
    workers (skipped alike with ``skip_bad``); ``--address`` without ``--engine ray`` is refused."""
    import h5py
    import numpy as np
    import ray

    from l3 import ray_engine
    from l3.convert import main
    from l3.errors import InputError

    s = convert(
        [str(mixed_with_cameras / "rl_lift_cube.hdf5")],
        tmp_path / "a",
        config=CONFIG,
        engine="ray",
        workers=2,
        log=lambda m: None,
    )
    assert s.episodes == 2 and validate(tmp_path / "a") == [] and not ray.is_initialized()

    bad = make_l2_file(tmp_path / "in" / "scripted_bad.hdf5", 3, seed=5)
    with h5py.File(bad, "a") as f:
        f["data/demo_1/obs/joint_vel"][3, 1] = np.nan
    errors, skipped = {}, {}
    ray_engine.start(None)  # one instance for the four conversions below, which use it and leave it running
    try:
        for engine in ("local", "ray"):
            with pytest.raises(InputError) as exc:
                convert([str(bad)], tmp_path / f"bad_{engine}", engine=engine, workers=2, log=lambda m: None)
            errors[engine] = str(exc.value)
            s = convert(
                [str(bad)], tmp_path / f"skip_{engine}", engine=engine, workers=2, skip_bad=True, log=lambda m: None
            )
            skipped[engine] = (s.episodes, s.skipped)
        assert ray.is_initialized()
    finally:
        ray.shutdown()
    assert errors["ray"] == errors["local"] and "/data/demo_1/obs/joint_vel" in errors["ray"]
    assert skipped["ray"] == skipped["local"] == (2, [errors["local"]])
    assert not (tmp_path / "bad_ray").exists()
    assert main([str(mixed_with_cameras), "-o", str(tmp_path / "b"), "--address", "auto"]) == 2
    assert "--address goes with --engine ray" in capsys.readouterr().err and not (tmp_path / "b").exists()
