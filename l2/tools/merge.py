"""Merge L2 HDF5 demo files of one task into one file (``docs/merge_split.md``).

    python -m l2.tools.merge data/demos/scripted_a.hdf5 data/demos/scripted_b.hdf5 -o data/demos/scripted_lift_cube.hdf5

Every input is checked with :func:`l2.format.validate.validate_file` first. Demos are copied with HDF5's
object copy (``h5py.Group.copy``: every dataset keeps its chunking and compression, attributes and
``initial_state/`` come along, camera frames are copied chunk by chunk, never held in memory) and
renumbered ``demo_0..demo_{N-1}`` in input order, then numeric demo order within each input;
``data.attrs["total"]`` is the sum of ``num_samples``. Each demo records where it came from
(``source``, ``source_file``, ``source_demo`` attributes, kept from an earlier merge). The output is
built beside its path and renamed into place; an existing output is refused unless ``--overwrite``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import h5py
from tqdm import tqdm

from l2.format import atomic, schema
from l2.format.cli_args import Parser, existing_file, non_negative_int, output_file
from l2.format.interrupts import interrupted_line, terminate_as_interrupt
from l2.format.l2file import L2File, describe_obs_layout
from l2.format.metadata import agreed
from l2.format.validate import FROM_FILE, LIFT_ACTION_DIM, validate_file

ATTR_SOURCE = schema.ATTR_SOURCE
"""Per-demo attribute written by the merge: the L2 source tag of the file the demo came from."""
ATTR_SOURCE_FILE = "source_file"
"""Per-demo attribute written by the merge: the base name of the file the demo came from."""
ATTR_SOURCE_DEMO = "source_demo"
"""Per-demo attribute written by the merge: the demo's group name in that file."""

RUN_ONLY_SIM_ARGS = ("num_envs",)
"""``env_args["sim_args"]`` entries that describe the run, not the task (ignored when comparing inputs)."""


class MergeError(Exception):
    """Bad input or output for a merge, reported as one line (exit 2), with nothing written."""


def task_signature(env_args: dict) -> dict:
    """What must be equal for two files to be of the same task: ``env_args`` without the run-only
    ``sim_args`` entries (how many envs ran in parallel) and without the recording's metadata (what the files say
    alike of it is kept: :func:`l2.format.metadata.agreed`)."""
    out = {k: v for k, v in env_args.items() if k != "sim_args" and k not in schema.METADATA_KEYS}
    sim = env_args.get("sim_args")
    if isinstance(sim, dict):
        out["sim_args"] = {k: v for k, v in sim.items() if k not in RUN_ONLY_SIM_ARGS}
    elif sim is not None:
        out["sim_args"] = sim
    return out


def _differences(a: dict, b: dict, prefix: str = "") -> list[str]:
    """Keys (dotted) whose values differ between two JSON objects."""
    out = []
    for key in sorted(set(a) | set(b), key=str):
        va, vb = a.get(key), b.get(key)
        if isinstance(va, dict) and isinstance(vb, dict):
            out += _differences(va, vb, f"{prefix}{key}.")
        elif va != vb:
            out.append(f"{prefix}{key} ({json.dumps(va)} vs {json.dumps(vb)})")
    return out


class _Input:
    """What the merge needs from one input file, read once (attributes and one demo's layout)."""

    def __init__(self, path: str, action_dim: int | None):
        self.path = path
        report = validate_file(path, action_dim)
        if not report.ok:
            raise MergeError(f"{report.violations[0]} (python -m l2.format.validate {path} lists every problem)")
        with L2File(path, guard=False) as f:  # validate_file read it through
            self.format_version = f.h5.attrs.get(schema.ATTR_FORMAT_VERSION)
            self.env_args = f.env_args
            self.demos = f.demos
            self.sources = {name: f.source(name) for name in self.demos}
            self.layout = f.obs_layout() if self.demos else None
            self.action_shape = tuple(f.group(self.demos[0])[schema.ACTIONS].shape[1:]) if self.demos else None
            self.has_masks = schema.MASK_GROUP in f.h5


