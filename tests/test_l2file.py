"""l2.format.l2file: the one reader of L2 files, and the one rule for a demo's source that l2 and l3 share."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from l3_fixtures import ENV_NAME, make_l2_file

from l2.format import schema
from l2.format.l2file import L2File, L2FileError, demo_source, parse_env_args
from l2.tools import inspect_demos
from l2.tools.merge import merge
from l3 import inputs as l3_inputs


def test_demos_in_numeric_order_env_and_episode(tmp_path):
    path = make_l2_file(tmp_path / "scripted_a.hdf5", 12)
    with L2File(path) as f:
        assert f.demos == [f"demo_{i}" for i in range(12)]  # demo_10 after demo_9, not after demo_1
        assert f.env_name == ENV_NAME and f.env_args["type"] == schema.ENV_ARGS_TYPE
        assert [f.num_samples(d) for d in f.demos[:3]] == [12, 13, 14]
        ep = f.episode("demo_2", load_bytes=2**20)
        with h5py.File(path, "r") as raw:
            np.testing.assert_array_equal(ep.actions, raw["data/demo_2/actions"][()])
        assert f.obs_layout()["joint_pos"] == ((9,), "float32")
        assert f.source("demo_0") == "scripted"


def test_bad_files_are_one_line(tmp_path):
    with pytest.raises(L2FileError, match=r"nope.hdf5:/: no such file$"):
        L2File(tmp_path / "nope.hdf5")
    empty = tmp_path / "empty.hdf5"
    h5py.File(empty, "w").close()
    with pytest.raises(L2FileError, match=r"empty.hdf5:/data: missing \(not an L2 demo file\)"):
        L2File(empty)
    with pytest.raises(ValueError, match="env_args must be a JSON object"):
        parse_env_args("[1, 2]")
    with pytest.raises(ValueError, match="not valid JSON"):
        parse_env_args(b"{")


def test_source_rule():
    assert demo_source("/x/rl_run.hdf5") == "rl"
    assert demo_source("/x/scripted_lift_cube/shard_3.hdf5") == "scripted"
    assert demo_source("/x/anything.hdf5", b"teleop") == "teleop"  # the demo's own attribute first
    assert demo_source("/x/anything.hdf5") == schema.UNKNOWN_SOURCE


def test_merged_and_shard_files_tagged_alike_by_inspect_and_l3(tmp_path):
    """A merged file (per-demo source attributes, a neutral name) and a shard (named by its folder): l2's
    inspection report and L3 give every demo the same tag."""
    parts = [make_l2_file(tmp_path / "scripted_a.hdf5", 2), make_l2_file(tmp_path / "rl_b.hdf5", 3, seed=1)]
    merged = tmp_path / "all_demos.hdf5"
    merge(parts, merged)
    shard = make_l2_file(tmp_path / "teleop_lift_cube" / "shard_0.hdf5", 2)
    files = [str(merged), str(shard)]
    refs, _ = inspect_demos.scan(files)
    ours = [(r.file, r.demo, r.source) for r in refs]
    theirs = []
    for file in files:
        with l3_inputs.Input(file) as inp:
            theirs += [(file, r.demo, r.source) for r in inp.scan(None).refs]
    assert ours == theirs
    assert [s for _, _, s in ours] == ["scripted"] * 2 + ["rl"] * 3 + ["teleop"] * 2
