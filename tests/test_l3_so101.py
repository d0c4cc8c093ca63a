"""The SO-101 mapping (config/so101_lift_cube.yaml) and the per-key units of the L3 mapping (norm_mode, limits).

Units: each of LeRobot's MotorNormMode values converts and inverts (take / put), the written parquet values and
statistics are the converted ones, bad configs are refused in one line naming the key. The SO-101 output has the
keys Isaac-GR00T's so100_dualcam data config reads. Marked ``lerobot`` (LeRobot 0.6.1 in its own venv): the
conversion of servo ticks matches LeRobot's own ``MotorsBus._normalize``, and the v3.0 output merges with a
dataset recorded through LeRobot's API (docs/so101_dataset.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import h5py
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import lerobot_python, run_probe
from l3_fixtures import SO101_CAMERAS, SO101_LIMITS, make_so101_file

from l3 import layout
from l3.config_file import load_mapping
from l3.convert import convert, main
from l3.errors import ConfigError
from l3.mapping import NORM_MODES, Slice, mapping_from_dict, mapping_to_dict

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "config/so101_lift_cube.yaml"
GRIPPER_LIMITS = (-0.174533, 1.745329)


# --------------------------------------------------------------------------- the transforms


def lerobot_formula(mode: str, x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """LeRobot's ``MotorsBus._normalize`` (lerobot 0.6.1, motors/motors_bus.py) without its clamp, in float64; its
    DEGREES counts from the middle of the calibrated range (in degrees of the angle, here: see the lerobot test)."""
    if mode == "range_m100_100":
        return (((x - lo) / (hi - lo)) * 200) - 100
    if mode == "range_0_100":
        return ((x - lo) / (hi - lo)) * 100
    return np.degrees(x - (lo + hi) / 2)


@pytest.mark.parametrize(
    "mode,limits",
    [
        ("degrees", None),
        ("degrees", SO101_LIMITS[:5].tolist()),
        ("range_m100_100", SO101_LIMITS[:5].tolist()),
        ("range_0_100", [list(GRIPPER_LIMITS)]),
    ],
)
def test_norm_mode_round_trip(mode, limits):
    """take converts as LeRobot's formula does (float64, cast to the input's float32); put inverts it: bit-exact in
    float64, and in float32 within one float32 step at the scale of the column (max of |x|, |lo|, |hi|)."""
    width = len(limits) if limits else 5
    s = Slice("k", "obs/joint_pos", 1, 1 + width, norm_mode=mode, limits=tuple(map(tuple, limits)) if limits else None)
    lo, hi = (np.array(limits)[:, 0], np.array(limits)[:, 1]) if limits else (np.zeros(width), np.zeros(width))
    rng = np.random.default_rng(3)
    span = np.maximum(hi - lo, 1.0)
    source = np.concatenate(  # columns 1..width: within the limits and up to half a range beyond them
        [rng.normal(size=(5000, 1)), rng.uniform(lo - span / 2, hi + span / 2, size=(5000, width))], axis=1
    ).astype(np.float32)
    source[:3, 1:] = [lo, hi, (lo + hi) / 2]

    got = s.take(source)
    assert got.dtype == np.float32 and got.flags.c_contiguous
    cols = source[:, 1:].astype(np.float64)
    want = lerobot_formula(mode, cols, lo, hi)
    np.testing.assert_array_equal(got, want.astype(np.float32))
    if mode != "degrees":  # the ends of the limits and the middle
        low = {"range_m100_100": -100.0, "range_0_100": 0.0}[mode]
        np.testing.assert_allclose(got[:3], [[low] * width, [100.0] * width, [low / 2 + 50] * width], atol=1e-5)

    target = np.zeros_like(source)
    s.put(got, target)
    assert np.all(target[:, 0] == 0)  # columns outside the key are left alone
    scale = np.spacing(np.maximum(np.abs(source[:, 1:]), np.maximum(np.abs(lo), np.abs(hi))).astype(np.float32))
    assert np.all(np.abs(target[:, 1:] - source[:, 1:]) <= scale)
    assert np.mean(target[:, 1:] == source[:, 1:]) > 0.8  # most come back bit for bit

    exact = s.from_norm(s.to_norm(cols))  # float64 throughout
    np.testing.assert_allclose(exact, cols, rtol=0, atol=1e-12)


def test_degrees_without_limits_are_plain_degrees():
    s = Slice("k", "x", norm_mode="degrees")
    np.testing.assert_array_equal(s.take(np.array([[np.pi, -np.pi / 2, 0.0]])), [[180.0, -90.0, 0.0]])


def test_key_without_norm_mode_unchanged():
    """The Franka's mapping, like every mapping without norm_mode, takes its columns as they are."""
    source = np.random.default_rng(0).normal(size=(4, 8)).astype(np.float32)
    s = Slice("gripper", "actions", 7, 8)
    assert s.take(source).tobytes() == np.ascontiguousarray(source[:, 7:8]).tobytes()


