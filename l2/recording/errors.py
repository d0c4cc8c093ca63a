"""Errors a recording run reports in one line (``error: ...``, exit status 2), without a traceback."""

from __future__ import annotations

import os

from l2.format import atomic


class OneLineError(RuntimeError):
    """An error a runner reports as one line (``error: ...``) and exit status 2, without a traceback, also from
    inside :func:`l2.recording.sim.make_env` (where Isaac Lab's launcher would print one for any other exception)."""


class RecordingError(OneLineError):
    """A recording problem to report in one line (the runners print it and exit with status 2)."""


class RecordingIOError(RecordingError):
    """A write that failed on the disk (no space, an I/O error, a read-only place) while recording to ``target``.

    The run ends at once: the env's dataset files and camera spool are closed without writing anything more to
    them (:func:`l2.recording.handler.close_after_io_error`), and :meth:`line` says what they hold."""

    def __init__(self, error: OSError, target: str | os.PathLike, need: int | None = None):
        self.error, self.target, self.need = error, str(target), need
        self.free = atomic.free_bytes(target)
        """Free bytes when the write failed (the line is printed after the spool, which may be large, is gone)."""
        super().__init__(f"{target}: {error}")

    def line(self, kept: str) -> str:
        """The line to print once the files are closed; ``kept`` says what they hold."""
        return atomic.io_error_line(self.error, self.target, kept, free=self.free, need=self.need)
