"""l2.tools.merge, l2.tools.split, the validator's mask/ checks, L3's --filter-key and robomimic's own SequenceDataset.

Inputs are small L2 files written with h5py (tests/l3_fixtures.py, stored as the recorder stores them)
plus an ``initial_state/`` group; one test merges a real scripted recording (``scripted_run``).
robomimic 0.3.0 runs in its own venv (scripts/setup_robomimic.sh): a venv that cannot be built is a
failure, never a skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from conftest import robomimic_python
from l3_fixtures import ISAACLAB_STORAGE, SIM_ARGS, make_demo, state_only_config, write_l2

from l2.format import schema
from l2.format.validate import validate_file
from l2.tools import merge as l2_merge
from l2.tools import split
from l3.convert import convert
from l3.errors import InputError

REPO = Path(__file__).resolve().parent.parent
PROBE = Path(__file__).resolve().parent / "l2_robomimic_probe.py"


def l2_file(
    path: Path,
    n: int,
    *,
    seed: int,
    camera: bool = True,
    env_name: str = "L2-Lift-Cube-Franka-IK-Abs-Scripted",
    sim_args: dict | None = None,
) -> Path:
    """An L2 file of ``n`` demos stored like the recorder's (gzip 2, one chunk per frame), with initial_state."""
    rng = np.random.default_rng(seed)
    demos = [make_demo(rng, 8 + i, camera=camera, seed=seed, success=i % 3 != 2) for i in range(n)]
    write_l2(path, demos, env_name=env_name, storage=ISAACLAB_STORAGE, sim_args=sim_args or SIM_ARGS)
    with h5py.File(path, "a") as f:
        for i in range(n):
            g = f[f"data/demo_{i}"].create_group("initial_state/rigid_object/object")
            g.create_dataset("root_pose", data=rng.normal(size=(1, 7)).astype(np.float32), **ISAACLAB_STORAGE)
            if camera:  # as the recorder streams them: one gzip chunk per frame
                obs = f[f"data/demo_{i}/obs"]
                for cam in ("table_cam", "wrist_cam"):
                    frames = obs[cam][()]
                    del obs[cam]
                    obs.create_dataset(cam, data=frames, chunks=(1, *frames.shape[1:]), **ISAACLAB_STORAGE)
    return path


def datasets(group: h5py.Group) -> dict[str, h5py.Dataset]:
    out = {}
    group.visititems(lambda name, obj: out.__setitem__(name, obj) if isinstance(obj, h5py.Dataset) else None)
    return out


