"""The policy-server protocol (no simulator): messages, client and server, the modality adapter in both
directions, and the dataset replay policy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import free_port, refused_in_one_line
from l3_fixtures import make_l2_file, state_only_config

from l2.format import schema
from l2.policy import protocol
from l2.policy.modality import ModalityAdapter, ModalityError
from l2.policy.replay import DatasetError, DatasetReplayPolicy
from l3.config_file import load_mapping
from l3.convert import convert
from l3.mapping import mapping_from_dict

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "config" / "lift_cube.yaml"
SPLIT_CONFIG = REPO / "config" / "lift_cube_split_pose.yaml"


# ------------------------------------------------------------------------------------------ messages
@pytest.mark.parametrize(
    "array",
    [
        np.arange(12, dtype=np.float32).reshape(3, 4),
        np.linspace(-1, 1, 7, dtype=np.float64),
        np.random.default_rng(0).integers(0, 255, (2, 1, 5, 4, 3), dtype=np.uint8),
        np.array([[True, False]]),
        np.arange(6, dtype=np.int64).reshape(2, 3).T,  # not C-contiguous
        np.zeros((0, 7), np.float32),
        np.zeros((4, 0, 2), np.uint8),
        np.array(3.5, np.float32),  # 0-d
    ],
)
def test_ndarray_round_trip_keeps_dtype_shape_and_values(array):
    message = protocol.pack({"nested": {"a": [array, {"b": array}]}})
    back = protocol.unpack(message)
    for got in (back["nested"]["a"][0], back["nested"]["a"][1]["b"]):
        assert got.dtype == array.dtype and got.shape == array.shape
        assert np.array_equal(got, array)


def test_ndarray_travels_as_tagged_npy_bytes():
    import msgpack

    raw = msgpack.unpackb(protocol.pack(np.ones(3, np.float32)), raw=False)
    assert set(raw) == {"__ndarray_class__", "as_npy"} and raw["__ndarray_class__"] is True
    assert raw["as_npy"][:6] == b"\x93NUMPY"  # numpy.save's format


def test_numpy_scalars_travel_as_numbers_and_object_arrays_are_refused():
    assert protocol.unpack(protocol.pack({"x": np.float32(1.5), "n": np.int64(3)})) == {"x": 1.5, "n": 3}
    with pytest.raises(ValueError):  # numpy.save without pickle
        protocol.pack(np.array([object()]))


# ------------------------------------------------------------------------------------------ client / server
class EchoPolicy:
    def __init__(self):
        self.resets = []

    def get_action(self, observation, options=None):
        if options and options.get("fail"):
            raise RuntimeError("model exploded")
        return {"a": observation["state"]["q"] * 2}, {"seen": sorted(observation)}

    def reset(self, options=None):
        self.resets.append(options)
        return {"ok": True}

    def get_modality_config(self):
        return {"action": {"a": {"start": 0, "end": 3}}}


@pytest.fixture
def server():
    policy = EchoPolicy()
    srv = protocol.PolicyServer(policy, "127.0.0.1", 0, api_token="secret")
    thread = srv.start_thread()
    yield srv, policy
    srv.stop()
    thread.join(5)


def test_endpoints_answer_as_the_protocol_says(server):
    srv, policy = server
    client = protocol.PolicyClient("127.0.0.1", srv.port, 5, api_token="secret")
    assert client.ping()["status"] == "ok"
    assert client.reset({"episode_index": [3, 4]}) == {"ok": True}
    assert policy.resets == [{"episode_index": [3, 4]}]
    assert client.get_modality_config() == {"action": {"a": {"start": 0, "end": 3}}}
    q = np.arange(6, dtype=np.float32).reshape(2, 1, 3)
    action, info = client.get_action({"state": {"q": q}, "video": {}, "language": {}})
    assert np.array_equal(action["a"], 2 * q) and action["a"].dtype == np.float32
    assert info == {"seen": ["language", "state", "video"]}


def test_errors_come_back_as_one_line_and_the_server_lives_on(server):
    srv, _ = server
    client = protocol.PolicyClient("127.0.0.1", srv.port, 5, api_token="secret")
    with pytest.raises(protocol.ServerError, match=r"'get_action' failed: RuntimeError: model exploded"):
        client.get_action({"state": {"q": np.zeros((1, 1, 3))}}, {"fail": True})
    with pytest.raises(protocol.ServerError, match=r"unknown endpoint 'predict'"):
        client.call("predict")
    assert client.ping()["status"] == "ok"  # still serving


def test_token_is_required_when_the_server_has_one(server):
    srv, _ = server
    for token in (None, "wrong"):
        with pytest.raises(protocol.ServerError, match="Unauthorized"):
            protocol.PolicyClient("127.0.0.1", srv.port, 5, api_token=token).ping()


def test_undecodable_request_gets_an_error_map(server):
    import zmq

    srv, _ = server
    sock = zmq.Context.instance().socket(zmq.REQ)
    sock.setsockopt(zmq.RCVTIMEO, 5000)
    sock.connect(f"tcp://127.0.0.1:{srv.port}")
    sock.send(b"\xc1 not msgpack")
    answer = protocol.unpack(sock.recv())
    sock.close(linger=0)
    assert "undecodable request" in answer["error"]


def test_no_server_is_a_timeout_naming_address_and_wait():
    port = free_port()
    client = protocol.PolicyClient("127.0.0.1", port, timeout_s=0.3)
    with pytest.raises(protocol.ServerTimeout, match=rf"tcp://127.0.0.1:{port} .* within 0.3 s"):
        client.ping()


# ------------------------------------------------------------------------------------------ modality adapter
def _env_terms(batch: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    quat = rng.normal(size=(batch, 4)).astype(np.float32)
    return {
        "obs/joint_pos": rng.normal(size=(batch, 9)).astype(np.float32),
        "obs/object_position": rng.normal(size=(batch, 3)).astype(np.float32),
        "obs/object_orientation": quat / np.linalg.norm(quat, axis=1, keepdims=True),
        "obs/table_cam": rng.integers(0, 255, (batch, 8, 10, 3), dtype=np.uint8),
        "obs/wrist_cam": rng.integers(0, 255, (batch, 8, 10, 3), dtype=np.uint8),
    }


@pytest.mark.parametrize("config", [CONFIG, SPLIT_CONFIG])
def test_observation_is_what_l3_writes_for_the_same_terms(config):
    adapter = ModalityAdapter(load_mapping(config))
    terms = _env_terms(3, np.random.default_rng(1))
    obs = adapter.observation(terms)
    assert set(obs) == {"video", "state", "language"}
    assert list(obs["state"]) == ["joint_pos", "object_position"]
    assert np.array_equal(obs["state"]["joint_pos"][:, 0], terms["obs/joint_pos"])
    assert obs["state"]["joint_pos"].shape == (3, 1, 9) and obs["state"]["joint_pos"].dtype == np.float32
    assert list(obs["video"]) == ["table_cam", "wrist_cam"]
    assert obs["video"]["wrist_cam"].shape == (3, 1, 8, 10, 3) and obs["video"]["wrist_cam"].dtype == np.uint8
    assert obs["language"] == {"annotation.human.action.task_description": [["Pick up the cube and lift it."]] * 3}


@pytest.mark.parametrize("config", [CONFIG, SPLIT_CONFIG])
def test_action_mapping_inverts_the_conversion_bit_exact(config):
    """The dataset's action columns (what L3 writes, ``Slice.take``) mapped back by the adapter give the L2
    file's actions, bit for bit: the split-pose quaternion goes back from (w, x, y, z) to (x, y, z, w)."""
    mapping = load_mapping(config)
    adapter = ModalityAdapter(mapping)
    adapter.check_action_layout({"actions": 8})
    actions = np.random.default_rng(2).normal(size=(5, 8)).astype(np.float32)
    chunk = {s.key: s.take(actions)[None] for s in mapping.action}  # batch 1, horizon 5
    if config == SPLIT_CONFIG:
        assert np.array_equal(chunk["ee_rotation"][0], actions[:, [6, 3, 4, 5]])
    back = adapter.env_actions(chunk, {"actions": 8}, batch=1)["actions"][0]
    assert back.dtype == np.float32 and np.array_equal(back, actions)


