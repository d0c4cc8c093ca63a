"""Read an untrusted HDF5 file through once in a child process, with a time limit, before trusting it.

Some corrupt files make the HDF5 C library itself loop forever. Seen with libhdf5 2.0 (h5py 3.16): a
global heap collection (where variable-length strings and arrays live) whose object headers were
zeroed; its parser then never advances. No Python code runs inside that loop, so nothing in-process can
interrupt it. :func:`read_through` has a child open the file and read every attribute and every
variable-length dataset (the things stored in the global heap), and reports a hang or a crash of the
child as one line. Errors the library *raises* are ignored here: the readers report those themselves,
naming the HDF5 path.

The children are forked by one helper process per program (``python -m l2.format.hdf5_guard``, started on
first use, single-threaded, with h5py imported): a check costs a fork, not an interpreter start, and
works from any caller (threads, daemonic pool workers, scripts without a ``__main__`` guard).
"""

from __future__ import annotations

import atexit
import contextlib
import io
import math
import os
import signal
import subprocess
import sys
import threading

import h5py
import numpy as np

TIMEOUT_ENV = "L2L3_HDF5_READ_TIMEOUT"
DEFAULT_TIMEOUT = 60.0
"""Seconds; reading a file's metadata through takes well under one on a busy 2-core machine."""
_ROWS = 256  # vlen rows read at a time (bounded memory on large JPEG datasets)
_HANG = 1000  # the helper's reply for a child stopped by its time limit


def _read_attrs(oid) -> None:
    """Read every attribute of one object (low-level: an h5py object per attribute costs more than the read)."""
    for i in range(h5py.h5a.get_num_attrs(oid)):
        try:
            attr = h5py.h5a.open(oid, index=i)
            if attr.get_space().get_simple_extent_type() != h5py.h5s.NULL:
                attr.read(np.empty(attr.shape, dtype=attr.dtype))
        except Exception:  # noqa: BLE001 (raised errors are the readers' to report)
            pass


def _read_vlen(did) -> None:
    """Read a dataset whose values live in the global heap (variable-length strings or arrays, references)."""
    ds = h5py.Dataset(did)
    if not ds.shape:
        ds[()]
        return
    for i in range(0, ds.shape[0], _ROWS):
        ds[i : i + _ROWS]


def walk_metadata(src: str | bytes) -> None:
    """Open ``src`` (a path or a whole file's bytes) and read every attribute and variable-length dataset;
    errors raised are ignored, object by object (a hang or a crash is what this is run for)."""
    try:
        f = h5py.File(src if isinstance(src, str) else io.BytesIO(src), "r")
    except Exception:  # noqa: BLE001
        return
    with f:
        fid = f.id
        _read_attrs(h5py.h5o.open(fid, b"/"))

        def visit(name: bytes, info) -> None:
            try:
                if info.num_attrs or info.type == h5py.h5o.TYPE_DATASET:
                    oid = h5py.h5o.open(fid, name)
                    if info.num_attrs:
                        _read_attrs(oid)
                    if info.type == h5py.h5o.TYPE_DATASET and oid.get_type().dtype.hasobject:
                        _read_vlen(oid)
            except Exception:  # noqa: BLE001
                pass

        with contextlib.suppress(Exception):
            h5py.h5o.visit(fid, visit, info=True)


# --------------------------------------------------------------------------------------------- helper
def _jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _walk_in_child(src: str | bytes, timeout: float) -> int:
    """Fork a child that walks ``src`` under an alarm (SIGALRM's default action ends even a loop in C)."""
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(max(1, math.ceil(timeout)))
        walk_metadata(src)
        os._exit(0)
    return pid


def _serve() -> None:
    """The helper: per request ``<path|paths|bytes> <size> <timeout>\n<payload>`` on stdin (``paths``: NUL-separated),
    walk each source in a child of its own, as many at once as there are cores; reply their exit codes on one line,
    in order."""
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    while header := inp.readline():
        kind, size, timeout = header.split()
        payload = inp.read(int(size))
        sources = [payload] if kind == b"bytes" else [os.fsdecode(p) for p in payload.split(b"\0")]
        codes: list[int] = [0] * len(sources)
        running: dict[int, int] = {}
        pending = iter(enumerate(sources))
        while True:
            while len(running) < _jobs() and (item := next(pending, None)) is not None:
                running[_walk_in_child(item[1], float(timeout))] = item[0]
            if not running:
                break
            pid, status = os.wait()
            if pid in running:
                code = os.waitstatus_to_exitcode(status)
                codes[running.pop(pid)] = _HANG if code == -signal.SIGALRM else code
        out.write(b" ".join(b"%d" % c for c in codes) + b"\n")
        out.flush()


