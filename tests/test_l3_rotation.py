"""Rotations GR00T reads right: the split-pose mapping writes the quaternion in GR00T's (w, x, y, z) order,
rotation types sit only on keys of their exact width, and modality flags are written and checked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import h5py
import numpy as np
import pyarrow.parquet as pq
import pytest
from l3_fixtures import make_l2_file
from scipy.spatial.transform import Rotation

from l3 import layout
from l3.config_file import load_mapping
from l3.convert import convert
from l3.errors import ConfigError, InputError
from l3.mapping import mapping_from_dict
from l3.validate import validate

REPO = Path(__file__).resolve().parent.parent
SPLIT = REPO / "config" / "lift_cube_split_pose.yaml"


@pytest.fixture(scope="module")
def split(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("split")
    files = [
        make_l2_file(d / "scripted_lift_cube.hdf5", 2, seed=5, camera=True),
        make_l2_file(d / "teleop_lift_cube.hdf5", 1, seed=6, camera=True, legacy=True),
    ]  # stored WXYZ
    out = d / "ds"
    convert([str(f) for f in files], out, config=SPLIT, log=lambda m: None)
    return out


def test_split_pose_quaternion_gives_the_recorded_rotation_in_gr00t_order(split):
    assert validate(split) == []
    modality = json.loads((split / layout.MODALITY_PATH).read_text())
    assert modality["action"] == {
        "ee_position": {"start": 0, "end": 3, "absolute": True},
        "ee_rotation": {"start": 3, "end": 7, "absolute": True, "rotation_type": "quaternion"},
        "gripper": {"start": 7, "end": 8, "absolute": True},
    }
    info = json.loads((split / layout.INFO_PATH).read_text())
    assert info["features"]["action"]["names"] == ["x", "y", "z", "qw", "qx", "qy", "qz", "gripper"]
    for line in (split / layout.EPISODES_PATH).read_text().splitlines():
        e = json.loads(line)
        table = pq.read_table(split / layout.data_path(e["episode_index"]))
        action = np.stack(table.column("action").to_numpy(zero_copy_only=False))
        with h5py.File(e["file"]) as f:
            recorded = f[f"data/{e['demo']}/actions"][()]
            legacy = "format_version" not in f.attrs
        stored = recorded[:, 3:7]
        xyzw = stored[:, [1, 2, 3, 0]] if legacy else stored
        # GR00T's conversion (pytorch3d) reads the key as (w, x, y, z): scipy with scalar_first does the same.
        got = Rotation.from_quat(action[:, 3:7].astype(np.float64), scalar_first=True).as_matrix()
        want = Rotation.from_quat(xyzw.astype(np.float64)).as_matrix()
        np.testing.assert_allclose(got, want, atol=1e-6)
        assert action[:, 3:7].tobytes() == xyzw[:, [3, 0, 1, 2]].tobytes()  # a reorder, bit-exact
        assert action[:, :3].tobytes() == recorded[:, :3].tobytes()


def test_rotation_type_only_on_a_key_of_its_width_and_in_gr00t_order(tmp_path):
    doc = {
        "state": {"q": {"from": "obs/joint_pos"}},
        "action": {
            "ee_pose": {
                "from": "actions",
                "slice": [0, 7],
                "rotation_type": "quaternion",
                "quaternion": [3, 7],
                "quaternion_order": "wxyz",
            }
        },
    }
    with pytest.raises(ConfigError, match="quaternion means a 4-column key"):
        mapping_from_dict(doc)
    doc["action"] = {"rot": {"from": "actions", "slice": [3, 7], "rotation_type": "quaternion"}}
    with pytest.raises(ConfigError, match="quaternion_order: wxyz"):
        mapping_from_dict(doc)
    doc["action"] = {"rot": {"from": "actions", "slice": [0, 7], "rotation_type": "axis_angle"}}
    src = make_l2_file(tmp_path / "scripted_a.hdf5", 1)
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="axis_angle needs a key of exactly 3 columns, this one has 7"):
        convert([str(src)], tmp_path / "o", config=cfg, log=lambda m: None)
    assert not (tmp_path / "o").exists()
    assert load_mapping(REPO / "config" / "lift_cube.yaml").action[0].rotation_type is None


def test_validate_refuses_rotation_type_on_a_wider_key_and_non_bool_absolute(split, tmp_path):
    copy = tmp_path / "ds"
    shutil.copytree(split, copy)
    path = copy / layout.MODALITY_PATH
    modality = json.loads(path.read_text())
    modality["action"]["ee_position"]["rotation_type"] = "quaternion"  # 3 columns
    modality["action"]["gripper"]["absolute"] = "yes"
    path.write_text(json.dumps(modality))
    problems = "\n".join(map(str, validate(copy)))
    assert "action.ee_position: rotation_type quaternion on 3 columns" in problems
    assert "action.gripper: absolute must be true or false" in problems
