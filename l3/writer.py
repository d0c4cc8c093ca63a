"""GR00T LeRobot v2.1 writer: one parquet (+ one MP4 per camera) per episode, then meta/.

What is written where is described by :mod:`l3.layout`. :class:`MetaWriter` owns the dataset's
metadata: it numbers the episodes (episode index, global frame offset, task indices) once, before
any is written, and writes ``meta/``. Episodes are written under those numbers by
:func:`write_episode` (safe to run in worker processes: it touches only its own files); the main
process hands their results to the :class:`MetaWriter` in episode order.
"""

from __future__ import annotations

import contextlib
import json
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from l3 import layout as lay
from l3 import stats as st
from l3.episode import Episode
from l3.layout import Layout
from l3.video import encode


@dataclass(frozen=True)
class EpisodeJob:
    """Where one episode goes: its index, global frame offset, task indices and task texts."""

    index: int
    offset: int
    task_index: int
    validity_index: int
    tasks: list[str]


@dataclass
class EpisodeResult:
    """What the main process needs from a written episode (small: no frame data).

    ``stats`` is the episode's episodes_stats.jsonl entry: every column in order, then every camera.
    """

    length: int
    job: EpisodeJob
    success: bool
    fields: dict[str, Any]
    stats: dict[str, dict]
    floats: dict[str, np.ndarray]
    moments: dict[str, st.Moments]
    """Moments of ``floats`` (merged into the dataset statistics)."""
    video_frames: int


def _parquet_options(layout: Layout) -> dict:
    """pq.write_table options: dictionary encoding only where it pays (constant columns), no
    statistics for the list columns (nothing reads them; the scalar columns keep theirs, which
    ``l3.validate`` checks)."""
    const = [lay.EPISODE_INDEX, lay.TASK_INDEX, *(c for c, _ in layout.annotation_columns()), lay.REWARD]
    scalars = [c for c in layout.columns if c not in (lay.STATE, lay.ACTION)]
    return {"compression": "snappy", "use_dictionary": const, "write_statistics": scalars}


def _list_column(rows: np.ndarray) -> pa.Array:
    """list<float32> straight from a (T, d) float32 array (no FixedSizeList, no cast, no copy)."""
    flat = pa.array(np.ascontiguousarray(rows, dtype=np.float32).reshape(-1))
    offsets = pa.array(np.arange(len(rows) + 1, dtype=np.int32) * np.int32(rows.shape[1]))
    return pa.ListArray.from_arrays(offsets, flat)


_CACHE: dict[tuple, Any] = {}


def _cached(key: tuple, make):
    v = _CACHE.get(key)
    if v is None:
        if len(_CACHE) > 4096:
            _CACHE.clear()
        v = _CACHE[key] = make()
    return v


