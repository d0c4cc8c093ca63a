"""Inspection reports: one self-contained HTML page (plots embedded as images) about a set of episodes.

:class:`ReportBuilder` takes episodes one at a time (:meth:`ReportBuilder.add`) and keeps only what the
page shows, so memory does not grow with the dataset: per-episode source, success and length, a bounded
uniform sample of the action values (:class:`ValueSample`), the trajectories of a few chosen episodes,
cube start positions and the end-effector paths of at most ``max_paths`` episodes. Frame strips and tables
are added by the caller. :meth:`ReportBuilder.html` renders it all with matplotlib (Agg, no display).

Used by ``python -m l2.tools.inspect_demos`` (L2 HDF5 files) and ``python -m l3.inspect_dataset`` (GR00T LeRobot
datasets);
needs numpy, matplotlib and Pillow only (no Isaac Lab).
"""

from __future__ import annotations

import base64
import html
import io
import os
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from l2.format import atomic
from l2.format.interrupts import interrupted_line, terminate_as_interrupt

SAMPLE_VALUES = 200_000
"""Action values kept per dimension for the histograms (all of them in datasets up to that many frames)."""
TRACED = 4
"""Episodes whose state and action trajectories are drawn, by default."""
MAX_PATHS = 100
"""End-effector paths drawn in the top-down plot at most (evenly spread over the episodes)."""
GRID_COLS = 4
"""Subplots per row in the per-dimension grids."""


class InspectError(Exception):
    """Bad input: ``str(e)`` is the one-line message naming the file and the path inside it."""


@dataclass
class EpisodeData:
    """What the report needs of one episode; ``state`` / ``action`` map a dimension's name to its (T,) values."""

    label: str
    """How the page names it, e.g. ``scripted_lift_cube.hdf5 demo_0`` or ``episode 3``."""
    source: str
    success: bool | None
    length: int
    action: dict[str, np.ndarray] = field(default_factory=dict)
    state: dict[str, np.ndarray] = field(default_factory=dict)
    cube_xy: np.ndarray | None = None
    """(2,) cube x, y at the first frame."""
    cube_end_xy: np.ndarray | None = None
    """(2,) cube x, y at the last frame."""
    ee_xy: np.ndarray | None = None
    """(T, 2) end-effector x, y over the episode."""
    instruction: str | None = None
    scene: dict | None = None
    """The values ``presets=variety`` drew for the episode (the demo's ``scene`` attribute)."""


def columns(names: Sequence[str], values: np.ndarray) -> dict[str, np.ndarray]:
    """A (T, d) array as {name: (T,) column}, for :class:`EpisodeData` (views, no copies)."""
    return {n: values[:, i] for i, n in enumerate(names)}


def choose_episodes(sources: Sequence[str], n: int) -> list[int]:
    """Indices of ``n`` episodes to trace: the first of each source, then evenly spread ones, in order."""
    chosen = list(dict.fromkeys(sources.index(s) for s in dict.fromkeys(sources)))[:n]
    for i in np.linspace(0, len(sources) - 1, max(n, 1)).round().astype(int):
        if len(chosen) >= n:
            break
        if int(i) not in chosen:
            chosen.append(int(i))
    return sorted(chosen)


def spread(total: int, n: int) -> set[int]:
    """At most ``n`` indices evenly spread over ``range(total)``."""
    return set(np.linspace(0, total - 1, min(n, total)).round().astype(int).tolist()) if total else set()


class ValueSample:
    """A uniform sample without replacement of at most ``size`` values of a stream: each value gets a
    random key and the ``size`` smallest keys are kept (memory ``size``, whatever the stream's length)."""

    def __init__(self, size: int, rng: np.random.Generator):
        self.size, self.rng = size, rng
        self.keys = np.empty(0)
        self.values = np.empty(0, np.float32)
        self.seen = 0

    def add(self, values: np.ndarray) -> None:
        values = np.asarray(values, np.float32).ravel()
        values = values[np.isfinite(values)]
        self.seen += len(values)
        keys = np.concatenate([self.keys, self.rng.random(len(values))])
        vals = np.concatenate([self.values, values])
        if len(keys) > self.size:
            keep = np.argpartition(keys, self.size)[: self.size]
            keys, vals = keys[keep], vals[keep]
        self.keys, self.values = keys, vals


@dataclass
class Table:
    title: str
    header: Sequence[str]
    rows: list[Sequence[object]]
    note: str = ""


