"""Serve a policy over Isaac-GR00T's policy-server protocol (ZeroMQ + msgpack), for ``python -m l2.evaluate``.

``replay DATASET`` serves a GR00T LeRobot dataset's recorded actions (the test double of a GR00T server, and
a way to check a dataset end to end in the task); ``robomimic CKPT`` a robomimic checkpoint (run it with the
python of robomimic's venv, ``scripts/setup_robomimic.sh`` prints it); ``lerobot CKPT`` a checkpoint of
``lerobot-train`` (in LeRobot's venv, ``scripts/setup_lerobot.sh v30``). No Isaac Lab import: it runs in any
venv with numpy, pyarrow, h5py, PyYAML, pyzmq and msgpack (and the policy's library). Stop it with Ctrl-C or
a ``kill`` request.

Examples::

    python -m l2.serve replay outputs/lift_cube_gr00t --port 5555
    python -m l2.evaluate --policy server:localhost:5555 --reset-from data/demos/scripted_lift_cube.hdf5
    $(scripts/setup_robomimic.sh) -m l2.serve robomimic l2/lift/config/franka/policies/bc/model.pth --port 5556
    python -m l2.evaluate --policy server:localhost:5556 --config config/robomimic/lift_cube_lowdim.yaml
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from l2.format import cli_args

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG = REPO / "config" / "lift_cube.yaml"
LOWDIM_CONFIG = REPO / "config" / "robomimic" / "lift_cube_lowdim.yaml"


class ServeError(RuntimeError):
    """A policy that cannot be served, in one line."""


def _replay(args: argparse.Namespace):
    from l2.policy.replay import DatasetError, DatasetReplayPolicy
    from l3.config_file import load_mapping
    from l3.errors import ConfigError

    try:
        mapping = load_mapping(args.config) if args.config else None
        return DatasetReplayPolicy(
            Path(args.dataset), mapping, args.horizon, args.execution_horizon, where=str(args.config)
        )
    except (ConfigError, DatasetError) as exc:
        raise ServeError(str(exc)) from None


def _robomimic(args: argparse.Namespace):
    from l2.bc.robomimic_policy import CheckpointError, RobomimicPolicy
    from l3.config_file import load_mapping
    from l3.errors import ConfigError

    try:
        return RobomimicPolicy(
            Path(args.checkpoint), load_mapping(args.config), where=str(args.config), device=args.device
        )
    except (ConfigError, CheckpointError) as exc:
        raise ServeError(str(exc)) from None


def _lerobot(args: argparse.Namespace):
    from l2.bc.lerobot_policy import CheckpointError, LeRobotPolicy
    from l3.config_file import load_mapping
    from l3.errors import ConfigError

    try:
        return LeRobotPolicy(
            Path(args.checkpoint), load_mapping(args.config), where=str(args.config), device=args.device
        )
    except (ConfigError, CheckpointError) as exc:
        raise ServeError(str(exc)) from None


POLICIES = {"replay": _replay, "robomimic": _robomimic, "lerobot": _lerobot}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = cli_args.Parser(
        prog="python -m l2.serve",
        description=__doc__.split("\n\n")[0],
        epilog="examples:" + __doc__.split("Examples::")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kinds = parser.add_subparsers(dest="kind", required=True, metavar="KIND")
    replay = kinds.add_parser("replay", help="a GR00T LeRobot dataset's recorded actions")
    replay.add_argument(
        "dataset", type=cli_args.existing_folder, help="GR00T LeRobot dataset folder (l3/convert.py output)"
    )
    replay.add_argument(
        "--config",
        type=cli_args.existing_file,
        default=str(DEFAULT_CONFIG),
        help="the mapping config the dataset was converted with; its modality.json must match "
        "(default: config/lift_cube.yaml)",
    )
    replay.add_argument(
        "--horizon", type=cli_args.positive_int, default=16, help="actions per answer (default: %(default)s)"
    )
    replay.add_argument(
        "--execution-horizon",
        type=cli_args.positive_int,
        default=None,
        help="steps a client applies per answer, when it does not say which step it is at (default: --horizon)",
    )
    robomimic = kinds.add_parser("robomimic", help="a robomimic checkpoint (model_epoch_<n>.pth)")
    robomimic.add_argument("checkpoint", type=cli_args.existing_file, help="robomimic checkpoint (.pth)")
    robomimic.add_argument(
        "--config",
        type=cli_args.existing_file,
        default=str(LOWDIM_CONFIG),
        help="mapping config whose state keys are the checkpoint's observation keys and whose "
        "action keys split its action (default: config/robomimic/lift_cube_lowdim.yaml)",
    )
    robomimic.add_argument("--device", default="cpu", help="torch device (default: %(default)s)")
    lerobot = kinds.add_parser("lerobot", help="a LeRobot checkpoint of lerobot-train (ACT, Diffusion, ...)")
    lerobot.add_argument(
        "checkpoint",
        type=cli_args.existing_folder,
        help="its pretrained_model folder (or the step folder, or the run folder: the last one)",
    )
    lerobot.add_argument(
        "--config",
        type=cli_args.existing_file,
        default=str(DEFAULT_CONFIG),
        help="the mapping config its training dataset was converted with (default: config/lift_cube.yaml)",
    )
    lerobot.add_argument("--device", default="cpu", help="torch device (default: %(default)s)")
    for sub in (replay, robomimic, lerobot):
        sub.add_argument("--host", default="*", help="interface to bind (default: all)")
        sub.add_argument(
            "--port",
            type=cli_args.int_at_least(0, 65535),
            default=5555,
            help="TCP port (default: %(default)s, GR00T's; 0: any free port, printed at start)",
        )
        sub.add_argument("--api-token", default=None, help="refuse requests that do not carry this token")
        sub.add_argument("--quiet", action="store_true", help="no line per request")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    import zmq

    from l2.policy.protocol import PolicyServer

    args = parse_args(argv)
    try:
        policy = POLICIES[args.kind](args)
    except ServeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:  # robomimic and LeRobot live in venvs of their own
        venv = {"replay": "", "robomimic": "scripts/setup_robomimic.sh", "lerobot": "scripts/setup_lerobot.sh"}
        print(
            f"error: {args.kind} policies need {exc.name}, which {sys.executable} lacks: run the server with the "
            f"python of the venv {venv[args.kind]} builds",
            file=sys.stderr,
        )
        return 2
    try:
        server = PolicyServer(
            policy, args.host, args.port, args.api_token, on_request=None if args.quiet else _counter()
        )
    except zmq.ZMQError as exc:
        print(f"error: cannot listen on tcp://{args.host}:{args.port}: {exc}", file=sys.stderr)
        return 2
    print(f"serving {args.kind} policy on tcp://{args.host}:{server.port} (Ctrl-C stops)", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    print("server stopped", flush=True)
    return 0


def _counter():
    counts: dict[str, int] = {}

    def on_request(endpoint: str) -> None:
        counts[endpoint] = counts.get(endpoint, 0) + 1
        if endpoint != "get_action" or counts[endpoint] % 100 == 1:
            print(f"{endpoint} #{counts[endpoint]}", flush=True)

    return on_request


if __name__ == "__main__":
    sys.exit(main())
