"""Plot a PPO run's learning curve from its rsl_rl TensorBoard logs: success rate and mean reward per iteration.

The success rate is Isaac Lab's ``Episode_Termination/success``: the share of envs whose last finished
episode ended with the cube lifted and held. Iterations where the actor was frozen to fit the critic
(``--critic_warmup`` of ``l2/rl/train.py``, read from the run's ``params/train.yaml``) are shaded.

Examples::

    python -m l2.rl.plot logs/rl/cpu_seed42
    python -m l2.rl.plot logs/rl/cpu_seed42 --output docs/img/rl_learning_curve.png
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from l2.format import atomic
from l2.format.cli_args import Parser, existing_folder, output_file
from l2.format.l2file import one_line

SUCCESS_TAG = "Episode_Termination/success"
REWARD_TAG = "Train/mean_reward"


def read_scalars(run: Path, tags: tuple[str, ...]) -> dict[str, tuple[list[int], list[float]]]:
    """``{tag: (iterations, values)}`` from every TensorBoard event file of ``run`` (later files win)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    series: dict[str, dict[int, float]] = {tag: {} for tag in tags}
    for events in sorted(run.glob("events.out.tfevents.*")):
        acc = EventAccumulator(str(events), size_guidance={"scalars": 0})
        acc.Reload()
        for tag in tags:
            if tag in acc.Tags()["scalars"]:
                series[tag].update({e.step: e.value for e in acc.Scalars(tag)})
    return {tag: (sorted(s), [s[k] for k in sorted(s)]) for tag, s in series.items()}


def critic_warmup(run: Path) -> int:
    """The run's ``--critic_warmup`` iterations, from its ``params/train.yaml`` (0 without one); ValueError naming the
    file when it is not a YAML mapping with a non-negative integer there."""
    import yaml

    path = run / "params" / "train.yaml"
    if not path.is_file():
        return 0
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        raise ValueError(
            f"{path}: not a YAML file ({one_line(str(exc).splitlines()[0] if str(exc) else '')})"
        ) from None
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: expected a YAML mapping of the run's parameters")
    warmup = doc.get("critic_warmup", 0)
    if not isinstance(warmup, int) or isinstance(warmup, bool) or warmup < 0:
        raise ValueError(f"{path}: critic_warmup: expected an integer >= 0, got {warmup!r}")
    return warmup


def plot(run: Path, output: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = read_scalars(run, (SUCCESS_TAG, REWARD_TAG))
    if not data[SUCCESS_TAG][0]:
        raise ValueError(f"{run}: no TensorBoard scalars '{SUCCESS_TAG}' (is it a run folder of l2/rl/train.py?)")
    warmup = critic_warmup(run)
    fig, axes = plt.subplots(2, 1, figsize=(7, 5.5), sharex=True)
    for ax, tag, label in ((axes[0], SUCCESS_TAG, "success rate"), (axes[1], REWARD_TAG, "mean episode reward")):
        its, values = data[tag]
        ax.plot(its, values, color="tab:blue" if tag == SUCCESS_TAG else "tab:orange")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        if warmup:
            ax.axvspan(0, warmup, color="0.85", label="critic warm-up (actor frozen)")
    axes[0].set_ylim(-0.02, 1.02)
    if warmup:
        axes[0].legend(loc="lower right")
    axes[1].set_xlabel("PPO iteration")
    fig.suptitle(f"PPO on the lift-cube task: {run.name}")
    fig.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    with atomic.replacing(output) as tmp:  # whole or not at all
        fig.savefig(tmp, dpi=90, format="png")
    plt.close(fig)
    return output


def main(argv: list[str] | None = None) -> int:
    parser = Parser(
        prog="python -m l2.rl.plot",
        description=__doc__.split("\n\n")[0],
        epilog="examples:" + __doc__.split("Examples::")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run", type=existing_folder, help="run folder of l2/rl/train.py (logs/rl/<run>)")
    parser.add_argument(
        "--output", type=output_file, default=None, help="PNG to write (default: RUN/learning_curve.png)"
    )
    args = parser.parse_args(argv)
    run = Path(args.run)
    output = Path(args.output) if args.output else run / "learning_curve.png"
    try:
        path = plot(run, output)
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