def test_action_keys_and_widths_that_do_not_match_are_refused():
    adapter = ModalityAdapter(load_mapping(CONFIG), where="config/lift_cube.yaml")
    good = {"ee_pose": np.zeros((2, 4, 7), np.float32), "gripper": np.zeros((2, 4, 1), np.float32)}
    assert adapter.env_actions(good, {"actions": 8}, 2)["actions"].shape == (2, 4, 8)
    with pytest.raises(
        ModalityError,
        match=r"answered action keys \['ee_pose'\], config/lift_cube.yaml expects "
        r"ee_pose \(7\), gripper \(1\)",
    ):
        adapter.env_actions({"ee_pose": good["ee_pose"]}, {"actions": 8}, 2)
    with pytest.raises(ModalityError, match=r"action.ee_pose of shape \(2, 4, 6\), expected \(2, H, 7\)"):
        adapter.env_actions({**good, "ee_pose": np.zeros((2, 4, 6), np.float32)}, {"actions": 8}, 2)
    with pytest.raises(ModalityError, match=r"action.gripper of shape \(2, 3, 1\), expected \(2, 4, 1\)"):
        adapter.env_actions({**good, "gripper": np.zeros((2, 3, 1), np.float32)}, {"actions": 8}, 2)


def test_a_mapping_that_leaves_an_action_column_out_is_refused():
    doc = {"state": {"joint_pos": "obs/joint_pos"}, "action": {"ee_pose": {"from": "actions", "slice": [0, 7]}}}
    with pytest.raises(ModalityError, match=r"column 7 of the env's actions \(8 values\) is not mapped"):
        ModalityAdapter(mapping_from_dict(doc)).check_action_layout({"actions": 8})
    doc["action"]["gripper"] = {"from": "actions", "slice": [6, 8]}
    with pytest.raises(ModalityError, match="column 6 .* is mapped twice"):
        ModalityAdapter(mapping_from_dict(doc)).check_action_layout({"actions": 8})