BASE = {"state": {"q": {"from": "obs/joint_pos"}}, "action": {"a": {"from": "actions", "slice": [0, 2]}}}


@pytest.mark.parametrize(
    "key,message",
    [
        ({"norm_mode": "radians"}, "action.a.norm_mode: 'radians' is not one of degrees, range_m100_100, range_0_100"),
        (
            {"norm_mode": "range_0_100"},
            "action.a.limits: norm_mode range_0_100 maps each column's [lo, hi] onto 0..100",
        ),
        ({"norm_mode": "range_m100_100"}, "onto -100..100"),
        ({"norm_mode": "degrees", "limits": [0, 1]}, "action.a.limits: expected [[lo, hi], ...]"),
        ({"norm_mode": "degrees", "limits": [[0, 1, 2], [0, 1]]}, "action.a.limits: expected [[lo, hi], ...]"),
        ({"norm_mode": "degrees", "limits": [[0, "1"], [0, 1]]}, "action.a.limits: expected [[lo, hi], ...]"),
        ({"norm_mode": "degrees", "limits": [[0, 1], [0, float("nan")]]}, "action.a.limits: expected [[lo, hi], ...]"),
        ({"norm_mode": "degrees", "limits": [[0, True], [0, 1]]}, "action.a.limits: expected [[lo, hi], ...]"),
        ({"norm_mode": "range_0_100", "limits": [[0, 1], [2, 2]]}, "action.a.limits[1]: lo 2 >= hi 2"),
        ({"norm_mode": "range_0_100", "limits": [[1, 0], [0, 1]]}, "action.a.limits[0]: lo 1 >= hi 0"),
        (
            {"norm_mode": "range_0_100", "limits": [[0, 1]]},
            "action.a.limits: 1 pair(s) for the 2 column(s) of its slice",
        ),
        ({"limits": [[0, 1], [0, 1]]}, "action.a.limits: only with a norm_mode"),
        ({"norm_mode": "degrees", "quaternion": [0, 4], "slice": [0, 4]}, "action.a.norm_mode: not on a key with a"),
        ({"norm_mode": "degrees", "unit": "degrees"}, "action.a: unknown key(s) ['unit']"),
    ],
)
def test_bad_norm_config_is_one_line_naming_the_key(key, message):
    doc = json.loads(json.dumps(BASE))
    doc["action"]["a"].update(key)
    with pytest.raises(ConfigError) as e:
        mapping_from_dict(doc, "my.yaml")
    assert str(e.value).startswith("my.yaml: ") and "\n" not in str(e.value)
    assert message in str(e.value), str(e.value)


