"""An HTML inspection report of a GR00T LeRobot v2.1 dataset folder, to open in a browser.

    python -m l3.inspect_dataset outputs/lift_cube_gr00t --output report.html

One self-contained page (plots and camera frames embedded): episodes per source tag and success,
episode lengths, the state and action trajectories of a few episodes (one per source first, dimensions
named from info.json as sliced by modality.json), action value histograms, a top-down plot of the cube
start positions and end-effector paths (state / action dimensions named by ``--cube-xy`` / ``--ee-xy``),
a frame strip of every camera decoded from the MP4s (one episode per source), the modality.json map,
the stats.json table, and the result of ``l3.validate --fast``. Episodes are read one at a time, so
memory does not grow with the dataset. Needs pyarrow, PyAV, numpy, matplotlib and Pillow (no Isaac Lab).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from tqdm import tqdm

from l2.format.cli_args import Parser, existing_folder, int_at_least, output_file, positive_int
from l2.tools import report
from l2.tools.frame_strip import MAX_FRAMES, frame_indices, tile
from l2.tools.report import TRACED, EpisodeData, InspectError, ReportBuilder
from l3 import layout, meta
from l3.video import decode

CUBE_XY = "object_x,object_y"
"""State dimensions of the cube position in config/lift_cube.yaml."""
EE_XY = "x,y"
"""Action dimensions of the end-effector target position in config/lift_cube.yaml."""
MAX_VIOLATIONS = 20
"""Validator findings listed on the page (all are counted)."""


def _json(root: Path, rel: str, required: bool = True):
    try:
        return meta.read_json(root, rel)
    except meta.MetaError as exc:
        if exc.missing and not required:
            return None
        raise InspectError(_message(exc)) from None


def _message(exc: meta.MetaError) -> str:
    return f"{exc}{' (not a LeRobot dataset folder?)' if exc.missing else ''}"


def _jsonl(root: Path, rel: str) -> list[dict]:
    try:
        rows, problems = meta.read_jsonl(root, rel)
    except meta.MetaError as exc:
        raise InspectError(_message(exc)) from None
    bad = [e for e in problems if e.message != meta.BLANK_LINE]
    if bad:
        raise InspectError(str(bad[0]))
    return rows


def _names(info: dict, key: str, root: Path) -> list[str]:
    f = info["features"].get(key)
    if not isinstance(f, dict) or not f.get("shape"):
        raise InspectError(f"{root / layout.INFO_PATH}: features.{key} missing")
    names = f.get("names")
    width = f["shape"][0]
    return list(names) if isinstance(names, list) and len(names) == width else [f"{key}[{i}]" for i in range(width)]


def _pick(names: list[str], wanted: str) -> list[int] | None:
    want = [w for w in wanted.split(",") if w]
    return [names.index(w) for w in want] if len(want) == 2 and all(w in names for w in want) else None


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _episodes_with(task: object, episodes: list[dict]) -> int:
    if task in (layout.VALID, layout.INVALID):
        return sum(bool(e.get("success")) == (task == layout.VALID) for e in episodes)
    return sum(task in e.get("tasks", []) for e in episodes)


def build(
    root: str | Path,
    traced: int = TRACED,
    frames: int = 8,
    cube_xy: str = CUBE_XY,
    ee_xy: str = EE_XY,
    validate: bool = True,
    progress: bool = True,
) -> ReportBuilder:
    """The report of the dataset folder ``root`` (raises :class:`InspectError` on bad input)."""
    root = Path(root)
    if not root.is_dir():
        raise InspectError(f"{root}: not a directory")
    info = _json(root, layout.INFO_PATH)
    episodes = _jsonl(root, layout.EPISODES_PATH)
    modality = _json(root, layout.MODALITY_PATH, required=False)
    stats = _json(root, layout.STATS_PATH, required=False)
    if not isinstance(info, dict) or not isinstance(info.get("features"), dict):
        raise InspectError(f"{root / layout.INFO_PATH}: no features")
    state_names, action_names = _names(info, layout.STATE, root), _names(info, layout.ACTION, root)
    cameras = [k for k, f in info["features"].items() if f.get("dtype") == "video"]
    chunks, data_tpl, video_tpl = (
        info.get("chunks_size", layout.CHUNKS_SIZE),
        info.get("data_path", layout.DATA_PATH),
        info.get("video_path") or layout.VIDEO_PATH,
    )
    sources = [str(e.get("source", "unknown")) for e in episodes]
    chosen = report.choose_episodes(sources, traced) if episodes else []
    b = ReportBuilder(f"L3 inspection: {root.resolve().name}", chosen, report.spread(len(episodes), report.MAX_PATHS))
    b.source_title = "Per-source breakdown (the source tag of each episode in episodes.jsonl)"
    b.facts += [("dataset", str(root))] + [
        (k, _fmt(info.get(k)))
        for k in ("codebase_version", "robot_type", "fps", "total_episodes", "total_frames", "total_tasks")
    ]
    b.facts.append(
        (
            "cameras",
            ", ".join(
                f"{k[len(layout.VIDEO_PREFIX) :]} {info['features'][k]['shape'][1]}x{info['features'][k]['shape'][0]}"
                for k in cameras
            )
            or "none",
        )
    )
    cube, ee = _pick(state_names, cube_xy), _pick(action_names, ee_xy)
    if cube is None:
        b.notes.append(f"No cube start positions: the state has no dimensions named {cube_xy} (--cube-xy).")
    if ee is None:
        b.notes.append(f"No end-effector paths: the action has no dimensions named {ee_xy} (--ee-xy).")
    else:
        b.top_down_caption = (
            f"End-effector path: action {ee_xy} (the commanded target); cube: state {cube_xy} at the "
            "first and last frames."
        )

    for k, e in enumerate(tqdm(episodes, desc="inspect", unit="ep", disable=not progress)):
        rel = layout.data_path(k, chunks, data_tpl)
        try:
            t = pq.ParquetFile(root / rel).read(columns=[layout.STATE, layout.ACTION])
            state = _matrix(t, layout.STATE, len(state_names))
            action = _matrix(t, layout.ACTION, len(action_names))
        except Exception as exc:  # noqa: BLE001 - any reader error names the file
            raise InspectError(f"{root / rel}: cannot read {layout.STATE} / {layout.ACTION} ({exc})") from None
        success = e.get("success")
        ep = EpisodeData(
            f"episode {k} ({sources[k]})",
            sources[k],
            success if isinstance(success, bool) else None,
            len(state),
            action=report.columns(action_names, action),
            state=report.columns(state_names, state) if k in b.traced else {},
        )
        if cube is not None and len(state):
            ep.cube_xy, ep.cube_end_xy = state[0, cube], state[-1, cube]
        if ee is not None:
            ep.ee_xy = action[:, ee]
        b.add(ep)

    for source in dict.fromkeys(sources):
        k = next(i for i in sorted(b.traced) + list(range(len(sources))) if sources[i] == source)
        rows = []
        for key in cameras:
            rel = layout.video_path(k, key, chunks, video_tpl)
            rows.append(_strip_row(root / rel, episodes[k].get("length", 0), frames))
        if rows:
            names = ", ".join(c[len(layout.VIDEO_PREFIX) :] for c in cameras)
            b.add_strip(
                f"{source}: episode {k} ({episodes[k].get('length')} frames): {names}, top to bottom; "
                f"{frames} frames from first to last",
                tile(rows),
            )

    tasks = _jsonl(root, layout.TASKS_PATH)
    b.add_table(
        "tasks.jsonl",
        ["task_index", "task", "episodes"],
        [[t.get("task_index"), t.get("task"), _episodes_with(t.get("task"), episodes)] for t in tasks],
        note="An instruction counts the episodes whose tasks list it (episodes.jsonl); valid / invalid, the "
        "episodes whose success matches (their validity annotation points at it).",
    )
    if modality is not None:
        rows = []
        for block in ("state", "action"):
            names = state_names if block == "state" else action_names
            for key, m in (modality.get(block) or {}).items():
                a, z = m.get("start"), m.get("end")
                dims = ", ".join(names[a:z]) if isinstance(a, int) and isinstance(z, int) else "?"
                rows.append([block, key, a, z, dims, m.get("absolute", ""), m.get("rotation_type", "")])
        for block in ("video", "annotation"):
            for key, m in (modality.get(block) or {}).items():
                rows.append([block, key, "", "", (m or {}).get("original_key", ""), "", ""])
        b.add_table(
            "modality.json",
            ["block", "key", "start", "end", "dimensions / original key", "absolute", "rotation_type"],
            rows,
        )
    else:
        b.notes.append(f"{layout.MODALITY_PATH} is missing.")
    if stats is not None:
        rows = []
        for key, s in stats.items():
            names = {layout.STATE: state_names, layout.ACTION: action_names}.get(key)
            cols = {k: np.atleast_1d(np.asarray(s.get(k, []), dtype=float)) for k in layout.STATS_KEYS}
            width = max((len(v) for v in cols.values()), default=0)
            for i in range(width):
                name = names[i] if names and i < len(names) else (str(i) if width > 1 else "")
                rows.append(
                    [key, name, *(_fmt(float(cols[k][i])) if i < len(cols[k]) else "" for k in layout.STATS_KEYS)]
                )
        b.add_table("stats.json", ["feature", "dimension", *layout.STATS_KEYS], rows)
    else:
        b.notes.append(f"{layout.STATS_PATH} is missing.")
    if validate:
        from l3.validate import validate as run_validate

        violations = run_validate(root, deep=False)
        b.facts.append(("l3.validate --fast", "ok" if not violations else f"{len(violations)} violation(s)"))
        if violations:
            b.add_table(
                "l3.validate --fast findings",
                ["path", "problem"],
                [[v.path, v.message] for v in violations[:MAX_VIOLATIONS]],
                note=f"{len(violations)} in all; the first {min(len(violations), MAX_VIOLATIONS)}:",
            )
    return b


def _matrix(table, key: str, width: int) -> np.ndarray:
    """A list<float> column of ``width`` values per row as a (T, width) float32 array."""
    flat = table.column(key).combine_chunks().flatten().to_numpy(zero_copy_only=False)
    if len(flat) != table.num_rows * width:
        raise ValueError(f"{key}: {len(flat)} values for {table.num_rows} rows of {width}")
    return flat.astype(np.float32, copy=False).reshape(table.num_rows, width)


def _strip_row(path: Path, length: int, frames: int) -> list[np.ndarray]:
    """``frames`` evenly spaced decoded frames of one MP4 (only those are kept)."""
    if not path.is_file():
        raise InspectError(f"{path}: missing")
    want = set(frame_indices(max(int(length), 1), frames).tolist())
    out = []
    try:
        for i, img in enumerate(decode(path)):
            if i in want:
                out.append(img)
    except Exception as exc:  # noqa: BLE001 - any decoder error names the file
        raise InspectError(f"{path}: cannot decode ({exc})") from None
    if not out:
        raise InspectError(f"{path}: no frames")
    return out


def main(argv: list[str] | None = None) -> int:
    p = Parser(
        prog="python -m l3.inspect_dataset",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example: python -m l3.inspect_dataset outputs/lift_cube_gr00t --output report.html",
    )
    p.add_argument("dataset", type=existing_folder, help="GR00T LeRobot dataset folder (holds meta/, data/, videos/)")
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
    p.add_argument(
        "--cube-xy", default=CUBE_XY, help="the two state dimensions holding the cube's x, y (default: %(default)s)"
    )
    p.add_argument(
        "--ee-xy",
        default=EE_XY,
        help="the two action dimensions holding the end-effector's x, y (default: %(default)s)",
    )
    p.add_argument("--no-validate", action="store_true", help="do not run l3.validate --fast on the dataset")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    args = p.parse_args(argv)
    return report.run(
        args.output,
        args.overwrite,
        lambda: build(
            args.dataset,
            args.episodes,
            args.frames,
            args.cube_xy,
            args.ee_xy,
            validate=not args.no_validate,
            progress=not args.quiet and sys.stderr.isatty(),
        ),
    )


if __name__ == "__main__":
    sys.exit(main())
