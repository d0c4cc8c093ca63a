"""Read an untrusted HDF5 file through once in a child process, with a time limit, before trusting it.

Some corrupt files make the HDF5 C library itself loop forever. Seen with libhdf5 2.0 (h5py 3.16): a
global heap collection (where variable-length strings and arrays live) whose object headers were
zeroed; its parser then never advances. No Python code runs inside that loop, so nothing in-process can
interrupt it. :func:`read_through` has a child open the file and read every attribute and every
variable-length dataset (the things stored in the global heap), and reports a hang or a crash of the
child as one line. Errors the library *raises* are ignored here: the readers report those themselves,
naming the HDF5 path.

The children are forked by one helper process per program (``python -m l2.hdf5_guard``, started on
first use, single-threaded, with h5py imported): a check costs a fork, not an interpreter start, and
works from any caller (threads, daemonic pool workers, scripts without a ``__main__`` guard).
"""

from __future__ import annotations

import atexit
import io
import math
import os
import signal
import subprocess
import sys
import threading

import h5py

TIMEOUT_ENV = "L2L3_HDF5_READ_TIMEOUT"
DEFAULT_TIMEOUT = 60.0
"""Seconds; reading a file's metadata through takes well under one on a busy 2-core machine."""
_ROWS = 256  # vlen rows read at a time (bounded memory on large JPEG datasets)
_HANG = 1000  # the helper's reply for a child stopped by its time limit


def _visit(name: str, obj) -> None:
    for key in obj.attrs:
        obj.attrs[key]
    if isinstance(obj, h5py.Dataset) and obj.dtype.hasobject:
        if obj.shape:
            for i in range(0, obj.shape[0], _ROWS):
                obj[i:i + _ROWS]
        else:
            obj[()]


def walk_metadata(src: str | bytes) -> None:
    """Open ``src`` (a path or a whole file's bytes) and read every attribute and variable-length dataset;
    errors raised are ignored (a hang or a crash is what this is run for)."""
    try:
        with h5py.File(src if isinstance(src, str) else io.BytesIO(src), "r") as f:
            _visit("/", f)
            f.visititems(_visit)
    except Exception:  # noqa: BLE001 (raised errors are the readers' to report, with their paths)
        pass


# --------------------------------------------------------------------------------------------- helper
def _serve() -> None:
    """The helper: per request ``<path|bytes> <size> <timeout>\\n<payload>`` on stdin, fork a child that walks
    the file under an alarm (SIGALRM's default action ends even a loop in C); reply its exit code."""
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    while header := inp.readline():
        kind, size, timeout = header.split()
        payload = inp.read(int(size))
        src = os.fsdecode(payload) if kind == b"path" else payload
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(max(1, math.ceil(float(timeout))))
            walk_metadata(src)
            os._exit(0)
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        out.write(b"%d\n" % (_HANG if code == -signal.SIGALRM else code))
        out.flush()


class _Helper:
    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.lock = threading.Lock()

    def check(self, src: str | bytes, timeout: float) -> int:
        payload = os.fsencode(src) if isinstance(src, str) else src
        header = b"%s %d %f\n" % (b"path" if isinstance(src, str) else b"bytes", len(payload), timeout)
        with self.lock:
            for attempt in (0, 1):  # a helper that died (killed, out of memory) is started once more
                if self.proc is None or self.proc.poll() is not None:
                    self.proc = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE,
                                                 stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": _path()})
                try:
                    self.proc.stdin.write(header + payload)
                    self.proc.stdin.flush()
                    reply = self.proc.stdout.readline()
                except (BrokenPipeError, OSError):
                    reply = b""
                if reply:
                    return int(reply)
                self.proc.kill()
                self.proc.wait()
                self.proc = None
                if attempt:
                    raise RuntimeError("the HDF5 read-through helper (python -m l2.hdf5_guard) did not start")
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()  # end of requests: the helper exits
            self.proc.wait()
            self.proc.stdout.close()
            self.proc = None


def _path() -> str:
    """PYTHONPATH for the helper: this package's parent first, so that it imports this very module."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.pathsep.join([here, *filter(None, [os.environ.get("PYTHONPATH")])])


_HELPER = _Helper()
atexit.register(_HELPER.close)


def read_through(src: str | bytes, timeout: float | None = None) -> str | None:
    """Read ``src`` (a path, or a whole file's bytes) through in a child process.

    Returns None when the child finished, else why it did not (a hang past ``timeout`` seconds, default
    ``$L2L3_HDF5_READ_TIMEOUT`` or 60, or a crash), as a message to report at the file's root.
    """
    if timeout is None:
        timeout = float(os.environ.get(TIMEOUT_ENV, DEFAULT_TIMEOUT))
    code = _HELPER.check(src, timeout)
    if code == _HANG:
        return (f"the HDF5 library did not finish reading the file's metadata in {math.ceil(timeout)} s (corrupt, "
                f"e.g. a zeroed global heap that makes it loop; ${TIMEOUT_ENV} sets the limit)")
    if code != 0:
        return f"the HDF5 library crashed reading the file (exit {code}): corrupt file?"
    return None


if __name__ == "__main__":
    _serve()