def _frame_columns(T: int, fps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """frame_index, timestamp and next.done of a T-row episode (shared, read-only)."""

    def make():
        fi = np.arange(T, dtype=np.int64)
        ts = (fi / fps).astype(np.float32)
        done = np.zeros(T, dtype=bool)
        done[-1] = True
        for a in (fi, ts, done):
            a.flags.writeable = False
        return fi, ts, done

    return _cached(("frames", T, fps), make)


def _reward(T: int, success: bool) -> np.ndarray:
    def make():
        r = np.zeros(T, dtype=np.float32)
        r[-1] = 1.0 if success else 0.0
        r.flags.writeable = False
        return r

    return _cached(("reward", T, bool(success)), make)


def _const_stats(v: int, T: int) -> dict:
    """episode_feature_stats of a constant int64 column (exact: what numpy gives)."""
    return {"min": [int(v)], "max": [int(v)], "mean": [float(v)], "std": [0.0], "count": [T]}


def numbered_stats(layout: Layout, T: int, job: EpisodeJob) -> dict[str, dict]:
    """Per-episode stats of the columns that hold ``job``'s numbers (episode, global and task indices)."""
    fi = _cached(("fi-stats", T), lambda: st.episode_feature_stats(np.arange(T, dtype=np.int64)))
    out = {
        lay.EPISODE_INDEX: _const_stats(job.index, T),
        lay.INDEX: {
            "min": [job.offset],
            "max": [job.offset + T - 1],
            "mean": [job.offset + (T - 1) / 2],
            "std": fi["std"],
            "count": [T],
        },
        lay.TASK_INDEX: _const_stats(job.task_index, T),
    }
    for col, kind in layout.annotation_columns():
        out[col] = _const_stats(job.task_index if kind == "task" else job.validity_index, T)
    return out


def episode_table(layout: Layout, state: np.ndarray, action: np.ndarray, job: EpisodeJob, success: bool) -> pa.Table:
    """The parquet table of one episode (built from numpy directly)."""
    T = len(state)
    fi, ts, done, rw = _cached(
        ("pa-frames", T, layout.fps, bool(success)),
        lambda: tuple(pa.array(a) for a in (*_frame_columns(T, layout.fps), _reward(T, success))),
    )
    const = lambda v: _cached(("pa-const", T, v), lambda: pa.array(np.full(T, v, dtype=np.int64)))  # noqa: E731
    cols = {
        lay.STATE: _list_column(state),
        lay.ACTION: _list_column(action),
        lay.TIMESTAMP: ts,
        lay.FRAME_INDEX: fi,
        lay.EPISODE_INDEX: pa.array(np.full(T, job.index, dtype=np.int64)),
        lay.INDEX: pa.array(np.arange(job.offset, job.offset + T, dtype=np.int64)),
        lay.TASK_INDEX: const(job.task_index),
        lay.REWARD: rw,
        lay.DONE: done,
    }
    for col, kind in layout.annotation_columns():
        cols[col] = const(job.task_index if kind == "task" else job.validity_index)
    return pa.Table.from_arrays([cols[c] for c in layout.columns], names=list(layout.columns))


def write_table(path: Path, layout: Layout, table: pa.Table) -> None:
    """Write one episode's parquet."""
    options = _cached(("options", *layout.columns), lambda: _parquet_options(layout))
    try:
        sink = pa.OSFile(str(path), "wb")  # a plain file sink: cheaper than pq's filesystem layer
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        sink = pa.OSFile(str(path), "wb")
    with sink:
        pq.write_table(table, sink, **options)


class BackgroundWrites:
    """Parquet files written by one thread of their own, in order, while the caller reads the next episode:
    pyarrow releases the GIL while it encodes and writes, so a single converter process keeps two cores busy.
    At most ``depth`` writes wait; :meth:`drain` waits for all of them and raises the first error."""

    def __init__(self, depth: int = 2) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="l3-parquet")
        self._pending: deque[Future] = deque()
        self._depth = depth

    def submit(
        self, path: Path, layout: Layout, state: np.ndarray, action: np.ndarray, job: EpisodeJob, success: bool
    ) -> None:
        """Build the episode's table and write it (in the background)."""
        while len(self._pending) >= self._depth:
            self._pending.popleft().result()
        self._pending.append(
            self._pool.submit(lambda: write_table(path, layout, episode_table(layout, state, action, job, success)))
        )

    def drain(self) -> None:
        while self._pending:
            self._pending.popleft().result()

    def close(self) -> None:
        """Stop: writes not started are dropped, a running one is waited for (no file appears after this)."""
        for f in self._pending:
            f.cancel()
        self._pending.clear()
        self._pool.shutdown(wait=True)


def _fixed_stats(T: int, fps: int, success: bool) -> dict:
    """Stats of the columns fixed by T and success (timestamp, frame_index, next.*)."""

    def make():
        fi, ts, done = _frame_columns(T, fps)
        rw = _reward(T, success)
        return {
            lay.TIMESTAMP: st.episode_feature_stats(ts),
            lay.FRAME_INDEX: st.episode_feature_stats(fi),
            lay.REWARD: st.episode_feature_stats(rw),
            lay.DONE: st.episode_feature_stats(done),
        }

    return _cached(("float-stats", T, fps, bool(success)), make)


