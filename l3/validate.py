"""Check a GR00T LeRobot v2.1 folder against its layout (:mod:`l3.layout`): the things a loader trips on.

    python -m l3.validate DIR        # prints one violation per line; exit 1 if any, 0 if none
    python -m l3.validate --fast DIR # parquet footers only (what the converter runs on its output)

Checks: meta files present and parseable, no blank lines in any jsonl, info.json totals and
features (names for every state/action dimension, video info), episode indices 0..N-1, parquet
columns/rows/timestamps/indices per episode, task and annotation indices present in tasks.jsonl,
modality.json slices, stats.json (six stats per float feature), episodes_stats.jsonl, and each
video's codec, pixel format, size and frame count == rows with frame i at i/fps. Memory stays
bounded by one episode (files are read one at a time).

``deep=False`` (``--fast``) checks each parquet from its footer instead of its values: schema and
column types, rows == length, list widths from the value counts, and the index columns (frame,
episode, global, task and annotation indices, timestamps) from their min/max statistics; a file
without those statistics is read and checked in full. Not checked then: finite state/action
values, every row of the index columns, next.done on the last row only.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from l3 import layout, meta
from l3.mapping import ROTATION_WIDTHS


@dataclass(frozen=True)
class Violation:
    """One problem: ``str(v) == "path: message"`` (path relative to the dataset folder)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class _Checker:
    def __init__(self, root: Path):
        self.root = root
        self.out: list[Violation] = []
        self.footer_layouts: list[tuple[pq.ParquetSchema, _FooterLayout]] = []

    def bad(self, path: str, message: str) -> None:
        self.out.append(Violation(path, message))

    def json(self, rel: str):
        try:
            return meta.read_json(self.root, rel)
        except meta.MetaError as e:
            self.bad(e.where, e.message)
            return None

    def jsonl(self, rel: str) -> list[dict] | None:
        try:
            rows, problems = meta.read_jsonl(self.root, rel)
        except meta.MetaError as e:
            self.bad(e.where, e.message)
            return None
        for e in problems:
            self.bad(e.where, e.message)
        return rows


