"""Errors a recording run reports in one line (``error: ...``, exit status 2), without a traceback."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from l2.format import atomic
from l2.recording.sim import OneLineError

if TYPE_CHECKING:
    from isaaclab.envs import ManagerBasedEnv


class RecordingError(OneLineError):
    """A recording problem to report in one line (the runners print it and exit with status 2)."""


class RecordingIOError(RecordingError):
    """A write that failed on the disk (no space, an I/O error, a read-only place) while recording to ``target``.

    The run ends at once: :meth:`line` closes the env's dataset files and camera spool without writing anything
    more to them and says what they hold (see :func:`close_after_io_error`)."""

    def __init__(self, error: OSError, target: str | os.PathLike, need: int | None = None):
        self.error, self.target, self.need = error, str(target), need
        self.free = atomic.free_bytes(target)
        """Free bytes when the write failed (the line is printed after the spool, which may be large, is gone)."""
        super().__init__(f"{target}: {error}")

    def line(self, env: ManagerBasedEnv) -> str:
        from l2.recording.handler import close_after_io_error

        kept = close_after_io_error(env)
        return atomic.io_error_line(self.error, self.target, kept, free=self.free, need=self.need)
