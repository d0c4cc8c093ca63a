"""An HTML inspection report of L2 HDF5 demo files, to open in a browser.

    python -m l2.tools.inspect_demos data/demos/*.hdf5 --output report.html

One self-contained page (plots and camera frames embedded): episodes per source and success, episode
lengths, the state and action trajectories of a few episodes (one per source first), action value
histograms, a top-down plot of the cube start positions and end-effector target paths, a frame strip of
every camera for the first traced episode of each file, and a table per file. Episodes are read one at
a time (camera frames only for the strips), so memory does not grow with the files. Needs h5py, numpy,
matplotlib and Pillow (no Isaac Lab).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np
from tqdm import tqdm

from l2.format import schema
from l2.format.cli_args import Parser, existing_file, int_at_least, output_file, positive_int
from l2.format.l2file import READ_ERRORS, L2File, L2FileError, text_attr
from l2.tools import report
from l2.tools.frame_strip import MAX_FRAMES, camera_terms, frame_strip
from l2.tools.report import TRACED, EpisodeData, InspectError, ReportBuilder


@dataclass(frozen=True)
class DemoRef:
    file: str
    demo: str
    source: str
    success: bool | None
    length: int


def scan(files: list[str]) -> tuple[list[DemoRef], dict[str, dict]]:
    """Every demo of every file from the attributes alone (in file then numeric order), and per file its
    env name and camera terms."""
    refs: list[DemoRef] = []
    info: dict[str, dict] = {}
    for file in files:
        where = ""
        try:
            with L2File(file) as f:
                names = f.demos
                cams: list[str] = []
                for name in names:
                    where = f"{schema.DATA_GROUP}/{name}"
                    g = f.group(name)
                    if not cams:
                        cams = [f"{c} {'x'.join(map(str, g[schema.OBS][c].shape[1:3]))}" for c in camera_terms(g)]
                    ok = g.attrs.get(schema.ATTR_SUCCESS)
                    refs.append(
                        DemoRef(file, name, f.source(name), None if ok is None else bool(ok), f.num_samples(name))
                    )
                where = schema.DATA_GROUP
                info[file] = {"env": f.env_name or "", "demos": len(names), "cameras": cams}
        except L2FileError as exc:
            raise InspectError(str(exc)) from None
        except READ_ERRORS as exc:
            raise InspectError(f"{file}:/{where}: cannot read ({exc})") from None
    return refs, info


def read_episode(f: h5py.File, ref: DemoRef, with_state: bool) -> EpisodeData:
    """One demo's actions (named after the schema), float obs terms (``term[i]``; only ``with_state``),
    cube start and end-effector target path."""
    where = f"{schema.DATA_GROUP}/{ref.demo}"
    try:
        g = f[where]
        actions = np.asarray(g[schema.ACTIONS][()], np.float32)
        if actions.ndim != 2:
            raise InspectError(f"{ref.file}:/{where}/{schema.ACTIONS}: expected (T, d), got {actions.shape}")
        lift = actions.shape[1] == schema.LIFT_ACTION_DIM
        names = schema.LIFT_ACTION_NAMES if lift else [f"{schema.ACTIONS}[{i}]" for i in range(actions.shape[1])]
        instruction, scene = g.attrs.get(schema.ATTR_INSTRUCTION), g.attrs.get(schema.ATTR_SCENE)
        ep = EpisodeData(
            f"{Path(ref.file).name} {ref.demo}",
            ref.source,
            ref.success,
            ref.length,
            action=report.columns(names, actions),
            instruction=text_attr(instruction) or None,
            scene=_scene(scene),
        )
        if lift:
            ep.ee_xy = actions[:, schema.EE_POS_SLICE][:, :2]
        obs = g.get(schema.OBS)
        if isinstance(obs, h5py.Group):
            cube = obs.get("object_position")
            if isinstance(cube, h5py.Dataset) and cube.ndim == 2 and cube.shape[0] and cube.shape[1] >= 2:
                ep.cube_xy, ep.cube_end_xy = cube[0, :2], cube[-1, :2]
            if with_state:
                for term, ds in sorted(obs.items()):
                    if (
                        term != schema.ACTIONS
                        and isinstance(ds, h5py.Dataset)
                        and ds.ndim == 2
                        and ds.dtype.kind == "f"
                    ):
                        ep.state.update(report.columns([f"{term}[{i}]" for i in range(ds.shape[1])], ds[()]))
        return ep
    except READ_ERRORS as exc:
        raise InspectError(f"{ref.file}:/{where}: cannot read ({exc})") from None


def _scene(raw) -> dict | None:
    """A demo's ``scene`` attribute as a dict (None when absent or not a JSON object: the validator names it)."""
    try:
        value = json.loads(text_attr(raw)) if raw is not None else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def build(files: list[str], traced: int = TRACED, frames: int = 8, progress: bool = True) -> ReportBuilder:
    """The report of ``files`` (raises :class:`InspectError` on bad input)."""
    refs, info = scan(files)
    chosen = report.choose_episodes([r.source for r in refs], traced) if refs else []
    b = ReportBuilder(
        f"L2 inspection: {len(files)} file(s), {len(refs)} episodes", chosen, report.spread(len(refs), report.MAX_PATHS)
    )
    b.facts += [("files", ", ".join(files)), ("episodes", str(len(refs))), ("frames", str(sum(r.length for r in refs)))]
    open_file, handle = None, None
    for k, ref in enumerate(tqdm(refs, desc="inspect", unit="ep", disable=not progress)):
        if ref.file != open_file:
            if handle is not None:
                handle.close()
            handle, open_file = L2File(ref.file, guard=False), ref.file  # read through by scan()
        b.add(read_episode(handle.h5, ref, k in b.traced))
    if handle is not None:
        handle.close()
    if b.paths:
        b.top_down_caption = (
            "End-effector path: the commanded target (actions x, y), in the robot root frame like "
            "the cube (obs/object_position at the first and last frames)."
        )
    for file in files:
        first = next((k for k in sorted(b.traced) if refs[k].file == file), None)
        if first is None or not info[file]["cameras"]:
            continue
        ref = refs[first]
        try:
            strip = frame_strip(file, schema.demo_index(ref.demo), frames, guard=False)
        except (ValueError, *READ_ERRORS) as exc:
            raise InspectError(str(exc) if isinstance(exc, ValueError) else f"{file}: {exc}") from None
        cams = ", ".join(c.split()[0] for c in info[file]["cameras"])
        b.add_strip(
            f"{Path(file).name} {ref.demo} ({ref.length} frames): {cams}, top to bottom; "
            f"{frames} frames from first to last",
            strip,
        )
    rows = []
    for file in files:
        mine = [r for r in refs if r.file == file]
        rows.append(
            [
                file,
                info[file]["env"],
                len(mine),
                sum(r.success is True for r in mine),
                sum(r.success is False for r in mine),
                sum(r.length for r in mine),
                ", ".join(info[file]["cameras"]) or "none",
            ]
        )
    b.add_table("Files", ["file", "env_name", "demos", "successful", "failed", "frames", "cameras"], rows)
    return b


def main(argv: list[str] | None = None) -> int:
    p = Parser(
        prog="python -m l2.tools.inspect_demos",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example: python -m l2.tools.inspect_demos data/demos/*.hdf5 --output report.html",
    )
    p.add_argument(
        "files",
        nargs="+",
        type=existing_file,
        help="L2 HDF5 files (a demo's source: its own source attribute, else "
        "the file name's prefix or its shard folder's)",
    )
    p.add_argument("--output", "-o", required=True, type=output_file, help="HTML file to write")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    p.add_argument(
        "--episodes",
        type=positive_int,
        default=TRACED,
        help="episodes whose trajectories are drawn (default: %(default)s)",
    )
    p.add_argument(
        "--frames",
        type=int_at_least(1, MAX_FRAMES),
        default=8,
        help="frames per camera in the strips (default: %(default)s)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    args = p.parse_args(argv)
    return report.run(
        args.output,
        args.overwrite,
        lambda: build(args.files, args.episodes, args.frames, progress=not args.quiet and sys.stderr.isatty()),
    )


if __name__ == "__main__":
    sys.exit(main())
