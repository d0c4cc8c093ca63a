"""Ship a BC run as the repository's policy: its last checkpoint and what it was trained and is served with.

Writes ``model.pth`` (robomimic's checkpoint of the last epoch), ``config.json`` (the recipe as run),
``summary.json``, ``learning_curve.png`` and the mapping it is served with, into ``--to`` (by default
``l2/bc/checkpoints/lift_cube_bc/``). Paths of the training machine (the demo file, robomimic's output folder)
are written relative to the repository, in the copied files and inside the checkpoint's own config.

Examples::

    python -m l2.bc.ship logs/bc/bc_200
    python -m l2.bc.ship logs/bc/my_run --to /tmp/my_policy
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from l2.bc.train import MAPPING, shown

SHIPPED = Path(__file__).resolve().parent / "checkpoints" / "lift_cube_bc"
SHIPPED_MODEL = SHIPPED / "model.pth"


def _relative_paths(config: dict) -> dict:
    train = config["train"]
    for key in ("data", "output_dir"):
        if train.get(key):
            train[key] = shown(Path(train[key]))
    return config


def ship(run: Path, target: Path) -> Path:
    import torch

    summary = json.loads((run / "summary.json").read_text())
    checkpoint = torch.load(
        run / "models" / f"model_epoch_{summary['epochs']}.pth", map_location="cpu", weights_only=False
    )
    checkpoint["config"] = json.dumps(_relative_paths(json.loads(checkpoint["config"])), indent=4)
    target.mkdir(parents=True, exist_ok=True)
    torch.save(checkpoint, target / "model.pth")
    config = _relative_paths(json.loads((run / "config.json").read_text()))
    (target / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    summary["checkpoint"], summary["data"] = shown(target / "model.pth"), shown(Path(summary["data"]))
    (target / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    shutil.copy(run / "learning_curve.png", target / "learning_curve.png")
    shutil.copy(MAPPING, target / MAPPING.name)
    return target / "model.pth"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m l2.bc.ship",
        description=__doc__.split("\n\n")[0],
        epilog="examples:" + __doc__.split("Examples::")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run", type=Path, help="run folder of python -m l2.bc.train (logs/bc/<name>)")
    parser.add_argument("--to", type=Path, default=SHIPPED, help="folder to write (default: the shipped policy)")
    args = parser.parse_args(argv)
    if not (args.run / "summary.json").is_file():
        print(f"error: {args.run}: no summary.json (not a finished run of python -m l2.bc.train)", file=sys.stderr)
        return 2
    print(f"shipped {shown(ship(args.run, args.to))} from {shown(args.run)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
