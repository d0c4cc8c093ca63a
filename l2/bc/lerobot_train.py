"""Train a LeRobot policy (ACT by default) on a GR00T LeRobot dataset converted with ``--codebase-version
v3.0``, with LeRobot 0.6.1's own ``lerobot-train`` in its venv: offline, on the CPU unless told otherwise.

The run folder is lerobot-train's (``checkpoints/<step>/pretrained_model``, ``checkpoints/last``); serve a
checkpoint with ``python -m l2.serve lerobot RUN`` (in the same venv) and evaluate it with ``python -m
l2.evaluate --policy server:HOST:PORT``. The loss is printed every ``--log-every`` steps (``loss:<value>``).

Examples::

    python l3/convert.py data/demos --output outputs/lift_cube_v30 --codebase-version v3.0
    python -m l2.bc.lerobot_train outputs/lift_cube_v30 --output logs/act/cpu --steps 300
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from l2.format import cli_args
from l2.recording.sim import device_arg

REPO = Path(__file__).resolve().parents[2]


def command(python: str, dataset: Path, output: Path, args: argparse.Namespace) -> list[str]:
    """lerobot-train's command line for a local v3.0 dataset (no hub, no download, no wandb)."""
    return [
        python,
        "-m",
        "lerobot.scripts.lerobot_train",
        f"--dataset.repo_id=local/{dataset.name}",
        f"--dataset.root={dataset.resolve()}",
        "--dataset.video_backend=pyav",
        f"--policy.type={args.policy}",
        f"--policy.device={args.device}",
        "--policy.push_to_hub=false",
        *(["--policy.pretrained_backbone_weights=null"] if args.policy in ("act", "diffusion") else []),
        f"--steps={args.steps}",
        f"--batch_size={args.batch_size}",
        f"--save_freq={args.save_every or args.steps}",
        f"--log_freq={args.log_every}",
        f"--num_workers={args.num_workers}",
        f"--seed={args.seed}",
        f"--output_dir={output.resolve()}",
        "--wandb.enable=false",
    ]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = cli_args.Parser(
        prog="python -m l2.bc.lerobot_train",
        description=__doc__.split("\n\n")[0],
        epilog="examples:" + __doc__.split("Examples::")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "dataset",
        type=cli_args.existing_folder,
        help="GR00T LeRobot dataset in LeRobot v3.0 (l3/convert.py --codebase-version v3.0)",
    )
    p.add_argument("--output", type=cli_args.output_folder, required=True, help="run folder to create (must not exist)")
    p.add_argument("--policy", default="act", help="LeRobot policy type: act, diffusion, ... (default: act)")
    p.add_argument("--steps", type=cli_args.positive_int, default=300, help="training steps (default: %(default)s)")
    p.add_argument("--batch-size", type=cli_args.positive_int, default=8, help="(default: %(default)s)")
    p.add_argument(
        "--log-every",
        type=cli_args.positive_int,
        default=25,
        help="print the loss every N steps (default: %(default)s)",
    )
    p.add_argument(
        "--save-every", type=cli_args.positive_int, default=None, help="checkpoint every N steps (default: at the end)"
    )
    p.add_argument(
        "--num-workers", type=cli_args.non_negative_int, default=0, help="data loader workers (default: %(default)s)"
    )
    p.add_argument("--seed", type=cli_args.seed, default=1000, help="(default: %(default)s)")
    p.add_argument("--device", type=device_arg, default="cpu", help="cpu or cuda (default: %(default)s)")
    p.add_argument(
        "--lerobot-python",
        default=None,
        help="python of LeRobot 0.6.1's venv (default: built or found by scripts/setup_lerobot.sh v30)",
    )
    args = p.parse_args(argv)
    args.dataset, args.output = Path(args.dataset), Path(args.output)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not (args.dataset / "meta" / "info.json").is_file():
        print(f"error: {args.dataset}: not a LeRobot dataset (no meta/info.json)", file=sys.stderr)
        return 2
    if args.output.exists():
        print(f"error: {args.output} exists (lerobot-train starts a run in a new folder)", file=sys.stderr)
        return 2
    python = (
        args.lerobot_python
        or subprocess.run(
            ["bash", str(REPO / "scripts" / "setup_lerobot.sh"), "v30"], capture_output=True, text=True, check=True
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    cmd = command(python, args.dataset, args.output, args)
    print("$ " + " ".join(cmd), flush=True)
    # Offline: the dataset is local, and no model weights are fetched (the backbone starts from scratch).
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "WANDB_MODE": "disabled", "PYTHONPATH": ""}
    return subprocess.run(cmd, env=env, cwd=REPO).returncode


if __name__ == "__main__":
    sys.exit(main())