def episode_paths(root: Path, layout: Layout, index: int) -> list[Path]:
    """Every file :func:`write_episode` writes for episode ``index``."""
    return [root / layout.data_path(index), *(root / layout.video_path(index, c.key) for c in layout.mapping.cameras)]


def write_episode(
    root: Path, layout: Layout, ep: Episode, job: EpisodeJob, writes: BackgroundWrites | None = None
) -> EpisodeResult:
    """Write one episode's parquet and videos under ``root`` with ``job``'s numbers; return its stats.

    With ``writes`` the parquet is handed to that background writer (the caller drains it). If anything
    fails (an unreadable camera frame raises InputError while encoding), the files of this episode are
    removed before the exception propagates.
    """
    T, i, fps = ep.length, job.index, layout.fps
    m = layout.mapping
    try:
        state = np.concatenate([ep.state[s.key] for s in m.state], axis=1, dtype=np.float32)
        action = np.concatenate([ep.action[s.key] for s in m.action], axis=1, dtype=np.float32)
        if writes is None:
            write_table(root / layout.data_path(i), layout, episode_table(layout, state, action, job, ep.success))
        else:
            writes.submit(root / layout.data_path(i), layout, state, action, job, ep.success)

        both = st.Moments.of(np.concatenate([state, action], axis=1))  # one pass over both features
        ds = state.shape[1]
        moments = {lay.STATE: both.columns(0, ds), lay.ACTION: both.columns(ds, None)}
        known = {k: st.moments_stats(m) for k, m in moments.items()}
        known.update(_fixed_stats(T, fps, ep.success))
        known.update(numbered_stats(layout, T, job))
        stats = {c: known[c] for c in layout.columns}

        video_frames = 0
        for cam in m.cameras:
            vpath = root / layout.video_path(i, cam.key)
            vpath.parent.mkdir(parents=True, exist_ok=True)
            pix = st.PixelStats()
            n = encode(vpath, ep.cameras[cam.key].chunks(), fps, layout.video_options(cam.key), pix)
            if n != T:
                raise ValueError(f"camera {cam.key}: encoded {n} frames for {T} rows")
            stats[lay.video_key(cam.key)] = pix.to_json(n)
            video_frames += n
    except BaseException:
        for p in episode_paths(root, layout, i):
            p.unlink(missing_ok=True)
        raise
    fields = {"source": ep.source, "success": bool(ep.success), **ep.fields}
    return EpisodeResult(
        T, job, bool(ep.success), fields, stats, {lay.STATE: state, lay.ACTION: action}, moments, video_frames
    )


_JSON = json.JSONEncoder(ensure_ascii=False).encode  # json.dumps(..., ensure_ascii=False) builds one per call


def _jsonl_line(obj: dict) -> str:
    return _JSON(obj) + "\n"


def number_episodes(layout: Layout, episodes: Sequence[tuple[str, bool, int]]) -> tuple[list[str], list[EpisodeJob]]:
    """tasks.jsonl and each episode's numbers, for the episodes to write (``(task, success, length)`` each, in
    order): tasks in order of first use, then "valid" / "invalid" when the validity annotation uses them."""
    validity = any(kind == "validity" for _, kind in layout.mapping.annotations)
    tasks = list(dict.fromkeys(task for task, _, _ in episodes))
    if validity:
        tasks += [
            t
            for t in (lay.VALID, lay.INVALID)
            if any(ok == (t == lay.VALID) for _, ok, _ in episodes) and t not in tasks
        ]
    task_id = {t: k for k, t in enumerate(tasks)}
    jobs, offset = [], 0
    for index, (task, ok, length) in enumerate(episodes):
        label = lay.VALID if ok else lay.INVALID
        jobs.append(
            EpisodeJob(
                index=index,
                offset=offset,
                task_index=task_id[task],
                validity_index=task_id.get(label, task_id[task]),
                # The instruction only: GR00T N1.6's loader draws a random entry of this list as the episode's
                # language when a training config reads the key "task"; the validity label is the column's.
                tasks=[task],
            )
        )
        offset += length
    return tasks, jobs