def validate(root: str | Path, deep: bool = True) -> list[Violation]:
    """All violations found in the dataset folder ``root`` (empty list: it conforms).

    ``deep=False``: parquet files are checked from their footers (see the module docstring).
    """
    c = _Checker(Path(root))
    if not c.root.is_dir():
        return [Violation(str(root), "not a directory")]
    info = c.json(layout.INFO_PATH)
    episodes = c.jsonl(layout.EPISODES_PATH)
    tasks = c.jsonl(layout.TASKS_PATH)
    modality = c.json(layout.MODALITY_PATH)
    stats = c.json(layout.STATS_PATH)
    ep_stats = c.jsonl(layout.EPISODES_STATS_PATH)
    if info is None or episodes is None or tasks is None:
        return c.out
    missing = [k for k in layout.INFO_KEYS if k not in info]
    if missing:
        c.bad(layout.INFO_PATH, f"missing keys {missing}")
        return c.out
    if info["codebase_version"] != layout.CODEBASE_VERSION:
        c.bad(
            layout.INFO_PATH, f"codebase_version is {info['codebase_version']!r}, expected {layout.CODEBASE_VERSION!r}"
        )
        return c.out  # the rest is checked against the v2.1 layout, which this dataset does not follow
    features: dict = info["features"]
    fps = info["fps"]
    n = len(episodes)

    task_ids = set()
    for k, t in enumerate(tasks):
        if t.get("task_index") != k or not isinstance(t.get("task"), str):
            c.bad(layout.TASKS_PATH, f"line {k + 1}: expected {{'task_index': {k}, 'task': str}}, got {t}")
        task_ids.add(t.get("task_index"))
    task_names = {t.get("task") for t in tasks}

    for k, e in enumerate(episodes):
        if e.get("episode_index") != k:
            c.bad(
                layout.EPISODES_PATH,
                f"line {k + 1}: episode_index {e.get('episode_index')} != {k} (indices must run 0..N-1 in order)",
            )
        if not isinstance(e.get("length"), int) or e["length"] < 1:
            c.bad(layout.EPISODES_PATH, f"line {k + 1}: bad length {e.get('length')!r}")
        if not isinstance(e.get("tasks"), list) or any(t not in task_names for t in e["tasks"]):
            c.bad(layout.EPISODES_PATH, f"line {k + 1}: tasks {e.get('tasks')!r} not all in tasks.jsonl")
    total_frames = sum(e.get("length", 0) for e in episodes if isinstance(e.get("length"), int))
    videos = [k for k, f in features.items() if f.get("dtype") == "video"]
    expect = {
        "total_episodes": n,
        "total_frames": total_frames,
        "total_tasks": len(tasks),
        "total_videos": n * len(videos),
        "total_chunks": math.ceil(n / info["chunks_size"]),
        "splits": {"train": f"0:{n}"},
    }
    for key, want in expect.items():
        if info[key] != want:
            c.bad(layout.INFO_PATH, f"{key} is {info[key]!r}, expected {want!r}")

    for key in (layout.STATE, layout.ACTION):
        f = features.get(key)
        if f is None:
            c.bad(layout.INFO_PATH, f"features.{key} missing")
            continue
        if f.get("dtype") != "float32":
            c.bad(layout.INFO_PATH, f"features.{key}.dtype is {f.get('dtype')!r}, expected 'float32'")
        names = f.get("names")
        if not isinstance(names, list) or len(names) != f.get("shape", [None])[0]:
            c.bad(layout.INFO_PATH, f"features.{key}.names must list every one of the {f.get('shape')} dimensions")
    for key in videos:
        f = features[key]
        vi = f.get("info") or {}
        if f.get("names") != list(layout.VIDEO_NAMES):
            c.bad(layout.INFO_PATH, f"features.{key}.names must be {list(layout.VIDEO_NAMES)}")
        if not key.startswith(layout.VIDEO_PREFIX):
            c.bad(layout.INFO_PATH, f"features.{key}: video keys must be {layout.VIDEO_PREFIX}<camera>")
        pix_fmt = vi.get("video.pix_fmt")
        if pix_fmt not in layout.VIDEO_PIX_FMTS:
            want = " or ".join(layout.VIDEO_PIX_FMTS)
            c.bad(layout.INFO_PATH, f"features.{key}.info.video.pix_fmt is {pix_fmt!r}, expected {want}")
        # the size is checked against the shape below, the pixel format above
        for k2, want in layout.video_info(vi.get("video.height"), vi.get("video.width"), fps, pix_fmt).items():
            if vi.get(k2) != want:
                c.bad(layout.INFO_PATH, f"features.{key}.info.{k2} is {vi.get(k2)!r}, expected {want!r}")
        if [vi.get("video.height"), vi.get("video.width"), 3] != f.get("shape"):
            c.bad(layout.INFO_PATH, f"features.{key}: shape {f.get('shape')} != info height/width")
    annotation_cols = [k for k in features if k.startswith(layout.ANNOTATION_PREFIX)]

    if modality is not None:
        _check_modality(c, modality, features, annotation_cols)
    if stats is not None:
        for key, f in features.items():
            if f.get("dtype") not in layout.FLOAT_DTYPES:
                continue
            s = stats.get(key)
            if not isinstance(s, dict) or any(k not in s for k in layout.STATS_KEYS):
                c.bad(layout.STATS_PATH, f"{key}: needs all of {list(layout.STATS_KEYS)}")
                continue
            for k in layout.STATS_KEYS:
                if np.shape(s[k]) != tuple(f["shape"]):
                    c.bad(layout.STATS_PATH, f"{key}.{k}: shape {np.shape(s[k])} != {tuple(f['shape'])}")
    if ep_stats is not None:
        if [e.get("episode_index") for e in ep_stats] != list(range(n)):
            c.bad(layout.EPISODES_STATS_PATH, "must hold one line per episode, episode_index 0..N-1 in order")
        for e in ep_stats:
            for key, s in (e.get("stats") or {}).items():
                if not isinstance(s, dict) or any(k not in s for k in layout.EPISODE_STATS_KEYS):
                    c.bad(
                        layout.EPISODES_STATS_PATH,
                        f"episode {e.get('episode_index')}: {key} needs {', '.join(layout.EPISODE_STATS_KEYS)}",
                    )

    offset = 0
    for k, e in enumerate(episodes):
        length = e.get("length") if isinstance(e.get("length"), int) else 0
        rel = layout.data_path(k, info["chunks_size"], info["data_path"])
        _check_parquet(c, rel, k, length, offset, fps, features, task_ids, deep)
        for key in videos:
            vrel = layout.video_path(k, key, info["chunks_size"], info["video_path"])
            _check_video(c, vrel, length, fps, features[key])
        offset += length
    return c.out