def check_same_task(inputs: Sequence[_Input], env_name: str | None) -> None:
    """Refuse inputs of different tasks (``env_args``), obs layouts or action widths, naming both files."""
    ref = inputs[0]
    for other in inputs[1:]:
        a, b = task_signature(ref.env_args), task_signature(other.env_args)
        if env_name is not None:
            a.pop("env_name", None)
            b.pop("env_name", None)
        diff = _differences(a, b)
        if diff:
            only_name = all(d.startswith("env_name ") for d in diff)
            hint = " (--env-name NAME merges variants of one task)" if only_name else ""
            raise MergeError(
                f"{ref.path} and {other.path} are not of the same task: /data env_args differ in "
                f"{', '.join(diff)}{hint}"
            )
        if ref.layout is not None and other.layout is not None:
            if ref.layout != other.layout:
                raise MergeError(
                    f"{ref.path} and {other.path} record different obs: "
                    f"{describe_obs_layout(ref.layout)} vs {describe_obs_layout(other.layout)}"
                )
            if ref.action_shape != other.action_shape:
                raise MergeError(
                    f"{ref.path} and {other.path} have different action widths: "
                    f"{ref.action_shape} vs {other.action_shape}"
                )
        if ref.format_version != other.format_version:
            raise MergeError(
                f"{ref.path} and {other.path} have different format_version "
                f"({ref.format_version} vs {other.format_version})"
            )


def merge(
    inputs: Sequence[str | os.PathLike],
    output: str | os.PathLike,
    *,
    overwrite: bool = False,
    env_name: str | None = None,
    action_dim: int | None | str = FROM_FILE,
    progress: bool = False,
    provenance: bool = True,
    env_args: dict | None = None,
) -> dict:
    """Merge L2 files of one task into ``output``; returns a summary dict (demos, samples, per-input counts).

    ``env_name``: the merged file's ``env_args["env_name"]``, which lets files of variants of one task
    (e.g. the scripted and teleop gym ids) be merged; every other ``env_args`` entry must still match.
    ``provenance=False`` copies the demos as they are, without the ``source``/``source_file``/``source_demo``
    attributes (the shards of one collection: l2.recording.workers); ``env_args``: the merged file's, instead of
    the first input's. The recording's metadata (robot, cameras, column names, ...) is what the inputs say alike.
    Raises :class:`MergeError` on bad input or an existing output without ``overwrite``; nothing is left behind.
    """
    paths = [os.fspath(p) for p in inputs]
    output = Path(output)
    if not paths:
        raise MergeError("no input files")
    if output.suffix != ".hdf5":
        raise MergeError(f"{output}: the output must be an .hdf5 file")
    if output.exists() and not overwrite:
        raise MergeError(f"{output} exists (pass --overwrite to replace it)")
    for i, p in enumerate(paths):
        for q in paths[:i]:
            if os.path.exists(p) and os.path.exists(q) and os.path.samefile(p, q):
                raise MergeError(f"{p}: given twice (as {q}); its demos would be merged twice")
    files = [_Input(p, action_dim) for p in paths]
    check_same_task(files, env_name)

    env_args = {k: v for k, v in (env_args or files[0].env_args).items() if k not in schema.METADATA_KEYS}
    env_args.update(agreed(f.env_args for f in files))
    if env_name is not None:
        env_args["env_name"] = env_name
    output.parent.mkdir(parents=True, exist_ok=True)
    per_input: list[tuple[str, int, int]] = []
    total = 0
    bar = tqdm(
        total=sum(len(f.demos) for f in files),
        desc="merging",
        unit="demo",
        disable=not progress,
        file=sys.stderr,
        leave=False,
    )
    try:
        with atomic.replacing(output, tag="merging") as tmp, h5py.File(tmp, "w") as out:
            if files[0].format_version is not None:
                out.attrs[schema.ATTR_FORMAT_VERSION] = files[0].format_version
            data = out.create_group(schema.DATA_GROUP)
            index = 0
            for f in files:
                samples = 0
                with h5py.File(f.path, "r") as src:
                    for name in f.demos:
                        target = schema.demo_name(index)
                        src.copy(src[f"{schema.DATA_GROUP}/{name}"], data, name=target)
                        demo = data[target]
                        if provenance and ATTR_SOURCE_FILE not in demo.attrs:  # kept from an earlier merge
                            demo.attrs[ATTR_SOURCE] = f.sources[name]
                            demo.attrs[ATTR_SOURCE_FILE] = os.path.basename(f.path)
                            demo.attrs[ATTR_SOURCE_DEMO] = name
                        samples += int(demo.attrs[schema.ATTR_NUM_SAMPLES])
                        index += 1
                        bar.update()
                per_input.append((f.path, len(f.demos), samples))
                total += samples
            data.attrs[schema.ATTR_TOTAL] = total
            data.attrs[schema.ATTR_ENV_ARGS] = json.dumps(env_args)
    finally:
        bar.close()
    notices = [
        f"{f.path}: its filter keys (mask/) are not carried over; run python -m l2.tools.split on the merged file"
        for f in files
        if f.has_masks
    ]
    return {
        "output": str(output),
        "demos": sum(n for _, n, _ in per_input),
        "samples": total,
        "inputs": per_input,
        "env_name": env_args.get("env_name"),
        "notices": notices,
    }