class _Helper:
    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.lock = threading.Lock()

    def check(self, src: str | bytes | list[str], timeout: float) -> list[int]:
        """Exit codes of the children that walked ``src`` (a path, several paths, or a file's bytes)."""
        if isinstance(src, list):
            kind, payload = b"paths", b"\0".join(os.fsencode(p) for p in src)
        else:
            kind, payload = (b"path", os.fsencode(src)) if isinstance(src, str) else (b"bytes", src)
        header = b"%s %d %f\n" % (kind, len(payload), timeout)
        with self.lock:
            for attempt in (0, 1):  # a helper that died (killed, out of memory) is started once more
                if self.proc is None or self.proc.poll() is not None:
                    self.proc = subprocess.Popen(
                        [sys.executable, "-m", __name__],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        env={**os.environ, "PYTHONPATH": _path()},
                    )
                try:
                    self.proc.stdin.write(header + payload)
                    self.proc.stdin.flush()
                    reply = self.proc.stdout.readline()
                except (BrokenPipeError, OSError):
                    reply = b""
                if reply:
                    return [int(c) for c in reply.split()]
                self.proc.kill()
                self.proc.wait()
                self.proc = None
                if attempt:
                    raise RuntimeError("the HDF5 read-through helper (python -m l2.format.hdf5_guard) did not start")
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()  # end of requests: the helper exits
            self.proc.wait()
            self.proc.stdout.close()
            self.proc = None


def _path() -> str:
    """PYTHONPATH for the helper: this package's parent first, so that it imports this very module."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.pathsep.join([here, *filter(None, [os.environ.get("PYTHONPATH")])])


_HELPER = _Helper()
atexit.register(_HELPER.close)
_CHECKED: dict[tuple, int] = {}
"""Exit codes of files checked ahead by :func:`read_through_all`, by (path, inode, size, mtime): each is used once."""


def _key(path: str) -> tuple | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (os.path.abspath(path), st.st_ino, st.st_size, st.st_mtime_ns)


def _timeout(timeout: float | None) -> float:
    return float(os.environ.get(TIMEOUT_ENV, DEFAULT_TIMEOUT)) if timeout is None else timeout


def _problem(code: int, timeout: float) -> str | None:
    if code == _HANG:
        return (
            f"the HDF5 library did not finish reading the file's metadata in {math.ceil(timeout)} s (corrupt, "
            f"e.g. a zeroed global heap that makes it loop; ${TIMEOUT_ENV} sets the limit)"
        )
    if code != 0:
        return f"the HDF5 library crashed reading the file (exit {code}): corrupt file?"
    return None


def read_through(src: str | bytes, timeout: float | None = None) -> str | None:
    """Read ``src`` (a path, or a whole file's bytes) through in a child process.

    Returns None when the child finished, else why it did not (a hang past ``timeout`` seconds, default
    ``$L2L3_HDF5_READ_TIMEOUT`` or 60, or a crash), as a message to report at the file's root. A path that
    :func:`read_through_all` checked ahead, unchanged since, is answered from that check.
    """
    timeout = _timeout(timeout)
    if isinstance(src, str) and (key := _key(src)) in _CHECKED:
        return _problem(_CHECKED.pop(key), timeout)
    return _problem(_HELPER.check(src, timeout)[0], timeout)


def read_through_all(paths: list[str], timeout: float | None = None) -> None:
    """Check the regular files among ``paths`` ahead, one child each, as many at once as there are cores; the
    :func:`read_through` of each then answers at once. Reading is what a check costs, and the cores share it."""
    _CHECKED.clear()
    keyed = {key: path for path in paths if os.path.isfile(path) and (key := _key(path)) is not None}
    if len(keyed) > 1:
        for key, code in zip(keyed, _HELPER.check(list(keyed.values()), _timeout(timeout)), strict=True):
            _CHECKED[key] = code


if __name__ == "__main__":
    _serve()