def test_missing_obs_term_is_named():
    adapter = ModalityAdapter(load_mapping(CONFIG), where="cfg.yaml")
    terms = _env_terms(1, np.random.default_rng(3))
    del terms["obs/wrist_cam"]
    with pytest.raises(ModalityError, match=r"cfg.yaml reads obs/wrist_cam, which the env does not observe"):
        adapter.observation(terms)


# ------------------------------------------------------------------------------------------ replay policy
@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> tuple[Path, dict[str, Path], list[np.ndarray]]:
    """A 3-demo L2 file converted with each lift-cube mapping (state only: the replay reads no video)."""
    tmp = tmp_path_factory.mktemp("replay_ds")
    l2 = make_l2_file(tmp / "scripted_lift_cube.hdf5", 3, length=20)
    out = {}
    for config in (CONFIG, SPLIT_CONFIG):
        out[config.stem] = tmp / config.stem
        convert([str(l2)], out[config.stem], config=state_only_config(tmp, config), log=lambda m: None)
    import h5py

    with h5py.File(l2) as f:
        actions = [f[f"data/demo_{i}/actions"][()] for i in range(3)]
    return l2, out, actions


@pytest.mark.parametrize("config", [CONFIG, SPLIT_CONFIG])
def test_replay_chunks_map_back_to_the_recorded_actions(datasets, config):
    _, roots, actions = datasets
    mapping = load_mapping(config)
    policy = DatasetReplayPolicy(roots[config.stem], mapping, horizon=8)
    adapter = ModalityAdapter(mapping)
    policy.reset({"episode_index": [2, 0]})
    for step in (0, 8, 16):
        chunk, info = policy.get_action(None, {"batch_size": 2, "episode_step": [step, step]})
        env = adapter.env_actions(chunk, {"actions": 8}, 2)["actions"]
        for b, episode in enumerate((2, 0)):
            rows = np.clip(np.arange(step, step + 8), 0, len(actions[episode]) - 1)  # the last one repeated
            assert np.array_equal(env[b], actions[episode][rows])
        assert info["current_step"] == [step, step]


def test_replay_without_steps_advances_like_gr00ts(datasets):
    _, roots, actions = datasets
    policy = DatasetReplayPolicy(roots["lift_cube"], load_mapping(CONFIG), horizon=4, execution_horizon=2)
    policy.reset({"episode_index": 1, "step_index": 3})
    first, _ = policy.get_action(None, {"batch_size": 3})
    second, _ = policy.get_action(None, {"batch_size": 3})
    assert np.array_equal(first["ee_pose"][0], actions[1][3:7, :7])
    assert np.array_equal(second["ee_pose"][2], actions[1][5:9, :7])  # one episode, copied to the batch


def test_replay_refuses_a_dataset_of_another_mapping(datasets):
    _, roots, _ = datasets
    with pytest.raises(
        DatasetError,
        match=r"modality.json: action keys \['ee_position', 'ee_rotation', 'gripper'\] "
        r"differ from cfg's \['ee_pose', 'gripper'\]",
    ):
        DatasetReplayPolicy(roots["lift_cube_split_pose"], load_mapping(CONFIG), where="cfg")
    with pytest.raises(DatasetError, match="no episode 7"):
        DatasetReplayPolicy(roots["lift_cube"], load_mapping(CONFIG)).reset({"episode_index": 7})


def test_serve_cli_answers_over_a_socket_and_refuses_bad_datasets(datasets, tmp_path):
    _, roots, actions = datasets
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "l2.serve",
            "replay",
            str(roots["lift_cube"]),
            "--port",
            str(port),
            "--host",
            "127.0.0.1",
            "--quiet",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert "serving replay policy" in proc.stdout.readline()
        client = protocol.PolicyClient("127.0.0.1", port, timeout_s=30)
        client.reset({"episode_index": 0})
        chunk, _ = client.get_action(None, {"batch_size": 1})
        assert np.array_equal(chunk["gripper"][0], actions[0][:16, 7:8])
        client.kill()
        assert proc.wait(30) == 0
    finally:
        proc.kill()
    bad = subprocess.run(
        [sys.executable, "-m", "l2.serve", "replay", str(roots["lift_cube_split_pose"]), "--port", str(port)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    refused_in_one_line(bad, str(roots["lift_cube_split_pose"]), "modality.json: action keys")
    missing = subprocess.run(
        [sys.executable, "-m", "l2.serve", "replay", str(tmp_path / "nope")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    refused_in_one_line(missing, str(tmp_path / "nope"))


def test_policy_source_tag_is_known():
    assert schema.source_from_filename("policy_lift_cube.hdf5") == "policy"