def _check_modality(c: _Checker, modality: dict, features: dict, annotation_cols: list[str]) -> None:
    rel = layout.MODALITY_PATH
    for block in ("state", "action", "video"):
        if not isinstance(modality.get(block), dict):
            c.bad(rel, f"missing block {block!r} (GR00T N1/N1.5 require state, action, video)")
    for block, feat in (("state", layout.STATE), ("action", layout.ACTION)):
        dim = (features.get(feat) or {}).get("shape", [0])[0]
        covered = np.zeros(dim, dtype=int)
        for key, e in (modality.get(block) or {}).items():
            a, b = e.get("start"), e.get("end")
            if not (isinstance(a, int) and isinstance(b, int) and 0 <= a < b <= dim):
                c.bad(rel, f"{block}.{key}: bad slice [{a}, {b}) for {dim} dims")
                continue
            covered[a:b] += 1
            rt = e.get("rotation_type")
            if rt is not None and rt not in ROTATION_WIDTHS:
                c.bad(rel, f"{block}.{key}: unknown rotation_type {rt!r}")
            elif rt is not None and b - a != ROTATION_WIDTHS[rt]:
                c.bad(
                    rel,
                    f"{block}.{key}: rotation_type {rt} on {b - a} columns; GR00T converts the whole key, "
                    f"which must be exactly {ROTATION_WIDTHS[rt]} wide",
                )
            if "absolute" in e and not isinstance(e["absolute"], bool):
                c.bad(rel, f"{block}.{key}: absolute must be true or false, got {e['absolute']!r}")
        if dim and not (covered == 1).all():
            c.bad(rel, f"{block}: slices must cover every one of the {dim} dims exactly once")
    for key, e in (modality.get("video") or {}).items():
        ok = (e or {}).get("original_key")
        if ok not in features or features[ok].get("dtype") != "video":
            c.bad(rel, f"video.{key}: original_key {ok!r} is not a video feature")
    for key in modality.get("annotation") or {}:
        if f"{layout.ANNOTATION_PREFIX}{key}" not in annotation_cols:
            c.bad(rel, f"annotation.{key}: no column annotation.{key} in features")


_ARROW_TYPES = {"float32": pa.float32(), "float64": pa.float64(), "int64": pa.int64(), "bool": pa.bool_()}


