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
    fig.savefig(output, dpi=90)
    plt.close(fig)
    return output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m l2.bc.plot",
        description=__doc__.split("\n\n")[0],
        epilog="examples:" + __doc__.split("Examples::")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run", type=Path, help="run folder of python -m l2.bc.train (logs/bc/<name>)")
    parser.add_argument("--output", type=Path, default=None, help="PNG to write (default: RUN/learning_curve.png)")
    args = parser.parse_args(argv)
    try:
        summary = json.loads((args.run / "summary.json").read_text())
        config = json.loads((args.run / "config.json").read_text())
        rollouts = {int(k): tuple(v) for k, v in summary.get("rollouts", {}).items()}
        path = plot_run(
            args.run / "logs",
            rollouts,
            args.output or args.run / "learning_curve.png",
            title=f"{algorithm(config)} on {summary['num_demos']} demos ({summary['name']})",
            steps_per_epoch=config["experiment"]["epoch_every_n_steps"],
        )
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
