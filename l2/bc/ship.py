"""Ship a BC run as the repository's policy: its last checkpoint and what it was trained and is served with.

Writes ``model.pth`` (robomimic's checkpoint of the last epoch), ``config.json`` (the recipe as run),
``summary.json``, ``learning_curve.png`` and the mapping it is served with, into ``--to`` (by default the folder
the run's task registration names as its shipped BC policy, ``bc_policy``: ``l2/lift/config/<robot>/policies/bc/``).
Paths of the training machine (the demo file, robomimic's output folder) are written relative to the repository,
in the copied files and inside the checkpoint's own config.

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

from l2.bc.train import DEFAULT_TASK, TrainError, bc_mapping, shown
from l2.format import atomic, cli_args
from l2.lift.config import franka

SHIPPED = franka.BC_POLICY.parent
"""The Franka's shipped BC policy."""
POLICY_KWARG = "bc_policy"
"""The gym registration kwarg naming a task's shipped BC checkpoint (``model.pth``)."""


def shipped_model(task: str) -> Path:
    """The BC checkpoint shipped for ``task`` (its registration's :data:`POLICY_KWARG`), else the Franka's."""
    import gymnasium as gym

    from l2.recording import sim

    sim.register_tasks()
    spec = gym.registry.get(task)
    return Path(spec.kwargs[POLICY_KWARG]) if spec and POLICY_KWARG in spec.kwargs else SHIPPED / "model.pth"


def _relative_paths(config: dict) -> dict:
    train = config["train"]
    for key in ("data", "output_dir"):
        if train.get(key):
            train[key] = shown(Path(train[key]))
    return config


RUN_FILES = ("summary.json", "config.json", "learning_curve.png")
"""What a finished run of ``python -m l2.bc.train`` holds besides its checkpoints."""


class ShipError(Exception):
    """A run that cannot be shipped (one line: the file and what is wrong)."""


def _checkpoint_path(run: Path) -> Path:
    """The last epoch's checkpoint of a finished run; :class:`ShipError` when a file is missing or unreadable."""
    for name in RUN_FILES:
        if not (run / name).is_file():
            raise ShipError(f"{run / name}: missing (not a finished run of python -m l2.bc.train)")
    try:
        epochs = int(json.loads((run / "summary.json").read_text())["epochs"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ShipError(f"{run / 'summary.json'}: no epoch count ({type(exc).__name__}: {exc})") from None
    path = run / "models" / f"model_epoch_{epochs}.pth"
    if not path.is_file():
        raise ShipError(f"{path}: missing (the run's last epoch, by its summary.json)")
    return path


def run_task(run: Path) -> str:
    """The task a run trained for (summaries written before ``--task`` existed: the Franka's)."""
    return json.loads((run / "summary.json").read_text()).get("task", DEFAULT_TASK)


def ship(run: Path, target: Path) -> Path:
    """Write the run's policy into ``target``, whole: built in a folder beside it and renamed into place, so a
    failure leaves the folder that was there (:class:`ShipError` for a run that is not finished)."""
    import torch

    source = _checkpoint_path(run)
    try:
        mapping = bc_mapping(run_task(run))
    except TrainError as exc:
        raise ShipError(f"{run / 'summary.json'}: {exc}") from None
    try:
        checkpoint = torch.load(source, map_location="cpu", weights_only=False)
        checkpoint["config"] = json.dumps(_relative_paths(json.loads(checkpoint["config"])), indent=4)
        config = _relative_paths(json.loads((run / "config.json").read_text()))
    except Exception as exc:  # noqa: BLE001  (unpickling and JSON raise anything on a file that is not theirs)
        raise ShipError(f"{source}: not a robomimic checkpoint of this run ({type(exc).__name__})") from None
    summary = json.loads((run / "summary.json").read_text())
    summary["checkpoint"], summary["data"] = shown(target / "model.pth"), shown(Path(summary["data"]))
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic.replacing(target) as tmp:
        tmp.mkdir()
        torch.save(checkpoint, tmp / "model.pth")
        (tmp / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        (tmp / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        shutil.copy(run / "learning_curve.png", tmp / "learning_curve.png")
        shutil.copy(mapping, tmp / mapping.name)
    return target / "model.pth"


def main(argv: list[str] | None = None) -> int:
    parser = cli_args.Parser(
        prog="python -m l2.bc.ship",
        description=__doc__.split("\n\n")[0],
        epilog="examples:" + __doc__.split("Examples::")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "run", type=cli_args.existing_folder, help="run folder of python -m l2.bc.train (logs/bc/<name>)"
    )
    parser.add_argument(
        "--to",
        type=cli_args.output_folder,
        default=None,
        help="folder to write (default: the run's task's shipped BC policy)",
    )
    args = parser.parse_args(argv)
    run = Path(args.run)
    try:
        target = Path(args.to) if args.to else shipped_model(run_task(run)).parent
        print(f"shipped {shown(ship(run, target))} from {shown(run)}")
    except ShipError as exc:
        cli_args.fail(str(exc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
