"""What the policy-server protocol costs an evaluation: the round trip of one ``get_action`` against a bare ZeroMQ
echo of the same bytes (baseline), and as a share of the simulation step with both cameras.

A ``get_action`` carries a GR00T observation of B envs (both cameras at --image-size, the state keys and the
instruction of config/lift_cube.yaml, built by the same adapter ``l2.evaluate`` uses) to a server in another
process, whose policy answers a zero chunk of 16 actions; the baseline sends the very request bytes and gets
the very answer bytes back with no encoding or decoding on either side. Both run side by side, interleaved,
and the medians are compared. The simulation step is timed in the lift task with both cameras on. Last, with no
server at all: how long a client's ``ping`` takes to give up (its timeout 0.3 s), and how long
``python -m l2.evaluate`` takes to refuse that address in one line (``--timeout 1``, before any simulator).

    python bench/policy_protocol.py                               # B = 1 and 16, 224 x 224, 16-env sim step
    python bench/policy_protocol.py --batches 1 --image-size 32 --repeats 5 --sim-envs 1 --sim-steps 2  # smoke
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "config" / "lift_cube.yaml"
HORIZON = 16
NO_SERVER_TIMEOUT = 0.3
"""The client's timeout in the no-server measurement (seconds)."""


class ZeroChunk:
    """A policy answering zeros for every action key of the config (the cost of a model is not measured)."""

    def __init__(self):
        from l2.policy.modality import ModalityAdapter
        from l3.config_file import load_mapping

        self.widths = ModalityAdapter(load_mapping(CONFIG)).action_widths()

    def get_action(self, observation, options=None):
        batch = next(iter(observation["video"].values())).shape[0]
        return {k: np.zeros((batch, HORIZON, w), np.float32) for k, w in self.widths.items()}, {}

    def reset(self, options=None):
        return {}

    def get_modality_config(self):
        return {}


def serve(mode: str, port: int) -> None:
    """Run in the server process: the protocol server, or the bare echo (``echo``: answer ``answer.bin``)."""
    if mode == "protocol":
        from l2.policy.protocol import PolicyServer

        PolicyServer(ZeroChunk(), "127.0.0.1", port).serve_forever()
        return
    import zmq

    sock = zmq.Context.instance().socket(zmq.REP)
    sock.bind(f"tcp://127.0.0.1:{port}")
    answers: dict[int, bytes] = {}
    while True:
        message = sock.recv()
        if message == b"stop":
            sock.send(b"")
            return
        if message.startswith(b"answer:"):  # the answer bytes of a batch size, sent once before timing
            batch, payload = message[7:].split(b":", 1)
            answers[int(batch)] = payload
            sock.send(b"")
            continue
        sock.send(answers[int(message[:4])])  # the request bytes, prefixed with the batch size


def observation(batch: int, size: int, rng: np.random.Generator) -> dict:
    from l2.policy.modality import ModalityAdapter
    from l3.config_file import load_mapping

    terms = {
        "obs/joint_pos": rng.normal(size=(batch, 9)).astype(np.float32),
        "obs/object_position": rng.normal(size=(batch, 3)).astype(np.float32),
    }
    for cam in ("table_cam", "wrist_cam"):  # rendered-looking frames: smooth, not noise (same bytes either way)
        terms[f"obs/{cam}"] = rng.integers(0, 255, (batch, size, size, 3), dtype=np.uint8)
    return ModalityAdapter(load_mapping(CONFIG)).observation(terms)


def _start(mode: str, port: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, __file__, "--serve", mode, str(port)], cwd=REPO)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def round_trips(batch: int, size: int, repeats: int) -> tuple[float, float, int]:
    """Median seconds of a protocol ``get_action`` and of the echo of the same bytes, and the request's size."""
    import zmq

    from l2.policy.protocol import PolicyClient, pack

    obs = observation(batch, size, np.random.default_rng(batch))
    ports = {"protocol": _free_port(), "echo": _free_port()}
    servers = [_start(mode, port) for mode, port in ports.items()]
    try:
        client = PolicyClient("127.0.0.1", ports["protocol"], timeout_s=60)
        client.ping()
        options = {"episode_step": [0] * batch}
        request = pack({"endpoint": "get_action", "data": {"observation": obs, "options": options}})
        answer = pack([ZeroChunk().get_action(obs)[0], {}])
        echo = zmq.Context.instance().socket(zmq.REQ)
        echo.setsockopt(zmq.RCVTIMEO, 60000)
        echo.connect(f"tcp://127.0.0.1:{ports['echo']}")
        echo.send(b"answer:%d:" % batch + answer)
        echo.recv()
        prefixed = b"%04d" % batch + request
        ours, bare = [], []
        for _ in range(repeats + 1):  # interleaved; the first of each is a warm-up
            start = time.perf_counter()
            client.get_action(obs, {"episode_step": [0] * batch})
            ours.append(time.perf_counter() - start)
            start = time.perf_counter()
            echo.send(prefixed)
            echo.recv()
            bare.append(time.perf_counter() - start)
        client.kill()
        echo.send(b"stop")
        echo.recv()
        echo.close(linger=0)
    finally:
        for server in servers:
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
    return statistics.median(ours[1:]), statistics.median(bare[1:]), len(request)


