"""Ctrl-C (SIGINT) and SIGTERM: what a run does with them.

A collector or an evaluation stops after the step in progress (:func:`stop_on_signals`) and reports what it
finished; a tool writing one output (conversion, merge, split) stops at once and removes its temporary output
(:func:`terminate_as_interrupt`). Either way the exit status is the shell's 128 + the signal number.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRequest:
    """Set by the first SIGINT (Ctrl-C) or SIGTERM of a run (see :func:`stop_on_signals`); false until then."""

    def __init__(self) -> None:
        self.signum: int | None = None

    def __bool__(self) -> bool:
        return self.signum is not None

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum is not None else ""

    @property
    def exit_code(self) -> int:
        """130 after SIGINT, 143 after SIGTERM (the shell's 128 + signal number)."""
        return 128 + (self.signum or 0)


@contextlib.contextmanager
def stop_on_signals(
    on_first: Callable[[StopRequest], None] | None = None, *, again_stops_at_once: bool = True
) -> Iterator[StopRequest]:
    """While the block runs, the first SIGINT or SIGTERM only sets the yielded :class:`StopRequest` (and calls
    ``on_first``): the loop checks it and stops after the step in progress, so that what is being written is
    finished and the summary is printed. A second one raises KeyboardInterrupt at once (or, without
    ``again_stops_at_once``, is ignored: a driver waiting for its processes to stop)."""
    request = StopRequest()

    def handler(signum, frame) -> None:
        if request:
            if again_stops_at_once:
                raise KeyboardInterrupt
            return
        request.signum = signum
        if on_first is not None:
            on_first(request)

    previous = {sig: signal.signal(sig, handler) for sig in SIGNALS}
    try:
        yield request
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[StopRequest]:
    """While the block runs, SIGTERM raises KeyboardInterrupt as Ctrl-C does, so that an output written through
    :func:`l2.format.atomic.replacing` has its temporary removed on the way out; the yielded request names the
    signal (SIGINT when KeyboardInterrupt came some other way)."""
    request = StopRequest()

    def handler(signum, frame) -> None:
        if not request:
            request.signum = signum
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, handler) for sig in SIGNALS}
    try:
        yield request
    except KeyboardInterrupt:
        if not request:
            request.signum = signal.SIGINT
        raise
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def interrupted_line(request: StopRequest, kept: str) -> tuple[str, int]:
    """The line and exit status of a tool stopped by ``request``: ``interrupted by SIGTERM; <kept>``."""
    return f"interrupted by {request.name}; {kept}", request.exit_code