def _parser() -> Parser:
    p = Parser(
        prog="python -m l2.tools.merge",
        description="Merge L2 HDF5 demo files of one task into one file: demos renumbered demo_0..demo_{N-1} in "
        "input order, data/total summed, every dataset (obs terms, cameras, initial_state) copied as stored, "
        "each demo's origin kept in its source / source_file / source_demo attributes.",
        epilog="Same task: the inputs' /data env_args are equal except sim_args.num_envs (and env_name with "
        "--env-name), and their demos record the same obs terms and action width. Filter keys (mask/) of the "
        "inputs are not carried over: split the merged file again with python -m l2.tools.split. Exit status: 0 "
        "merged, 2 bad input or usage (one line, nothing written).",
    )
    p.add_argument("inputs", nargs="+", type=existing_file, metavar="IN", help="L2 HDF5 files to merge, in this order")
    p.add_argument("-o", "--output", required=True, type=output_file, metavar="OUT", help="merged .hdf5 file to write")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    p.add_argument(
        "--env-name",
        metavar="NAME",
        help="env_name of the merged file; allows inputs whose env_name differs (variants of one "
        "task, e.g. L2-Lift-Cube-Franka-IK-Abs-Scripted and -Teleop); the rest of env_args must match",
    )
    p.add_argument(
        "--action-dim",
        type=non_negative_int,
        default=None,
        metavar="N",
        help=f"expected action width when validating the inputs (default: {LIFT_ACTION_DIM}, or any for files of "
        "joint-position actions; 0 skips the width and quaternion checks), as python -m l2.format.validate",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    t0 = time.perf_counter()
    try:
        with terminate_as_interrupt() as stop:  # SIGTERM as Ctrl-C: the temporary file is removed on the way out
            summary = merge(
                args.inputs,
                args.output,
                overwrite=args.overwrite,
                env_name=args.env_name,
                action_dim=FROM_FILE if args.action_dim is None else (args.action_dim or None),
                progress=not args.quiet and sys.stderr.isatty(),
            )
    except KeyboardInterrupt:
        line, code = interrupted_line(stop, "no output written; the inputs are untouched")
        print(f"error: {line}", file=sys.stderr)
        return code
    except MergeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (OSError, RuntimeError) as exc:  # a full disk, a read-only place: the temporary file is gone
        if atomic.os_error(exc) is None:
            raise
        print(
            f"error: {atomic.io_error_line(exc, args.output, 'no output written; the inputs are untouched')}",
            file=sys.stderr,
        )
        return 2
    if not args.quiet:
        for path, demos, samples in summary["inputs"]:
            print(f"  {path}: {demos} demos, {samples} samples")
        for notice in summary["notices"]:
            print(f"  notice: {notice}")
    print(
        f"wrote {summary['output']}: {summary['demos']} demos, {summary['samples']} samples, "
        f"env_name={summary['env_name']} ({time.perf_counter() - t0:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