def _check_parquet(
    c: _Checker,
    rel: str,
    k: int,
    length: int,
    offset: int,
    fps: float,
    features: dict,
    task_ids: set,
    deep: bool = True,
) -> None:
    p = c.root / rel
    if not p.is_file():
        c.bad(rel, "missing")
        return
    try:
        # ParquetFile on the path string: pq.read_metadata and read_table first resolve a filesystem for it,
        # which costs more per file than reading a small footer
        with pq.ParquetFile(str(p)) as pf:
            if not deep and _check_footer(c, rel, pf.metadata, k, length, offset, fps, features, task_ids):
                return
            t = pf.read()
    except Exception as e:  # noqa: BLE001 - any reader error is a violation
        c.bad(rel, f"unreadable parquet ({e})")
        return
    cols = layout.parquet_columns(features)
    if sorted(t.column_names) != sorted(cols):
        c.bad(rel, f"columns {t.column_names} != features {cols}")
        return
    if t.num_rows != length:
        c.bad(rel, f"{t.num_rows} rows but episodes.jsonl length is {length}")
        return
    for key in cols:
        shape = features[key]["shape"]
        col = t.column(key)
        if len(shape) == 1 and shape[0] > 1 or features[key].get("names"):
            lengths = col.combine_chunks().value_lengths().to_numpy(zero_copy_only=False)
            if (lengths != shape[0]).any():
                c.bad(rel, f"{key}: rows must hold {shape[0]} values")
            if features[key]["dtype"] == "float32":
                vals = col.combine_chunks().flatten().to_numpy(zero_copy_only=False)
                if str(vals.dtype) != "float32":
                    c.bad(rel, f"{key}: values are {vals.dtype}, expected float32")
                elif not np.isfinite(vals).all():
                    c.bad(rel, f"{key}: non-finite values")
    fi = t.column(layout.FRAME_INDEX).to_numpy()
    if not np.array_equal(fi, np.arange(length)):
        c.bad(rel, "frame_index must run 0..T-1")
    ts = t.column(layout.TIMESTAMP).to_numpy()
    if ts.dtype != np.float32 or not np.array_equal(ts, (np.arange(length) / fps).astype(np.float32)):
        c.bad(rel, "timestamp must be float32 frame_index / fps")
    if not (t.column(layout.EPISODE_INDEX).to_numpy() == k).all():
        c.bad(rel, f"episode_index must be {k} on every row")
    if not np.array_equal(t.column(layout.INDEX).to_numpy(), np.arange(offset, offset + length)):
        c.bad(rel, f"index must run {offset}..{offset + length - 1} (global frame index)")
    for key in [layout.TASK_INDEX, *[col for col in cols if col.startswith(layout.ANNOTATION_PREFIX)]]:
        used = set(np.unique(t.column(key).to_numpy()).tolist())
        if not used <= task_ids:
            c.bad(rel, f"{key}: indices {sorted(used - task_ids)} not in tasks.jsonl")
    if layout.DONE in cols:
        done = t.column(layout.DONE).to_numpy(zero_copy_only=False)
        if not done[-1] or done[:-1].any():
            c.bad(rel, "next.done must be true on the last row only")


class _FooterLayout:
    """What a footer check derives from a parquet schema and the features alone (same for every
    episode of a dataset, so computed once per schema): type violations, and the column index of
    each list column's leaf and each index column."""

    def __init__(self, schema: pa.Schema, parquet_schema: pq.ParquetSchema, features: dict):
        self.cols = layout.parquet_columns(features)
        self.annotations = [col for col in self.cols if col.startswith(layout.ANNOTATION_PREFIX)]
        self.names_ok = sorted(schema.names) == sorted(self.cols)
        self.names = schema.names
        self.type_errors: list[str] = []
        self.lists: list[tuple[str, int, list[int]]] = []  # (key, width, leaf column indices)
        if not self.names_ok:
            return
        leaf = {parquet_schema.column(j).path: j for j in range(len(parquet_schema))}
        for key in self.cols:
            f, typ = features[key], schema.field(key).type
            want = _ARROW_TYPES.get(f.get("dtype"))
            shape = f["shape"]
            if len(shape) == 1 and shape[0] > 1 or f.get("names"):
                if not (pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ)):
                    self.type_errors.append(f"{key}: type {typ}, expected a list of {f.get('dtype')}")
                    continue
                if want is not None and typ.value_type != want:
                    self.type_errors.append(f"{key}: values are {typ.value_type}, expected {f.get('dtype')}")
                self.lists.append(
                    (key, shape[0], [leaf[p] for p in (f"{key}.list.element", f"{key}.list.item") if p in leaf])
                )
            elif want is not None and typ != want:
                self.type_errors.append(f"{key}: type {typ}, expected {f.get('dtype')}")
        self.ranged = {key: leaf.get(key) for key in (*layout.INDEX_FEATURES, *self.annotations)}


def _footer_layout(c: _Checker, md: pq.FileMetaData, features: dict) -> _FooterLayout:
    for schema, lay in c.footer_layouts:  # one validate() call: one features dict
        if md.schema.equals(schema):
            return lay
    lay = _FooterLayout(md.schema.to_arrow_schema(), md.schema, features)
    c.footer_layouts = [*c.footer_layouts[-7:], (md.schema, lay)]
    return lay