class ReportBuilder:
    """Collects episodes (streamed) and extra sections, then renders one HTML page."""

    def __init__(
        self,
        title: str,
        traced: Sequence[int] = (),
        path_episodes: set[int] | None = None,
        sample_values: int = SAMPLE_VALUES,
        seed: int = 0,
    ):
        """``traced``: indices (in :meth:`add` order) of the episodes whose trajectories are drawn;
        ``path_episodes``: those whose end-effector path is drawn (None: every one)."""
        self.title = title
        self.source_title = "Episodes per source"
        self.traced = set(traced)
        self.path_episodes = path_episodes
        self.sample_values = sample_values
        self.rng = np.random.default_rng(seed)
        self.episodes: list[tuple[str, bool | None, int]] = []  # (source, success, length)
        self.samples: dict[str, ValueSample] = {}
        self.trajectories: list[EpisodeData] = []
        self.cubes: list[tuple[str, bool | None, np.ndarray]] = []
        self.cube_ends: list[tuple[str, np.ndarray]] = []
        self.paths: list[tuple[str, np.ndarray]] = []
        self.facts: list[tuple[str, str]] = []
        self.strips: list[tuple[str, np.ndarray]] = []
        self.tables: list[Table] = []
        self.notes: list[str] = []
        self.top_down_caption = ""
        self.instructions: Counter[str] = Counter()
        self.scenes: list[dict] = []

    # ------------------------------------------------------------------ collecting
    def add(self, ep: EpisodeData) -> None:
        index = len(self.episodes)
        self.episodes.append((ep.source, ep.success, ep.length))
        for name, values in ep.action.items():
            self.samples.setdefault(name, ValueSample(self.sample_values, self.rng)).add(values)
        if index in self.traced:
            self.trajectories.append(
                EpisodeData(
                    ep.label,
                    ep.source,
                    ep.success,
                    ep.length,
                    {k: np.array(v) for k, v in ep.action.items()},
                    {k: np.array(v) for k, v in ep.state.items()},
                )
            )
        if ep.cube_xy is not None:
            self.cubes.append((ep.source, ep.success, np.array(ep.cube_xy, np.float32)))
        if ep.cube_end_xy is not None:
            self.cube_ends.append((ep.source, np.array(ep.cube_end_xy, np.float32)))
        if ep.ee_xy is not None and (self.path_episodes is None or index in self.path_episodes):
            self.paths.append((ep.source, np.array(ep.ee_xy, np.float32)))
        if ep.instruction is not None:
            self.instructions[ep.instruction] += 1
        if ep.scene is not None:
            self.scenes.append(ep.scene)

    def add_strip(self, title: str, image: np.ndarray) -> None:
        """A frame strip ((H, W, 3) uint8, e.g. from :func:`l2.tools.frame_strip.tile`), shown as a JPEG."""
        self.strips.append((title, image))

    def add_table(self, title: str, header: Sequence[str], rows: list[Sequence[object]], note: str = "") -> None:
        self.tables.append(Table(title, header, rows, note))

    # ------------------------------------------------------------------ rendering
    def source_rows(self) -> list[list[object]]:
        """Per source: episodes, successful, failed, unknown, frames, mean / min / max length."""
        rows = []
        for source in dict.fromkeys(s for s, _, _ in self.episodes):
            eps = [(ok, n) for s, ok, n in self.episodes if s == source]
            lengths = np.array([n for _, n in eps])
            c = Counter(ok for ok, _ in eps)
            rows.append(
                [
                    source,
                    len(eps),
                    c[True],
                    c[False],
                    c[None],
                    int(lengths.sum()),
                    f"{lengths.mean():.1f}",
                    int(lengths.min()),
                    int(lengths.max()),
                ]
            )
        return rows

    def html(self) -> str:
        """The page: facts, per-source table, then every plot and table (images as data: URIs)."""
        import matplotlib

        matplotlib.use("Agg")
        parts = [f"<h1>{_esc(self.title)}</h1>"]
        if self.facts:
            parts.append(
                "<table class='facts'>"
                + "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in self.facts)
                + "</table>"
            )
        parts += [f"<p class='note'>{_esc(n)}</p>" for n in self.notes]
        if not self.episodes:
            parts.append("<p>No episodes.</p>")
            return _page(self.title, parts)
        header = [
            "source",
            "episodes",
            "successful",
            "failed",
            "success unknown",
            "frames",
            "mean length",
            "min",
            "max",
        ]
        parts.append(_section(self.source_title, _table(header, self.source_rows())))
        parts.append(_section("Counts and episode lengths", _img(self._counts_figure(), "counts and lengths")))
        for group, what in (("state", "State"), ("action", "Action")):
            fig = self._trajectory_figure(group)
            if fig is not None:
                labels = ", ".join(e.label for e in self.trajectories)
                parts.append(
                    _section(
                        f"{what} trajectories", f"<p>Episodes: {_esc(labels)}.</p>" + _img(fig, f"{group} trajectories")
                    )
                )
        fig = self._histogram_figure()
        if fig is not None:
            seen = sum(s.seen for s in self.samples.values())
            kept = sum(len(s.values) for s in self.samples.values())
            note = "all values" if kept == seen else f"a uniform sample of {kept:,} of {seen:,} values"
            parts.append(_section("Action value histograms", f"<p>From {note}.</p>" + _img(fig, "action histograms")))
        fig = self._top_down_figure()
        if fig is not None:
            caption = f"<p>{_esc(self.top_down_caption)}</p>" if self.top_down_caption else ""
            parts.append(
                _section("Top-down: cube start positions and end-effector paths", caption + _img(fig, "top-down view"))
            )
        if self.instructions:
            rows = [[text, n] for text, n in self.instructions.most_common()]
            parts.append(_section("Instructions", _table(["instruction", "episodes"], rows)))
        fig = self._scene_figure()
        if fig is not None:
            parts.append(
                _section(
                    "Scene randomization (presets=variety)",
                    f"<p>The values drawn for the {len(self.scenes)} episodes that record them.</p>"
                    + _img(fig, "scene randomization"),
                )
            )
        if self.strips:
            parts.append(
                _section("Camera frames", "".join(f"<h3>{_esc(t)}</h3>" + _jpeg(img, t) for t, img in self.strips))
            )
        for t in self.tables:
            body = (f"<p>{_esc(t.note)}</p>" if t.note else "") + _table(t.header, t.rows)
            parts.append(_section(t.title, body))
        return _page(self.title, parts)

    def _colors(self) -> dict[str, str]:
        import matplotlib.pyplot as plt

        cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        return {s: cycle[i % len(cycle)] for i, s in enumerate(dict.fromkeys(s for s, _, _ in self.episodes))}

    def _counts_figure(self):
        import matplotlib.pyplot as plt

        colors = self._colors()
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.4))
        rows = self.source_rows()
        x = np.arange(len(rows))
        ok = np.array([r[2] for r in rows])
        bad = np.array([r[3] for r in rows])
        unknown = np.array([r[4] for r in rows])
        ax1.bar(x, ok, color="#4caf50", label="successful")
        ax1.bar(x, bad, bottom=ok, color="#e53935", label="failed")
        if unknown.any():
            ax1.bar(x, unknown, bottom=ok + bad, color="#9e9e9e", label="unknown")
        ax1.set_xticks(x, [r[0] for r in rows])
        ax1.set_ylabel("episodes")
        ax1.set_title("Episodes per source")
        ax1.legend(fontsize=8)
        lengths = [np.array([n for s, _, n in self.episodes if s == source]) for source in colors]
        all_lengths = np.concatenate(lengths)
        bins = np.histogram_bin_edges(all_lengths, bins=min(30, max(5, len(np.unique(all_lengths)))))
        ax2.hist(lengths, bins=bins, stacked=True, color=list(colors.values()), label=list(colors))
        ax2.set_xlabel("episode length (frames)")
        ax2.set_ylabel("episodes")
        ax2.set_title("Episode lengths")
        ax2.legend(fontsize=8)
        fig.tight_layout()
        return fig

    def _names(self, group: str) -> list[str]:
        return list(dict.fromkeys(n for e in self.trajectories for n in getattr(e, group)))

    def _grid(self, n: int, height: float = 1.9):
        import matplotlib.pyplot as plt

        rows = -(-n // GRID_COLS)
        fig, axes = plt.subplots(rows, GRID_COLS, figsize=(12, height * rows + 0.6), squeeze=False)
        for ax in axes.flat[n:]:
            ax.set_visible(False)
        return fig, axes.flat

    def _trajectory_figure(self, group: str):
        names = self._names(group)
        if not names:
            return None
        colors = self._colors()
        styles = ("-", "--", ":", "-.")
        style = {}  # one colour per source (as in the other plots), one line style per episode of a source
        for e in self.trajectories:
            style[e.label] = (
                colors.get(e.source, "k"),
                styles[sum(f.source == e.source for f in self.trajectories if f.label in style) % len(styles)],
            )
        fig, axes = self._grid(len(names))
        handles: dict[str, object] = {}
        for ax, name in zip(axes, names, strict=False):
            for e in self.trajectories:
                values = getattr(e, group).get(name)
                if values is not None:
                    color, ls = style[e.label]
                    (line,) = ax.plot(np.arange(len(values)), values, lw=1.2, color=color, ls=ls)
                    handles.setdefault(e.label, line)
            ax.set_title(name, fontsize=9)
            ax.tick_params(labelsize=7)
        fig.legend(
            list(handles.values()),
            list(handles),
            loc="upper center",
            ncol=min(4, len(handles)),
            fontsize=8,
            frameon=False,
        )
        fig.supxlabel("frame", fontsize=9)
        fig.tight_layout(rect=(0, 0, 1, 1 - 0.5 / fig.get_figheight()))
        return fig

    def _histogram_figure(self):
        if not self.samples:
            return None
        fig, axes = self._grid(len(self.samples), 1.7)
        for ax, (name, s) in zip(axes, self.samples.items(), strict=False):
            if len(s.values):
                ax.hist(s.values, bins=50, color="#3f51b5")
            ax.set_title(name, fontsize=9)
            ax.tick_params(labelsize=7)
        fig.tight_layout()
        return fig

    def _scene_figure(self):
        """Counts of the drawn names (target color, mat) and histograms of the drawn numbers (robot shade, table
        camera offset), from the episodes' ``scene`` values."""
        if not self.scenes:
            return None
        names = {key: Counter(s.get(key) for s in self.scenes) for key in ("target_color", "mat")}
        offset = np.array([s.get("table_cam_offset", [np.nan] * 6) for s in self.scenes], dtype=float)
        numbers = {"robot_shade": np.array([s.get("robot_shade", np.nan) for s in self.scenes], dtype=float)}
        for k, (axis, unit, scale) in enumerate(
            [
                ("x", "cm", 100),
                ("y", "cm", 100),
                ("z", "cm", 100),
                ("roll", "deg", 57.2958),
                ("pitch", "deg", 57.2958),
                ("yaw", "deg", 57.2958),
            ]
        ):
            numbers[f"table_cam {axis} ({unit})"] = offset[:, k] * scale
        fig, axes = self._grid(len(names) + len(numbers), 1.7)
        axes = list(axes)
        for ax, (key, counts) in zip(axes, names.items(), strict=False):
            ax.bar([str(k) for k in counts], list(counts.values()), color="#3f51b5")
            ax.set_title(key, fontsize=9)
            ax.tick_params(labelsize=7)
        for ax, (key, values) in zip(axes[len(names) :], numbers.items(), strict=False):
            ax.hist(values[np.isfinite(values)], bins=20, color="#3f51b5")
            ax.set_title(key, fontsize=9)
            ax.tick_params(labelsize=7)
        fig.tight_layout()
        return fig

    def _top_down_figure(self):
        import matplotlib.pyplot as plt

        if not self.cubes and not self.paths and not self.cube_ends:
            return None
        colors = self._colors()
        fig, ax = plt.subplots(figsize=(10, 5.6))
        for source, xy in self.paths:  # a path that stays put (e.g. a target straight above the cube) is a dot
            ax.plot(xy[:, 0], xy[:, 1], color=colors.get(source, "k"), lw=0.8, alpha=0.5)
            ax.plot(xy[-1:, 0], xy[-1:, 1], color=colors.get(source, "k"), marker=".", ms=4, alpha=0.7)
        for source in colors:
            for ok, marker in ((True, "o"), (False, "x"), (None, "s")):
                pts = [xy for s, k, xy in self.cubes if s == source and k is ok]
                if pts:
                    a = np.array(pts)
                    state = {True: "successful", False: "failed", None: "success unknown"}[ok]
                    ax.scatter(
                        a[:, 0],
                        a[:, 1],
                        color=colors[source],
                        marker=marker,
                        s=28,
                        label=f"{source} cube start ({state})",
                        zorder=3,
                    )
            ends = [xy for s, xy in self.cube_ends if s == source]
            if ends:
                a = np.array(ends)
                ax.scatter(
                    a[:, 0],
                    a[:, 1],
                    color=colors[source],
                    marker="^",
                    s=18,
                    alpha=0.6,
                    label=f"{source} cube at the end",
                )
            if any(s == source for s, _ in self.paths):
                ax.plot(
                    [],
                    [],
                    color=colors[source],
                    lw=1,
                    marker=".",
                    ms=4,
                    label=f"{source} end-effector path (dot: its end)",
                )
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_xlabel("x (m)")
        ax.set_ylabel("y (m)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1), frameon=False)
        fig.tight_layout()
        return fig


def _esc(v: object) -> str:
    return html.escape(str(v))


def _section(title: str, body: str) -> str:
    return f"<section><h2>{_esc(title)}</h2>{body}</section>"


def _table(header: Sequence[str], rows: list[Sequence[object]]) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(_cell(c) for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cell(value: object) -> str:
    """A table cell; numbers are right-aligned."""
    try:
        float(str(value))
        numeric = not isinstance(value, bool)
    except ValueError:
        numeric = False
    return f"<td class='n'>{_esc(value)}</td>" if numeric else f"<td>{_esc(value)}</td>"


def _img(fig, alt: str) -> str:
    """A matplotlib figure as an inline PNG (the figure is closed)."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    plt.close(fig)
    return _data_img("image/png", buf.getvalue(), alt)


def _jpeg(image: np.ndarray, alt: str) -> str:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="JPEG", quality=85)
    return _data_img("image/jpeg", buf.getvalue(), alt)


def _data_img(mime: str, data: bytes, alt: str) -> str:
    return f"<img alt='{_esc(alt)}' src='data:{mime};base64,{base64.b64encode(data).decode()}'>"


_STYLE = """
body{font-family:sans-serif;margin:1.5em auto;padding:0 1em;max-width:1000px;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
h3{font-size:1em}img{max-width:100%;display:block;margin:.4em 0}
table{border-collapse:collapse;font-size:.85em;margin:.4em 0}
th,td{border:1px solid #ddd;padding:.2em .5em;text-align:left}th{background:#f3f3f3}td.n{text-align:right}
.note{color:#a15c00}
"""


def _page(title: str, parts: list[str]) -> str:
    return (
        f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>{_esc(title)}</title>"
        f"<style>{_STYLE}</style></head><body>\n" + "\n".join(parts) + "\n</body></html>\n"
    )


def check_output(path: str | os.PathLike, overwrite: bool) -> str | None:
    """The one-line error for an output that exists and may not be replaced (None: it may be written)."""
    if Path(path).exists() and not overwrite:
        return f"{path}: exists (pass --overwrite to replace it)"
    if Path(path).is_dir():
        return f"{path}: is a directory"
    folder = next(p for p in (Path(path).absolute().parent, *Path(path).absolute().parents) if p.exists())
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"{folder}: not writable, so {path} cannot be written there"
    return None


def run(
    output: str | os.PathLike, overwrite: bool, build: Callable[[], ReportBuilder], error: str | None = None
) -> int:
    """The inspect CLIs' common end: refuse a bad input (``error``) or output in one line (exit 2), else
    build the page (its InspectError also one line), write it and print the summary line (exit 0)."""
    import time

    started = time.perf_counter()
    error = error or check_output(output, overwrite)
    code = 2
    if error is None:
        try:
            with terminate_as_interrupt() as stop:
                print(finish(build(), output, started))
                return 0
        except InspectError as exc:
            error = str(exc)
        except OSError as exc:  # a full disk, a read-only place: written whole or not at all
            error = atomic.io_error_line(exc, output, "no report written")
        except KeyboardInterrupt:
            error, code = interrupted_line(stop, "no report written")
    print(f"error: {error}", file=sys.stderr)
    return code


def finish(builder: ReportBuilder, output: str | os.PathLike, started: float) -> str:
    """Render and write the page atomically; the summary line to print."""
    import time

    atomic.write_text(output, builder.html())
    size = Path(output).stat().st_size
    n = len(builder.episodes)
    frames = sum(length for _, _, length in builder.episodes)
    return (
        f"{output}: {n} episodes ({frames} frames), {len(builder.strips)} frame strips, "
        f"{size / 1e6:.2f} MB, {time.perf_counter() - started:.1f} s"
    )