def test_limits_count_checked_against_the_source_width(tmp_path, capsys):
    """Without a slice the key's width is known from the input: a wrong count is refused there, before writing."""
    f = make_so101_file(tmp_path / "scripted_so101.hdf5", 1, camera=False)
    cfg = tmp_path / "m.yaml"
    doc = {
        "fps": 30,
        "state": {"q": {"from": "obs/joint_pos", "norm_mode": "range_0_100", "limits": [[0, 1]] * 5}},
        "action": {"a": {"from": "actions"}},
    }
    cfg.write_text(yaml.safe_dump(doc))
    capsys.readouterr()
    assert main([str(f), "--config", str(cfg), "-o", str(tmp_path / "out"), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "state.q.limits: 5 pair(s) for its 6 column(s)" in err, err
    assert not (tmp_path / "out").exists()


def test_so101_config_prints_and_loads_back():
    m = load_mapping(CONFIG)
    assert mapping_from_dict(mapping_to_dict(m)) == m
    assert [(s.key, s.norm_mode) for s in m.action] == [("single_arm", "degrees"), ("gripper", "range_0_100")]
    assert m.action[1].limits == (GRIPPER_LIMITS,) and set(NORM_MODES) >= {s.norm_mode for s in m.state}


# --------------------------------------------------------------------------- the SO-101 dataset


@pytest.fixture(scope="module")
def so101_file(tmp_path_factory) -> Path:
    return make_so101_file(tmp_path_factory.mktemp("so101") / "scripted_lift_cube_so101.hdf5", 2, frame_size=(48, 64))


@pytest.fixture(scope="module")
def so101_dataset(so101_file, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("so101_out") / "ds"
    convert([str(so101_file)], out, config=CONFIG, log=lambda m: None)
    return out


def expected_units(a: np.ndarray) -> np.ndarray:
    """What the SO-101 mapping writes for (T, 6) radians: degrees for the arm, the jaw's limits onto 0..100."""
    lo, hi = GRIPPER_LIMITS
    x = a.astype(np.float64)
    return np.concatenate([np.degrees(x[:, :5]), ((x[:, 5:] - lo) / (hi - lo)) * 100], axis=1).astype(np.float32)


def test_so101_output_has_so100_dualcam_keys(so101_dataset):
    """Isaac-GR00T's so100_dualcam (gr00t/experiment/data_config.py, So100DualCamDataConfig) reads video.front,
    video.wrist, state/action.single_arm and .gripper, language annotation.human.task_description."""
    modality = json.loads((so101_dataset / layout.MODALITY_PATH).read_text())
    so100_dualcam = {
        "video": ["video.front", "video.wrist"],
        "state": ["state.single_arm", "state.gripper"],
        "action": ["action.single_arm", "action.gripper"],
        "language": ["annotation.human.task_description"],
    }
    assert [f"video.{k}" for k in modality["video"]] == so100_dualcam["video"]
    assert [f"state.{k}" for k in modality["state"]] == so100_dualcam["state"]
    assert [f"action.{k}" for k in modality["action"]] == so100_dualcam["action"]
    assert [f"annotation.{k}" for k in modality["annotation"]] == so100_dualcam["language"]
    for group in ("state", "action"):  # GR00T's SO-100 example modality.json: single_arm 0:5, gripper 5:6
        assert {k: (v["start"], v["end"]) for k, v in modality[group].items()} == {
            "single_arm": (0, 5),
            "gripper": (5, 6),
        }
    assert modality["video"] == {c: {"original_key": f"observation.images.{c}"} for c in SO101_CAMERAS}

    info = json.loads((so101_dataset / layout.INFO_PATH).read_text())
    names = [f"{j}.pos" for j in ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper")]
    assert info["robot_type"] == "so101_follower" and info["fps"] == 30
    assert info["features"]["observation.state"]["names"] == names == info["features"]["action"]["names"]
    t = pq.read_table(so101_dataset / layout.data_path(0))
    tasks = [json.loads(line)["task"] for line in (so101_dataset / layout.TASKS_PATH).read_text().splitlines()]
    assert {tasks[i] for i in t["annotation.human.task_description"].to_pylist()} == {"Pick up the cube and lift it."}


def test_so101_values_and_stats_are_in_the_converted_units(so101_file, so101_dataset):
    with h5py.File(so101_file) as f:
        demos = [(f[f"data/demo_{i}/obs/joint_pos"][()], f[f"data/demo_{i}/actions"][()]) for i in range(2)]
    states, actions = [], []
    for i, (joint_pos, action) in enumerate(demos):
        t = pq.read_table(so101_dataset / layout.data_path(i))
        state = np.array(t["observation.state"].to_pylist(), dtype=np.float32)
        act = np.array(t["action"].to_pylist(), dtype=np.float32)
        assert state.tobytes() == expected_units(joint_pos).tobytes()
        assert act.tobytes() == expected_units(action).tobytes()
        states.append(state)
        actions.append(act)
        ep_stats = json.loads((so101_dataset / layout.EPISODES_STATS_PATH).read_text().splitlines()[i])["stats"]
        assert ep_stats["observation.state"]["min"] == state.min(axis=0).tolist()
        assert ep_stats["action"]["max"] == act.max(axis=0).tolist()
    state, act = np.concatenate(states), np.concatenate(actions)
    assert act[:, 5].min() >= 0 and act[:, 5].max() <= 100  # the jaw within its limits: 0..100
    stats = json.loads((so101_dataset / layout.STATS_PATH).read_text())
    assert stats["observation.state"]["max"] == state.max(axis=0).tolist()
    assert stats["action"]["min"] == act.min(axis=0).tolist()
    np.testing.assert_allclose(stats["action"]["mean"], act.astype(np.float64).mean(axis=0), rtol=1e-6)


def test_policy_answer_goes_back_to_radians():
    """What a policy trained on the dataset answers (degrees, 0..100) becomes the env's radians again (put)."""
    m = load_mapping(CONFIG)
    radians = np.random.default_rng(1).uniform(SO101_LIMITS[:, 0], SO101_LIMITS[:, 1], size=(50, 6)).astype(np.float32)
    target = np.zeros_like(radians)
    for s in m.action:
        s.put(s.take(radians), target)
    np.testing.assert_allclose(target, radians, rtol=0, atol=float(np.spacing(np.float32(3.0))))


# --------------------------------------------------------------------------- with LeRobot 0.6.1


@pytest.mark.lerobot
def test_norm_modes_match_lerobots_normalize(tmp_path):
    """Raw servo ticks through LeRobot 0.6.1's own MotorsBus._normalize and through our take with the calibrated
    range as limits: range_m100_100 and range_0_100 equal to the last bit; degrees (ours of the angle, 4096 ticks a
    turn) are LeRobot's times 4095/4096 (LeRobot divides by the resolution minus one)."""
    ticks = [1000, 1001, 1500, 2047, 2048, 2999, 3000]
    cases = [{"mode": m, "range_min": 1000, "range_max": 3000, "ticks": ticks} for m in NORM_MODES]
    (tmp_path / "ticks.json").write_text(json.dumps(cases))
    run_probe(lerobot_python("v30"), "norm_so101", tmp_path / "ticks.json", tmp_path, str(tmp_path / "out.json"))
    lerobot = dict(zip(NORM_MODES, json.loads((tmp_path / "out.json").read_text()), strict=True))
    x = np.array(ticks, dtype=np.float64)[:, None]
    for mode in ("range_m100_100", "range_0_100"):
        ours = Slice("k", "x", norm_mode=mode, limits=((1000.0, 3000.0),)).take(x)[:, 0]
        assert ours.tolist() == lerobot[mode], mode
    angle = x * 2 * np.pi / 4096  # the same ticks as an angle in radians, from the range's middle (tick 2000)
    ours = Slice("k", "x", norm_mode="degrees", limits=((1000 * 2 * np.pi / 4096, 3000 * 2 * np.pi / 4096),))
    np.testing.assert_allclose(ours.take(angle)[:, 0], np.array(lerobot["degrees"]) * 4095 / 4096, rtol=1e-12)


@pytest.mark.lerobot
def test_so101_v30_merges_with_a_lerobot_recording(tmp_path):
    """Our SO-101 v3.0 output and a dataset recorded through LeRobot 0.6.1's own API (LeRobotDataset.create with
    so101_follower's features, cameras front/wrist at our 224x224, fps 30) merge with LeRobot's merge_datasets after
    the preparation docs/so101_dataset.md gives (LeRobot's remove_feature and reencode_dataset, the converter's
    per-feature fps dropped); the merged dataset loads, has both sources' episodes and tasks, and our rows are our
    converted values."""
    lerobot_python("v30")
    f = make_so101_file(tmp_path / "scripted_lift_cube_so101.hdf5", 2, length=8)
    ours = tmp_path / "sim_v30"
    convert([str(f)], ours, config=CONFIG, codebase_version="v3.0", log=lambda m: None)
    work = tmp_path / "work"
    work.mkdir()
    npz = tmp_path / "merged.npz"
    got = run_probe(lerobot_python("v30"), "merge_so101", ours, tmp_path, str(work), str(npz))

    assert got["lerobot"].startswith("0.6.")
    assert got["use_degrees_default"] is True and got["degrees_when_use_degrees"] is True  # so101_follower: degrees
    assert got["robot_type"] == "so101_follower" and got["fps"] == 30
    assert got["features"] == sorted(
        ["action", "observation.state", "observation.images.front", "observation.images.wrist"]
        + ["timestamp", "frame_index", "episode_index", "index", "task_index"]
    )
    assert got["names"][-1] == "gripper.pos" and len(got["names"]) == 6
    assert got["tasks"] == ["Pick up the cube and lift it.", "Put the cube in the box."]
    eps = got["episodes"]
    assert [e["length"] for e in eps] == [6, 7, 8, 9] and got["frames"] == got["frames_read"] == 30
    assert [e["source"] for e in eps] == [None, None, "scripted", "scripted"]  # our source tags survive
    assert [e["tasks"] for e in eps[2:]] == [["Pick up the cube and lift it."]] * 2

    data = pa.concat_tables(pq.read_table(p) for p in sorted((ours / "data").glob("*/*.parquet")))
    arrays = np.load(npz)
    mine = arrays["episode_index"] >= 2
    for key in ("observation.state", "action"):
        want = np.array(data[key].to_pylist(), dtype=np.float32)
        assert arrays[key][mine].tobytes() == want.tobytes(), key
    with h5py.File(f) as h:
        first = h["data/demo_0/actions"][()]
    assert arrays["action"][mine][:8].tobytes() == expected_units(first).tobytes()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