def run_merge(*args: str) -> tuple[int, str]:
    r = subprocess.run(
        [sys.executable, "-m", "l2.tools.merge", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    return r.returncode, r.stdout + r.stderr


# --------------------------------------------------------------------------------------------- merge
def test_merge_renumbers_sums_total_and_copies_everything_exactly(tmp_path):
    a = l2_file(tmp_path / "scripted_a.hdf5", 11, seed=1)  # demo_10 lists before demo_2 in h5py
    b = l2_file(tmp_path / "teleop_b.hdf5", 2, seed=2)
    out = tmp_path / "merged.hdf5"
    summary = l2_merge.merge([a, b], out)
    assert summary["demos"] == 13
    assert summary["notices"] == []

    report = validate_file(out, expect_obs=("table_cam", "wrist_cam"))
    assert report.ok, report.violations
    assert report.episodes == 13
    with h5py.File(a) as fa, h5py.File(b) as fb, h5py.File(out) as fo:
        data = fo["data"]
        assert sorted(data.keys(), key=schema.demo_index) == [f"demo_{i}" for i in range(13)]
        sources = [(fa, f"demo_{i}", "scripted", "scripted_a.hdf5") for i in range(11)]
        sources += [(fb, f"demo_{i}", "teleop", "teleop_b.hdf5") for i in range(2)]
        total = 0
        for i, (src, name, tag, fname) in enumerate(sources):
            got, want = data[f"demo_{i}"], src[f"data/{name}"]
            for key in ("num_samples", "success", "seed"):
                assert got.attrs[key] == want.attrs[key], (i, key)
            assert (got.attrs["source"], got.attrs["source_file"], got.attrs["source_demo"]) == (tag, fname, name)
            want_sets, got_sets = datasets(want), datasets(got)
            assert sorted(got_sets) == sorted(want_sets)  # every obs term, camera and initial_state entry
            assert "initial_state/rigid_object/object/root_pose" in got_sets
            for path, d in want_sets.items():
                g = got_sets[path]
                assert (g.chunks, g.compression, g.compression_opts, g.dtype) == (
                    d.chunks,
                    d.compression,
                    d.compression_opts,
                    d.dtype,
                ), path
                np.testing.assert_array_equal(g[()], d[()], err_msg=path)
            total += int(want.attrs["num_samples"])
        assert data.attrs["total"] == total == report.samples
        assert fo.attrs["format_version"] == schema.FORMAT_VERSION
        assert json.loads(data.attrs["env_args"]) == json.loads(fa["data"].attrs["env_args"])

    # Isaac Lab's own handler reads the merged file (after a split too: mask/ sits beside data/)
    split.split(out, valid=0.2, seed=0)
    from isaaclab.utils.datasets import HDF5DatasetFileHandler

    with h5py.File(b) as fb:
        want_frames, want_success = fb["data/demo_1/obs/table_cam"][()], bool(fb["data/demo_1"].attrs["success"])
    handler = HDF5DatasetFileHandler()
    handler.open(str(out))
    try:
        assert handler.get_num_episodes() == 13
        episode = handler.load_episode("demo_12", "cpu")
        assert bool(episode.success) is want_success
        np.testing.assert_array_equal(episode.data["obs"]["table_cam"].numpy(), want_frames)
    finally:
        handler.close()

    # merging a merged file keeps each demo's first origin
    again = l2_merge.merge([out, a], tmp_path / "merged2.hdf5")
    assert again["demos"] == 24
    assert again["notices"][0].startswith(f"{out}: its filter keys (mask/) are not carried over")
    with h5py.File(tmp_path / "merged2.hdf5") as f:
        assert f["data/demo_12"].attrs["source_file"] == "teleop_b.hdf5"
        assert f["data/demo_13"].attrs["source_file"] == "scripted_a.hdf5"


def test_merge_refuses_other_tasks_layouts_and_existing_output_in_one_line(tmp_path):
    a = l2_file(tmp_path / "scripted_a.hdf5", 2, seed=1)
    teleop = l2_file(tmp_path / "teleop.hdf5", 2, seed=2, env_name="L2-Lift-Cube-Franka-IK-Abs-Teleop")
    slower = l2_file(tmp_path / "slow.hdf5", 2, seed=3, sim_args={**SIM_ARGS, "decimation": 8})
    more_envs = l2_file(tmp_path / "more_envs.hdf5", 2, seed=4, sim_args={**SIM_ARGS, "num_envs": 64})
    no_cams = l2_file(tmp_path / "no_cams.hdf5", 2, seed=5, camera=False)
    out = tmp_path / "out.hdf5"

    def refused(*args: str, words: tuple[str, ...]) -> None:
        rc, text = run_merge(*args)
        assert rc == 2, text
        lines = text.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), text
        for w in words:
            assert w in lines[0], (w, lines[0])
        assert not out.exists() and not list(tmp_path.glob(".*merging*"))

    refused(str(a), str(teleop), "-o", str(out), words=(str(a), str(teleop), "env_name", "--env-name"))
    refused(str(a), str(slower), "-o", str(out), "--env-name", "X", words=(str(a), str(slower), "sim_args.decimation"))
    refused(str(a), str(no_cams), "-o", str(out), words=(str(a), str(no_cams), "table_cam"))
    refused(str(a), str(a), "-o", str(out), words=("given twice",))
    with h5py.File(no_cams, "a") as f:
        f["data/demo_1/actions"][3, 0] = np.nan
    refused(str(no_cams), "-o", str(out), words=(f"{no_cams}:/data/demo_1/actions", "NaN"))

    # num_envs describes the run, not the task; --env-name merges variants of one task
    base_task = "L2-Lift-Cube-Franka-IK-Abs"
    rc, text = run_merge(str(a), str(more_envs), str(teleop), "-o", str(out), "--env-name", base_task)
    assert rc == 0, text
    with h5py.File(out) as f:
        assert json.loads(f["data"].attrs["env_args"])["env_name"] == base_task
        assert len(f["data"]) == 6
    before = out.read_bytes()
    rc, text = run_merge(str(a), "-o", str(out))
    assert rc == 2 and "--overwrite" in text and out.read_bytes() == before
    rc, text = run_merge(str(a), "-o", str(out), "--overwrite")
    assert rc == 0, text
    assert validate_file(out).episodes == 2


# --------------------------------------------------------------------------------------------- split
def test_split_writes_disjoint_covering_robomimic_masks_without_touching_demos(tmp_path):
    f_in = l2_file(tmp_path / "scripted_a.hdf5", 12, seed=1, camera=False)
    with h5py.File(f_in) as f:
        before = {p: d[()] for p, d in datasets(f["data"]).items()}
    train, valid = split.split(f_in, valid=0.25, seed=3)
    assert len(valid) == 3 and len(train) == 9
    with h5py.File(f_in) as f:
        assert f["mask/train"].dtype.kind == "S" and f["mask/train"].ndim == 1  # robomimic's form
        got_train, got_valid = split.mask_names(f, "train"), split.mask_names(f, "valid")
        after = {p: d[()] for p, d in datasets(f["data"]).items()}
    assert (got_train, got_valid) == (train, valid)
    assert not set(train) & set(valid)
    assert sorted(train + valid, key=schema.demo_index) == [f"demo_{i}" for i in range(12)]
    assert train == sorted(train, key=schema.demo_index)
    assert before.keys() == after.keys() and all(np.array_equal(before[k], after[k]) for k in before)
    assert validate_file(f_in).ok

    with pytest.raises(split.SplitError, match="mask/train: exists"):
        split.split(f_in, valid=0.25, seed=3)
    assert split.split(f_in, valid=0.25, seed=3, overwrite=True) == (train, valid)  # seeded: same draw
    assert split.split(f_in, valid=0.25, seed=4, overwrite=True) != (train, valid)
    assert len(split.split(f_in, valid=0.01, seed=0, overwrite=True)[1]) == 1  # at least one valid demo

    # --first N: a split of the first N demos under its own keys, beside the others
    with h5py.File(f_in) as f:
        whole = split.mask_names(f, "train")
    train5, valid5 = split.split(f_in, valid=0.2, seed=0, first=5)
    assert (len(train5), len(valid5)) == (4, 1)
    assert sorted(train5 + valid5, key=schema.demo_index) == [f"demo_{i}" for i in range(5)]
    with h5py.File(f_in) as f:
        assert split.mask_names(f, "train_5") == train5 and split.mask_names(f, "train") == whole
    with pytest.raises(split.SplitError, match=r"--first 13, but the file holds 12 demos"):
        split.split(f_in, first=13)
    assert validate_file(f_in).ok

    # the validator checks filter keys
    with h5py.File(f_in, "a") as f:
        split.write_mask(f, "valid", ["demo_1", "demo_99"])
    report = validate_file(f_in)
    assert [(v.path, "demo_99" in v.message) for v in report.violations] == [("/mask/valid", True)]


def test_l3_converts_only_a_filter_key(tmp_path):
    a = l2_file(tmp_path / "scripted_a.hdf5", 6, seed=1, camera=False)
    train, _ = split.split(a, valid=0.5, seed=0)
    cfg = state_only_config(tmp_path, REPO / "config/lift_cube.yaml")
    summary = convert(
        [str(a)], tmp_path / "out", config=cfg, success_only=False, filter_key="train", log=lambda m: None
    )
    assert summary.episodes == len(train) == 3
    lengths = [json.loads(line)["length"] for line in (tmp_path / "out/meta/episodes.jsonl").read_text().splitlines()]
    assert lengths == [8 + schema.demo_index(d) for d in train]

    with pytest.raises(InputError) as e:
        convert([str(a)], tmp_path / "out2", config=cfg, filter_key="test", log=lambda m: None)
    assert str(e.value).startswith(f"{a}:/mask/test: missing filter key")
    assert not (tmp_path / "out2").exists()


def test_l3_tags_each_merged_demo_with_its_own_source(tmp_path):
    """A merged file of scripted and teleop demos converts with each episode tagged by its source attribute
    (not the merged file's name); --sources filters those episodes, and --source NAME=GLOB still overrides."""
    a = l2_file(tmp_path / "scripted_a.hdf5", 3, seed=1, camera=False)
    b = l2_file(tmp_path / "teleop_b.hdf5", 2, seed=2, camera=False, env_name="L2-Lift-Cube-Franka-IK-Abs-Teleop")
    merged = tmp_path / "merged_lift_cube.hdf5"
    l2_merge.merge([a, b], merged, env_name="L2-Lift-Cube-Franka-IK-Abs")
    cfg = state_only_config(tmp_path, REPO / "config/lift_cube.yaml")

    def sources(out: Path, **kw) -> list[str]:
        convert([str(merged)], out, config=cfg, success_only=False, log=lambda m: None, **kw)
        return [json.loads(line)["source"] for line in (out / "meta/episodes.jsonl").read_text().splitlines()]

    assert sources(tmp_path / "all") == ["scripted"] * 3 + ["teleop"] * 2
    assert sources(tmp_path / "teleop", sources=["teleop"]) == ["teleop"] * 2
    assert sources(tmp_path / "over", source_overrides=["sim=merged_*"]) == ["sim"] * 5

    with h5py.File(merged, "a") as f:
        f["data/demo_1"].attrs["source"] = "../x"
    with pytest.raises(InputError) as e:
        convert([str(merged)], tmp_path / "bad", config=cfg, log=lambda m: None)
    assert str(e.value).startswith(f"{merged}:/data/demo_1.attrs[source]: unsafe source tag '../x'"), str(e.value)


# --------------------------------------------------------------------------------------------- robomimic
@pytest.mark.robomimic
def test_robomimic_sequence_dataset_loads_the_train_split_of_a_merged_file(tmp_path):
    a = l2_file(tmp_path / "scripted_a.hdf5", 4, seed=1)
    b = l2_file(tmp_path / "scripted_b.hdf5", 3, seed=2)
    merged = tmp_path / "scripted_merged.hdf5"
    l2_merge.merge([a, b], merged)
    train, _ = split.split(merged, valid=0.3, seed=0)
    with h5py.File(merged) as f:
        frames = sum(int(f[f"data/{d}"].attrs["num_samples"]) for d in train)
    got = _probe(merged, tmp_path)
    assert got["robomimic"] == "0.3.0"
    assert got["demos"] == train
    assert got["items"] == got["cached_items"] == frames
    assert got["rgb"] == ["table_cam", "wrist_cam"]
    assert got["low_dim"] == ["actions", "joint_pos", "joint_vel", "object_position", "target_object_position"]


@pytest.mark.sim
@pytest.mark.robomimic
def test_real_recordings_merge_split_and_load_in_robomimic(scripted_run, tmp_path):
    rec = scripted_run[0]
    copy = shutil.copy(rec, tmp_path / "scripted_copy.hdf5")
    merged = tmp_path / "scripted_merged.hdf5"
    rc, text = run_merge(str(rec), str(copy), "-o", str(merged))
    assert rc == 0, text
    report = validate_file(merged, expect_obs=("table_cam", "wrist_cam"))
    assert report.ok and report.episodes == 2 * validate_file(rec).episodes, report.violations
    train, _ = split.split(merged, valid=0.2, seed=0)
    assert validate_file(merged).ok
    got = _probe(merged, tmp_path)
    assert got["demos"] == train and got["rgb"] == ["table_cam", "wrist_cam"]


def _probe(path: Path, tmp: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": ""}
    r = subprocess.run(
        [robomimic_python(), str(PROBE), str(path), "train"],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        cwd=tmp,
    )
    assert r.returncode == 0, f"robomimic probe failed:\n{r.stdout[-2000:]}\n{r.stderr[-6000:]}"
    return json.loads(r.stdout.strip().splitlines()[-1])
