"""Behaviour cloning on the collected demos, end to end on the CPU: collect (if missing), split, train with
robomimic's own trainer, serve the checkpoint over the policy-server protocol and evaluate it in the task.

``--task`` is the gym id the policy acts in (the Franka's IK-absolute lift by default); its registration names the
mapping config of what the policy observes and how its action is laid out (``bc_mapping``).

1. Demos: the first N of ``--data`` (an L2 file; by default ``data/bc/scripted_<the mapping's name>.hdf5``).
   Missing ones are collected from the task's scripted variant (``<task>-Scripted``) with every core
   (``python -m l2.distributed``, state only, the arm's start pose varied) and merged into it.
2. ``python -m l2.tools.split --first N``: ``mask/train_<N>`` / ``mask/valid_<N>`` (10 % valid) in that file.
3. robomimic 0.3.0 trains ``config/robomimic/bc_lift_lowdim.json`` (BC, an MLP) on it, in robomimic's venv;
   actions outside [-1, 1] (joint targets) are scaled into it for training and back when served
   (``l2/bc/action_scale.py``).
4. Each saved checkpoint is served (``python -m l2.serve robomimic``) and evaluated in the task for
   ``--checkpoint-episodes`` episodes, the last one for ``--episodes`` (``python -m l2.evaluate``, cube poses from
   the task's own distribution, seed 1000: not the demos' initial states).
5. ``<run>/summary.json`` (time, success with its 95 % interval) and ``<run>/learning_curve.png``.

Examples::

    scripts/train_bc.sh                                  # 200 scripted demos, the shipped policy's recipe
    scripts/train_bc.sh --num_demos 25 --name n25        # one point of the data-scaling table
    scripts/train_bc.sh --task L2-Lift-Cube-SO101-JointPos --name so101_bc_200   # the SO-101's
    python -m l2.bc.train --data data/bc/mix_lift_cube.hdf5 --num_demos 100 --name mix100
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import h5py

from l2.format import cli_args

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "config" / "robomimic" / "bc_lift_lowdim.json"
DEFAULT_TASK = "L2-Lift-Cube-Franka-IK-Abs"
MAPPING_KWARG = "bc_mapping"
"""The gym registration kwarg naming a task's BC mapping config."""
EVAL_SEED = 1000
"""Evaluation episodes draw their cube poses with this seed (the collections use others)."""


class TrainError(RuntimeError):
    """A stage that failed, in one line."""


