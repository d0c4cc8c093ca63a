"""A BC run's learning curve: robomimic's training and validation loss per epoch (its TensorBoard logs) and
the closed-loop success of the saved checkpoints, with 95 % Wilson intervals.

Examples::

    python -m l2.bc.plot logs/bc/bc_200
    python -m l2.bc.plot logs/bc/bc_200 --output docs/img/bc_learning_curve.png
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from l2.format import atomic
from l2.format.cli_args import Parser, existing_folder, output_file
from l2.format.l2file import one_line
from l2.policy.report import wilson_interval
from l2.rl.plot import read_scalars

TRAIN_LOSS, VALID_LOSS = "Train/Loss", "Valid/Loss"


def algorithm(config: dict) -> str:
    """What a robomimic config trains, in words: ``BC-RNN`` or ``BC (MLP)``."""
    return "BC-RNN" if config["algo"].get("rnn", {}).get("enabled") else "BC (MLP)"


def plot_run(
    logs: Path, rollouts: dict[int, tuple[int, int]], output: Path, title: str, steps_per_epoch: int | None = None
) -> Path:
    """Draw the curve of a run: ``logs`` is robomimic's log folder, ``rollouts`` ``{epoch: (successes, episodes)}``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    losses = read_scalars(logs / "tb", (TRAIN_LOSS, VALID_LOSS))
    if not losses[TRAIN_LOSS][0]:
        raise ValueError(f"{logs}: no TensorBoard scalars '{TRAIN_LOSS}' (is it a robomimic run's logs folder?)")
    fig, axes = plt.subplots(2, 1, figsize=(7, 5.5), sharex=True)
    for tag, label, color in ((TRAIN_LOSS, "training", "tab:blue"), (VALID_LOSS, "validation", "tab:orange")):
        epochs, values = losses[tag]
        if epochs:
            axes[0].plot(epochs, values, label=label, color=color)
    axes[0].set_yscale("log")
    axes[0].set_ylabel("loss (MSE of the action)")
    axes[0].legend(loc="upper right")
    if rollouts:
        epochs = sorted(rollouts)
        rates = [rollouts[e][0] / rollouts[e][1] for e in epochs]
        bounds = [wilson_interval(*rollouts[e]) for e in epochs]
        errors = [
            [r - lo for r, (lo, _) in zip(rates, bounds, strict=True)],
            [hi - r for r, (_, hi) in zip(rates, bounds, strict=True)],
        ]
        axes[1].errorbar(epochs, rates, yerr=errors, marker="o", capsize=3, color="tab:green")
        for e, rate in zip(epochs, rates, strict=True):
            axes[1].annotate(
                f"{rollouts[e][0]}/{rollouts[e][1]}",
                (e, rate),
                textcoords="offset points",
                xytext=(0, 7),
                ha="center",
                fontsize=8,
            )
    axes[1].set_ylim(-0.02, 1.08)
    axes[1].set_ylabel("closed-loop success")
    axes[1].set_xlabel(f"epoch ({steps_per_epoch} gradient steps each)" if steps_per_epoch else "epoch")
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    with atomic.replacing(output) as tmp:  # whole or not at all
        fig.savefig(tmp, dpi=90, format="png")
    plt.close(fig)
    return output


def _json_object(path: Path) -> dict:
    """The JSON object in ``path``; ValueError naming the file when it is not one."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:  # not JSON, or not UTF-8
        raise ValueError(f"{path}: not a JSON file ({exc})") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return doc


def read_run(run: Path) -> tuple[dict, dict, dict[int, tuple[int, int]]]:
    """``(summary, config, rollouts)`` of a run folder of ``python -m l2.bc.train``; ValueError naming the file and
    the field that is missing or of the wrong type."""
    summary, config = _json_object(run / "summary.json"), _json_object(run / "config.json")

    def bad(path: str, field: str, what: str) -> ValueError:
        return ValueError(f"{run / path}: {field}: expected {what}")

    rollouts = summary.get("rollouts", {})
    if not isinstance(rollouts, dict):
        raise bad("summary.json", "rollouts", "{epoch: [successes, episodes]}")
    out: dict[int, tuple[int, int]] = {}
    for epoch, counts in rollouts.items():
        if not (
            epoch.isdigit()
            and isinstance(counts, list)
            and len(counts) == 2
            and all(isinstance(n, int) and not isinstance(n, bool) for n in counts)
            and 0 <= counts[0] <= counts[1]
            and counts[1] > 0
        ):
            raise bad("summary.json", f"rollouts.{epoch}", "[successes, episodes] with 0 <= successes <= episodes")
        out[int(epoch)] = (counts[0], counts[1])
    if not isinstance(summary.get("num_demos"), int) or not isinstance(summary.get("name"), str):
        raise bad("summary.json", "num_demos, name", "an integer and a name")
    experiment, algo = config.get("experiment"), config.get("algo")
    if not isinstance(experiment, dict) or not isinstance(experiment.get("epoch_every_n_steps"), (int, type(None))):
        raise bad("config.json", "experiment.epoch_every_n_steps", "an integer")
    if not isinstance(algo, dict) or not isinstance(algo.get("rnn", {}), dict):
        raise bad("config.json", "algo", "robomimic's algo section (an object)")
    return summary, config, out


def main(argv: list[str] | None = None) -> int:
    parser = Parser(
        prog="python -m l2.bc.plot",
        description=__doc__.split("\n\n")[0],
        epilog="examples:" + __doc__.split("Examples::")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run", type=existing_folder, help="run folder of python -m l2.bc.train (logs/bc/<name>)")
    parser.add_argument(
        "--output", type=output_file, default=None, help="PNG to write (default: RUN/learning_curve.png)"
    )
    args = parser.parse_args(argv)
    run = Path(args.run)
    output = Path(args.output) if args.output else run / "learning_curve.png"
    try:
        summary, config, rollouts = read_run(run)
        path = plot_run(
            run / "logs",
            rollouts,
            output,
            title=f"{algorithm(config)} on {summary['num_demos']} demos ({summary['name']})",
            steps_per_epoch=config["experiment"].get("epoch_every_n_steps"),
        )
    except ValueError as exc:
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {atomic.io_error_line(exc, output, 'no picture written')}", file=sys.stderr)
        return 2
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