class MetaWriter:
    """The owner of the dataset's metadata: numbers the episodes, then writes ``meta/``.

    Built with the episodes to write (``(task, success, length)`` each, in order), it fixes their
    numbers (:attr:`jobs`: episode index, global frame offset, task indices) and the task list
    before anything is written. :meth:`add` takes each written episode's result in episode order
    and streams episodes.jsonl / episodes_stats.jsonl; :meth:`finish` writes the rest.

    Dataset statistics: moments merged exactly and q01/q99 from streaming histograms
    (:class:`l3.stats.StreamingHistogram`), so no range has to be known before the first episode.
    """

    def __init__(self, root: Path, layout: Layout, episodes: Sequence[tuple[str, bool, int]]):
        self.root, self.layout = root, layout
        self.tasks, self.jobs = number_episodes(layout, episodes)
        (root / lay.META).mkdir(parents=True, exist_ok=True)
        # Both stay open while episodes are added, one line each; finish() closes them.
        self._episodes = open(root / lay.EPISODES_PATH, "w", encoding="utf-8")  # noqa: SIM115
        self._ep_stats = open(root / lay.EPISODES_STATS_PATH, "w", encoding="utf-8")  # noqa: SIM115
        self.episodes = self.frames = 0
        self.hist = {k: st.StreamingHistogram() for k in layout.float_features}

    def add(self, r: EpisodeResult) -> None:
        """Append one written episode (the next one in order)."""
        job = r.job
        if job != self.jobs[self.episodes]:
            raise ValueError(f"episode {job.index} added out of order (expected {self.episodes})")
        self._episodes.write(
            _jsonl_line({"episode_index": job.index, "tasks": job.tasks, "length": r.length, **r.fields})
        )
        self._ep_stats.write(_jsonl_line({"episode_index": job.index, "stats": r.stats}))
        T, fps = r.length, self.layout.fps
        for k in (lay.STATE, lay.ACTION):
            self.hist[k].add(r.floats[k], r.moments[k])
        ts, rw = _frame_columns(T, fps)[1], _reward(T, r.success)
        self.hist[lay.TIMESTAMP].add(ts, _cached(("ts-moments", T, fps), lambda: st.Moments.of(ts)))
        self.hist[lay.REWARD].add(rw, _cached(("rw-moments", T, r.success), lambda: st.Moments.of(rw)))
        self.episodes += 1
        self.frames += r.length

    def finish(self) -> None:
        """Write info.json, tasks.jsonl, modality.json and stats.json; close the jsonl streams."""
        self._episodes.close()
        self._ep_stats.close()
        L = self.layout
        _write_json(self.root / lay.INFO_PATH, L.info(self.episodes, self.frames, len(self.tasks)))
        with open(self.root / lay.TASKS_PATH, "w", encoding="utf-8") as f:
            f.writelines(_jsonl_line({"task_index": k, "task": t}) for k, t in enumerate(self.tasks))
        _write_json(self.root / lay.MODALITY_PATH, L.modality())
        stats = {}
        for k in L.float_features:
            h = self.hist[k]
            h.flush()
            m = h.moments
            s = {"mean": m.mean, "std": m.std, "min": m.min, "max": m.max}
            for name, q in st.QUANTILES.items():
                s[name] = h.quantile(q, m.min, m.max)
            stats[k] = {name: st.to_json(v) for name, v in s.items()}
        _write_json(self.root / lay.STATS_PATH, stats)

    def abort(self) -> None:
        """Close the streams of a dataset that will not be finished (their last buffered lines may not fit on a
        full disk: no matter, the folder is removed)."""
        for stream in (self._episodes, self._ep_stats):
            with contextlib.suppress(OSError):
                stream.close()


def _write_json(path: Path, obj: Any) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=4, ensure_ascii=False)
        f.write("\n")