def sim_step(num_envs: int, steps: int, size: int) -> float:
    """Median seconds of one env step of the lift task with both cameras at ``size`` (a hold action)."""
    code = f"""
import statistics, time, torch
from l2.recording import sim
cams = [f"env.scene.{{c}}.{{s}}={size}" for c in ("table_cam", "wrist_cam") for s in ("height", "width")]
cfg = sim.load_env_cfg(sim.DEFAULT_TASK, "cpu", {num_envs}, 0, cams)
with sim.make_env(cfg, sim.DEFAULT_TASK) as env:
    env.reset()
    hold = torch.tensor([[0.45, 0.0, 0.35, 1.0, 0.0, 0.0, 0.0, 1.0]]).repeat(env.num_envs, 1)
    times = []
    for _ in range({steps} + 1):
        start = time.perf_counter()
        env.step(hold)
        times.append(time.perf_counter() - start)
print("STEP", statistics.median(times[1:]))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=1800)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("STEP ")), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"sim step measurement failed: {proc.stderr[-2000:]}")
    return float(line.split()[1])


def no_server(timeout_s: float = NO_SERVER_TIMEOUT) -> tuple[float, float]:
    """Seconds until a client's ``ping`` to a port nothing listens on gives up, and until ``python -m l2.evaluate``
    refuses that address (``--timeout 1``) with its one line, before any simulator."""
    from l2.policy.protocol import PolicyClient, ServerTimeout

    port = _free_port()
    client = PolicyClient("127.0.0.1", port, timeout_s=timeout_s)
    start = time.perf_counter()
    try:
        client.ping()
    except ServerTimeout:
        ping = time.perf_counter() - start
    else:
        raise RuntimeError(f"something answered a ping on port {port}")
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "l2.evaluate", "--policy", f"server:127.0.0.1:{port}", "--timeout", "1"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    refused = time.perf_counter() - start
    if proc.returncode != 2 or "evaluating" in proc.stdout or "within 1 s" not in proc.stderr:
        raise RuntimeError(f"l2.evaluate did not refuse the address in one line: {proc.stderr[-2000:]}")
    return ping, refused


def main(argv: list[str] | None = None) -> int:
    from l2.format import cli_args

    p = cli_args.Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batches", default="1,16", help="batch sizes B (default: %(default)s)")
    p.add_argument("--image-size", type=int, default=224, help="camera height = width (default: %(default)s)")
    p.add_argument("--repeats", type=int, default=200, help="round trips per measurement (default: %(default)s)")
    p.add_argument("--sim-envs", type=int, default=16, help="envs of the timed simulation step (default: 16)")
    p.add_argument("--sim-steps", type=int, default=10, help="timed simulation steps (0: skip; default: 10)")
    p.add_argument("--serve", nargs=2, metavar=("MODE", "PORT"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve:
        serve(args.serve[0], int(args.serve[1]))
        return 0
    batches = [int(b) for b in args.batches.split(",")]
    step = sim_step(args.sim_envs, args.sim_steps, args.image_size) if args.sim_steps else None
    size = args.image_size
    print(
        f"policy protocol: get_action round trip, both cameras {size}x{size}, chunk of {HORIZON}; "
        f"baseline = bare ZeroMQ echo of the same bytes (median of {args.repeats})"
    )
    print(f"  {'B':>3}  {'request':>9}  {'protocol':>9}  {'echo':>8}  {'ratio':>6}  {'share of sim step':>18}")
    for batch in batches:
        ours, bare, nbytes = round_trips(batch, size, args.repeats)
        share = f"{100 * ours / step:.1f} %" if step and batch == args.sim_envs else "-"
        print(
            f"  {batch:>3}  {nbytes / 1e6:>7.2f}MB  {1000 * ours:>7.2f}ms  {1000 * bare:>6.2f}ms  "
            f"{ours / bare:>5.2f}x  {share:>18}"
        )
    if step:
        print(
            f"simulation step: {1000 * step:.0f} ms ({args.sim_envs} envs, both cameras {size}x{size}, cpu); "
            f"targets: ratio <= 1.5x, share <= 10 %"
        )
    ping, refused = no_server()
    print(
        f"no server: ping gives up after {ping:.2f} s (timeout {NO_SERVER_TIMEOUT} s); python -m l2.evaluate refuses "
        f"the address in {refused:.1f} s (--timeout 1, before any simulator); "
        f"targets: ping <= timeout + 0.1 s, refusal <= 10 s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