def _run(cmd: list[str], log: Path | None = None, **kwargs) -> str:
    """Run a stage; its output goes to the terminal (and ``log``); TrainError when it fails."""
    print("$ " + " ".join(str(c) for c in cmd), flush=True)
    proc = subprocess.Popen(
        [str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO, **kwargs
    )
    lines = []
    with open(log, "a") if log else open("/dev/null", "w") as sink:
        for line in proc.stdout:
            lines.append(line)
            sink.write(line)
            if log is None or "Epoch" in line or "error" in line.lower():
                sys.stdout.write(line)
    if proc.wait() != 0:
        raise TrainError(
            f"{cmd[0]} {' '.join(map(str, cmd[1:3]))} ... failed (exit {proc.returncode}): "
            f"{lines[-1].strip() if lines else 'no output'}"
        )
    return "".join(lines)


def demo_count(path: Path) -> int:
    if not path.is_file():
        return 0
    from l2.format.l2file import L2File

    with L2File(path) as f:
        return len(f.demos)


COLLECT_PRESETS = "presets=no_cameras,varied_start"
"""State only, the arm's start pose drawn around home: demos that cover the states next to the expert's path
(docs/train.md says why)."""


def bc_mapping(task: str) -> Path:
    """The BC mapping config ``task``'s registration names (:data:`MAPPING_KWARG`); TrainError when none."""
    import gymnasium as gym

    from l2.recording import sim

    sim.register_tasks()
    spec = gym.registry.get(task)
    if spec is None or MAPPING_KWARG not in spec.kwargs:
        with_bc = sorted(t for t, s in gym.registry.items() if MAPPING_KWARG in s.kwargs)
        raise TrainError(
            f"--task {task}: {'no such task' if spec is None else 'its registration names no BC mapping'} "
            f"(tasks with one: {', '.join(with_bc)})"
        )
    return Path(spec.kwargs[MAPPING_KWARG])


def default_data(mapping: Path) -> Path:
    """``data/bc/scripted_<the mapping's name, less _lowdim>.hdf5``: one demo file per task."""
    return REPO / "data" / "bc" / f"scripted_{mapping.stem.removesuffix('_lowdim')}.hdf5"


def ensure_demos(path: Path, task: str, n: int, workers: int, seed: int) -> None:
    """Make ``path`` hold at least ``n`` scripted demos of ``task`` (:data:`COLLECT_PRESETS`), collecting the
    missing ones on every core."""
    have = demo_count(path)
    if have >= n:
        return
    shards = path.with_name(f"{path.stem}.collect{have}")
    _run(
        [
            sys.executable,
            "-m",
            "l2.distributed",
            "--source",
            "scripted",
            "--task",
            f"{task}-Scripted",
            "--num_demos",
            n - have,
            "--workers",
            workers,
            "--num_envs",
            32,
            "--seed",
            seed + have,
            "--output",
            shards,
            COLLECT_PRESETS,
        ]
    )
    parts = sorted(shards.glob("shard_*.hdf5"))
    merged = path.with_name(f".{path.name}.merging.hdf5")
    _run([sys.executable, "-m", "l2.tools.merge", *([path] if have else []), *parts, "-o", merged, "--overwrite"])
    merged.replace(path)
    shutil.rmtree(shards)


def valid_samples(path: Path, n: int) -> int:
    """Samples in the validation split ``mask/valid_<n>`` of an L2 file."""
    from l2.format.l2file import L2File

    with L2File(path, guard=False) as f:  # read through by demo_count
        return sum(f.num_samples(name.decode()) for name in f.h5[f"mask/valid_{n}"][()])


def robomimic_config(
    recipe: Path, data: Path, out: Path, name: str, n: int, epochs: int | None, every: int, valid: int
) -> dict:
    """The recipe for this run. robomimic drops a last partial batch, so a validation split smaller than one batch
    (``valid`` samples: one or two demos of a small training set) would give it no batch at all and stop the run:
    validation is then left out."""
    config = json.loads(recipe.read_text())
    train = config["train"]
    train["data"], train["output_dir"] = str(data.resolve()), str(out.resolve())
    train["hdf5_filter_key"], train["hdf5_validation_filter_key"] = f"train_{n}", f"valid_{n}"
    if valid < train["batch_size"]:
        config["experiment"]["validate"] = False
        train["hdf5_validation_filter_key"] = None
    if epochs is not None:
        train["num_epochs"] = epochs
    save = config["experiment"]["save"]
    save["every_n_epochs"] = every
    save["epochs"] = sorted({*save.get("epochs", []), train["num_epochs"]})  # robomimic saves the last one only so
    config["experiment"]["name"] = name
    return config


def shown(path: Path) -> str:
    """A path as the summary records it: relative to the repository when inside it (no machine's paths)."""
    path = Path(path).resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_serving(server: subprocess.Popen, what: str) -> None:
    """Read a starting server's output until it says it serves (libraries print banners first)."""
    seen = []
    for line in server.stdout:
        if line.startswith("serving "):
            return
        seen.append(line.strip())
    last = next((s for s in reversed(seen) if s), "exited without serving")
    raise TrainError(f"{what}: {last.removeprefix('error: ')}")


def evaluate_checkpoint(
    robomimic_python: str, checkpoint: Path, task: str, mapping: Path, episodes: int, report: Path
) -> dict:
    """Serve ``checkpoint`` in robomimic's venv and measure it in ``task``: the evaluation report."""
    port = _free_port()
    server = subprocess.Popen(
        [
            robomimic_python,
            "-m",
            "l2.serve",
            "robomimic",
            str(checkpoint),
            "--config",
            str(mapping),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--quiet",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_until_serving(server, f"l2.serve robomimic {checkpoint}")
        _run(
            [
                sys.executable,
                "-m",
                "l2.evaluate",
                "--policy",
                f"server:127.0.0.1:{port}",
                "--task",
                task,
                "--config",
                mapping,
                "--episodes",
                episodes,
                "--num_envs",
                min(episodes, 50),
                "--seed",
                EVAL_SEED,
                "--report",
                report,
            ]
        )
    finally:
        server.kill()
    return json.loads(report.read_text())


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = cli_args.Parser(
        prog="python -m l2.bc.train",
        description=__doc__.split("\n\n")[0],
        epilog="examples:" + __doc__.split("Examples::")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--task",
        default=DEFAULT_TASK,
        help="gym id the policy acts in; demos come from its -Scripted variant (default: %(default)s)",
    )
    p.add_argument(
        "--num_demos",
        type=cli_args.positive_int,
        default=200,
        help="training + validation demos (default: %(default)s)",
    )
    p.add_argument(
        "--data",
        type=cli_args.output_file,
        default=None,
        help="L2 file of the demos (collected when missing or short, scripted; default: "
        "data/bc/scripted_<the task's BC mapping name>.hdf5, e.g. data/bc/scripted_lift_cube.hdf5)",
    )
    p.add_argument("--name", default=None, help="run name (default: bc_<num_demos>)")
    p.add_argument(
        "--output",
        type=cli_args.output_folder,
        default=str(REPO / "logs" / "bc"),
        help="runs folder (default: logs/bc)",
    )
    p.add_argument(
        "--recipe", type=cli_args.existing_file, default=str(RECIPE), help="robomimic config (default: %(default)s)"
    )
    p.add_argument("--epochs", type=cli_args.positive_int, default=None, help="override the recipe's num_epochs")
    p.add_argument(
        "--save-every", type=cli_args.positive_int, default=25, help="checkpoint every N epochs (default: %(default)s)"
    )
    p.add_argument(
        "--episodes",
        type=cli_args.positive_int,
        default=50,
        help="evaluation episodes of the final checkpoint (default: %(default)s)",
    )
    p.add_argument(
        "--checkpoint-episodes",
        type=cli_args.non_negative_int,
        default=20,
        help="evaluation episodes of each earlier checkpoint, for the learning curve (0: none; default: %(default)s)",
    )
    p.add_argument(
        "--workers",
        type=cli_args.positive_int,
        default=2,
        help="collector processes when demos are missing (default: %(default)s)",
    )
    p.add_argument("--seed", type=cli_args.seed, default=7, help="collection seed (default: %(default)s)")
    p.add_argument(
        "--robomimic-python",
        default=None,
        help="python of robomimic's venv (default: built or found by scripts/setup_robomimic.sh)",
    )
    args = p.parse_args(argv)
    try:
        args.mapping = bc_mapping(args.task)
    except TrainError as exc:
        p.error(str(exc))
    args.data = Path(args.data) if args.data else default_data(args.mapping)
    args.output, args.recipe = Path(args.output), Path(args.recipe)
    try:  # before any demo is collected
        json.loads(args.recipe.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        p.error(f"argument --recipe: {args.recipe}: not a robomimic JSON config ({type(exc).__name__})")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    name = args.name or f"bc_{args.num_demos}"
    try:
        return train(args, name)
    except TrainError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def train(args: argparse.Namespace, name: str) -> int:
    from l2.bc import action_scale
    from l2.bc.plot import algorithm, plot_run
    from l2.policy.report import rate_text
    from l2.tools.split import mask_names

    python = (
        args.robomimic_python
        or subprocess.run(
            ["bash", str(REPO / "scripts" / "setup_robomimic.sh")], capture_output=True, text=True, check=True
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    ensure_demos(args.data, args.task, args.num_demos, args.workers, args.seed)
    _run(
        [sys.executable, "-m", "l2.tools.split", args.data, "--first", args.num_demos, "--valid", "0.1", "--overwrite"]
    )
    run = args.output / name
    if run.exists():
        raise TrainError(f"{run} exists: pick another --name or remove it")
    run.mkdir(parents=True)
    scratch = args.output / ".robomimic" / name  # robomimic's own output folder; one left by an interrupted run
    shutil.rmtree(scratch, ignore_errors=True)  # would make its trainer stop at an interactive prompt
    valid = valid_samples(args.data, args.num_demos)
    with h5py.File(args.data, "r") as f:
        train_demos = mask_names(f, f"train_{args.num_demos}")
    scale = action_scale.fit(args.data, train_demos)
    data = args.data
    if scale is not None:  # robomimic trains on a copy with the actions scaled into [-1, 1]
        data = run / "train_data.hdf5"
        action_scale.write_training_copy(args.data, data, scale)
        print(f"note: actions outside [-1, 1]: trained scaled into it ({shown(data)}), served scaled back")
    config = robomimic_config(
        args.recipe, data, scratch.parent, name, args.num_demos, args.epochs, args.save_every, valid
    )
    if not config["experiment"]["validate"]:
        print(f"note: the validation split holds {valid} samples, less than a batch: trained without validation loss")
    (run / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    start = time.perf_counter()
    output = _run([python, "-m", "robomimic.scripts.train", "--config", run / "config.json"], log=run / "train.log")
    train_seconds = time.perf_counter() - start
    if "finished run successfully!" not in output:  # robomimic's trainer exits 0 even when a run fails
        raise TrainError(f"robomimic training failed: see {run / 'train.log'}")
    produced = max(scratch.iterdir())  # <output_dir>/<name>/<timestamp>/
    shutil.move(str(produced / "models"), run / "models")
    shutil.move(str(produced / "logs"), run / "logs")
    shutil.rmtree(scratch)
    if scale is not None:
        action_scale.store_in_checkpoints(python, sorted((run / "models").glob("*.pth")), scale)
    epochs = config["train"]["num_epochs"]
    curve = {}
    start_eval = time.perf_counter()
    for checkpoint in sorted((run / "models").glob("model_epoch_*.pth"), key=lambda p: int(p.stem.split("_")[-1])):
        epoch = int(checkpoint.stem.split("_")[-1])
        episodes = args.episodes if epoch == epochs else args.checkpoint_episodes
        if episodes:
            report = evaluate_checkpoint(
                python, checkpoint, args.task, args.mapping, episodes, run / f"eval_epoch_{epoch}.json"
            )
            curve[epoch] = (report["successes"], report["episodes"])
    final = curve[epochs]
    summary = {
        "name": name,
        "task": args.task,
        "algorithm": algorithm(config),
        "data": shown(args.data),
        "num_demos": args.num_demos,
        "actions_scaled": scale is not None,
        "epochs": epochs,
        "steps_per_epoch": config["experiment"]["epoch_every_n_steps"],
        "train_seconds": round(train_seconds),
        "eval_seconds": round(time.perf_counter() - start_eval),
        "checkpoint": shown(run / "models" / f"model_epoch_{epochs}.pth"),
        "successes": final[0],
        "episodes": final[1],
        "success_rate": final[0] / final[1],
        "success_text": rate_text(*final),
        "rollouts": {str(k): list(v) for k, v in sorted(curve.items())},
    }
    (run / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    plot_run(
        run / "logs",
        curve,
        run / "learning_curve.png",
        title=f"{algorithm(config)} on {args.num_demos} demos ({name})",
        steps_per_epoch=config["experiment"]["epoch_every_n_steps"],
    )
    print(
        f"\n  {name}: {summary['success_text']} over {final[1]} episodes; trained {epochs} epochs in "
        f"{train_seconds / 60:.1f} min\n  run: {run} (summary.json, learning_curve.png, models/)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