def _check_footer(
    c: _Checker,
    rel: str,
    md: pq.FileMetaData,
    k: int,
    length: int,
    offset: int,
    fps: float,
    features: dict,
    task_ids: set,
) -> bool:
    """Check one parquet from its footer; False when it lacks the statistics (check it in full)."""
    lay = _footer_layout(c, md, features)
    if not lay.names_ok:
        c.bad(rel, f"columns {lay.names} != features {lay.cols}")
        return True
    if md.num_rows != length:
        c.bad(rel, f"{md.num_rows} rows but episodes.jsonl length is {length}")
        return True
    for msg in lay.type_errors:
        c.bad(rel, msg)
    groups = [md.row_group(g) for g in range(md.num_row_groups)]
    for key, width, leaves in lay.lists:
        chunks = [rg.column(j) for rg in groups for j in leaves]
        if sum(ch.num_values for ch in chunks) != length * width or any(
            ch.statistics is not None and ch.statistics.null_count for ch in chunks
        ):
            c.bad(rel, f"{key}: rows must hold {width} values")

    ranges = {}
    for key, j in lay.ranged.items():
        st = [rg.column(j).statistics for rg in groups] if j is not None else []
        if not st or any(s is None or not s.has_min_max for s in st):
            return False
        ranges[key] = min(s.min for s in st), max(s.max for s in st)
    if ranges[layout.FRAME_INDEX] != (0, length - 1):
        c.bad(rel, "frame_index must run 0..T-1")
    lo, hi = ranges[layout.TIMESTAMP]
    if lo != 0 or hi != np.float32((length - 1) / fps):
        c.bad(rel, "timestamp must be float32 frame_index / fps")
    if ranges[layout.EPISODE_INDEX] != (k, k):
        c.bad(rel, f"episode_index must be {k} on every row")
    if ranges[layout.INDEX] != (offset, offset + length - 1):
        c.bad(rel, f"index must run {offset}..{offset + length - 1} (global frame index)")
    for key in [layout.TASK_INDEX, *lay.annotations]:
        lo, hi = ranges[key]
        if not {lo, hi} <= task_ids:
            c.bad(rel, f"{key}: indices {sorted({lo, hi} - task_ids)} not in tasks.jsonl")
    return True


def _check_video(c: _Checker, rel: str, length: int, fps: float, feature: dict) -> None:
    """One MP4 against its feature in info.json: codec, declared pixel format, size, frames and their times."""
    from l3.video import probe

    shape, pix_fmt = feature["shape"], (feature.get("info") or {}).get("video.pix_fmt")
    p = c.root / rel
    if not p.is_file():
        c.bad(rel, "missing")
        return
    try:
        v = probe(p)
    except Exception as e:  # noqa: BLE001
        c.bad(rel, f"unreadable video ({e})")
        return
    if v["codec"] != layout.VIDEO_CODEC or v["pix_fmt"] != pix_fmt:
        c.bad(rel, f"{v['codec']}/{v['pix_fmt']}, expected {layout.VIDEO_CODEC}/{pix_fmt} (info.json's video.pix_fmt)")
    if [v["height"], v["width"], 3] != list(shape):
        c.bad(rel, f"frames {v['height']}x{v['width']}, info.json says {shape[0]}x{shape[1]}")
    if v["frames"] != length:
        c.bad(rel, f"{v['frames']} frames but the episode has {length} rows")
    elif v["pts"] and not np.allclose(v["pts"], np.arange(length) / fps, atol=1e-3):
        c.bad(rel, f"frame i must be presented at i/fps from 0 (first at {v['pts'][0]})")
    if v["audio"]:
        c.bad(rel, "has an audio stream")


def main(argv: list[str] | None = None) -> int:
    from l2.format.cli_args import Parser, existing_folder

    p = Parser(
        prog="python -m l3.validate",
        description="Check a GR00T LeRobot v2.1 dataset folder against the L3 output spec.",
        epilog="Exit status: 0 valid, 1 at least one violation (one per line on stdout, a count on stderr), "
        "2 usage error or a path that is missing or not a folder (one line, nothing checked).",
    )
    p.add_argument("dir", type=existing_folder, help="dataset folder (holds meta/, data/, videos/)")
    p.add_argument(
        "--fast",
        action="store_true",
        help="check each parquet from its footer (schema, rows, widths, index ranges) instead of "
        "reading every value (what the converter runs on its own output)",
    )
    args = p.parse_args(argv)
    violations = validate(args.dir, deep=not args.fast)
    for v in violations:
        print(v)
    if violations:
        print(f"{len(violations)} violation(s) in {args.dir}", file=sys.stderr)
        return 1
    print(f"ok: {args.dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
