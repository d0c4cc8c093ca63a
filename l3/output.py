"""A conversion's output, for v2.1 and v3.0 alike: what it did (counts per source, the table printed at its end)
and how the finished folder takes the target's place."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from l2.format.atomic import publish
from l3.errors import UsageError


@dataclass
class SourceCount:
    files: int = 0
    episodes: int = 0
    kept: int = 0
    failed_dropped: int = 0
    failed_kept: int = 0
    bad: int = 0
    frames: int = 0


@dataclass
class Summary:
    """What a conversion did (printed as the end table)."""

    output: Path
    episodes: int = 0
    frames: int = 0
    video_frames: int = 0
    nbytes: int = 0
    seconds: float = 0.0
    per_source: dict[str, SourceCount] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    videos: list[str] = field(default_factory=list)
    """With ``video.pix_fmt: auto``, one line per camera: the pixel format chosen and why."""
    mapping: str | None = None
    """Where in the dataset the inferred mapping was written (no mapping given), relative to ``output``."""
    unnamed: str | None = None
    """With an inferred mapping: which keys' columns the inputs do not name (``columns unnamed: ...``)."""

    def count_bytes(self) -> None:
        """``nbytes``: the size of every file of the written dataset at ``output``."""
        total, todo = 0, [self.output]
        while todo:
            with os.scandir(todo.pop()) as entries:
                for e in entries:
                    if e.is_dir(follow_symlinks=False):
                        todo.append(e.path)
                    elif e.is_file(follow_symlinks=False):
                        total += e.stat(follow_symlinks=False).st_size
        self.nbytes = total

    def table(self) -> str:
        head = ("source", "files", "episodes", "kept", "failed dropped", "failed kept", "bad skipped", "frames")
        rows = [
            (s, c.files, c.episodes, c.kept, c.failed_dropped, c.failed_kept, c.bad, c.frames)
            for s, c in sorted(self.per_source.items())
        ]
        tot = [sum(r[i] for r in rows) for i in range(1, len(head))]
        rows.append(("total", *tot))
        widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]

        def fmt(r) -> str:
            return "  ".join(
                str(v).ljust(w) if i == 0 else str(v).rjust(w) for i, (v, w) in enumerate(zip(r, widths, strict=True))
            )

        lines = [fmt(head), fmt(["-" * w for w in widths]), *map(fmt, rows)]
        rate = self.frames / self.seconds if self.seconds else 0.0
        lines.append(
            f"output {self.output}: {self.episodes} episodes, {self.frames} frames, "
            f"{self.nbytes / 1e6:.1f} MB, {self.seconds:.1f} s ({rate:.0f} frames/s)"
        )
        lines += self.videos
        if self.mapping is not None:
            lines.append(f"mapping (inferred) {self.output / self.mapping}: edit it and convert again with --config")
        if self.unnamed is not None:
            lines.append(self.unnamed)
        lines += [f"skipped (bad input): {s}" for s in self.skipped]
        return "\n".join(lines)


def replace_output(tmp: Path, output: Path, overwrite: bool) -> None:
    """Publish a finished dataset folder as ``output`` (:func:`l2.format.atomic.publish`); an existing output
    without ``overwrite`` is a :class:`UsageError`."""
    try:
        publish(tmp, output, overwrite=overwrite)
    except FileExistsError:
        raise UsageError(f"output {output} already exists (use --overwrite to replace it)") from None
