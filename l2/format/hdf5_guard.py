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

:func:`check_ahead` starts the checks of many files and returns; each file's :func:`read_through` then waits
for its answer. The children of such a check report their progress part by part: everything but what lies
below the ``/data/demo_<i>`` groups first, then demo by demo, so an L2 reader may read a demo as soon as that
demo is read through (``read_through(path, part="demo_<i>")``) while the check goes on beside it.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import math
import os
import select
import signal
import subprocess
import sys
import threading
from collections.abc import Callable

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


def _demo_number(name: bytes) -> int | None:
    """``i`` of a ``demo_<i>`` name, else None."""
    return int(name[5:]) if name.startswith(b"demo_") and name[5:].isdigit() else None


def _walk(loc, name: bytes, num_attrs: int, dataset: bool) -> None:
    """Read one object's attributes, and its values if it is a variable-length dataset."""
    try:
        if num_attrs or dataset:
            oid = h5py.h5o.open(loc, name)
            if num_attrs:
                _read_attrs(oid)
            if dataset and oid.get_type().dtype.hasobject:
                _read_vlen(oid)
    except Exception:  # noqa: BLE001
        pass


def _walk_below(loc) -> None:
    """Walk every object below ``loc`` (a group's id; the group itself included)."""

    def visit(name: bytes, info) -> None:
        _walk(loc, name, info.num_attrs, info.type == h5py.h5o.TYPE_DATASET)

    with contextlib.suppress(Exception):
        h5py.h5o.visit(loc, visit, info=True)


def _open(loc, name: bytes):
    """The object ``name`` below ``loc``, or None when it cannot be opened."""
    try:
        return h5py.h5o.open(loc, name)
    except Exception:  # noqa: BLE001
        return None


def _hard_links(gid) -> list[bytes]:
    """The names of a group's hard links (soft links lead to objects walked where their hard link is; external
    links lead out of the file, and h5py's own visit does not follow them either)."""
    names: list[bytes] = []
    with contextlib.suppress(Exception):
        gid.links.iterate(names.append)
    hard = []
    for name in names:
        with contextlib.suppress(Exception):
            if gid.links.get_info(name).type == h5py.h5l.TYPE_HARD:
                hard.append(name)
    return hard


def walk_metadata(src: str | bytes, progress: Callable[[bytes], None] | None = None) -> None:
    """Open ``src`` (a path or a whole file's bytes) and read every attribute and variable-length dataset;
    errors raised are ignored, object by object (a hang or a crash is what this is run for).

    With ``progress``, what lies below the ``/data/demo_<i>`` groups is walked last, demo by demo in numeric
    order: ``progress(b"/")`` once everything else is read through (the demo groups' own attributes included),
    then ``progress(b"demo_<i>")`` after each demo.
    """
    try:
        f = h5py.File(src if isinstance(src, str) else io.BytesIO(src), "r")
    except Exception:  # noqa: BLE001
        return
    with f:
        fid = f.id
        if progress is None:
            _walk_below(fid)
            return
        _walk(fid, b".", 1, False)
        demos: list[tuple[bytes, object]] = []
        for name in _hard_links(fid):
            oid = _open(fid, name)
            if name != b"data" or not isinstance(oid, h5py.h5g.GroupID):
                if oid is not None:
                    _walk_below(oid)
                continue
            _walk(oid, b".", 1, False)
            for demo in _hard_links(oid):
                gid = _open(oid, demo)
                if _demo_number(demo) is not None and isinstance(gid, h5py.h5g.GroupID):
                    _walk(gid, b".", 1, False)
                    demos.append((demo, gid))
                elif gid is not None:
                    _walk_below(gid)
        progress(b"/")
        for demo, gid in sorted(demos, key=lambda d: _demo_number(d[0])):
            _walk_below(gid)
            progress(demo)


# --------------------------------------------------------------------------------------------- helper
def _jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _walk_in_child(src: str | bytes, timeout: float, progress: int | None = None) -> int:
    """Fork a child that walks ``src`` under an alarm (SIGALRM's default action ends even a loop in C); with
    ``progress`` (a pipe's write end) it reports its progress there, one line per part."""
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(max(1, math.ceil(timeout)))
        walk_metadata(src, None if progress is None else lambda part: os.write(progress, part + b"\n"))
        os._exit(0)
    return pid


def _exit_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return _HANG if code == -signal.SIGALRM else code


def _serve() -> None:
    """The helper: per request ``<path|bytes|ahead> <size> <timeout>\n<payload>`` on stdin (``ahead``: paths,
    NUL-separated), walk each source in a child of its own.

    ``path``, ``bytes``: reply the child's exit code on one line. ``ahead``: as many children at once as there are
    cores, replying as they go: ``p <i> <part>`` when source i's child has read a part through (see
    :func:`walk_metadata`), ``x <i> <code>`` when it ended, and ``end`` after the last one.
    """
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    while header := inp.readline():
        kind, size, timeout = header.split()
        payload = inp.read(int(size))
        if kind == b"ahead":
            _serve_ahead([os.fsdecode(p) for p in payload.split(b"\0") if p], float(timeout), out)
            continue
        pid = _walk_in_child(payload if kind == b"bytes" else os.fsdecode(payload), float(timeout))
        out.write(b"%d\n" % _exit_code(os.waitpid(pid, 0)[1]))
        out.flush()


def _serve_ahead(sources: list[str], timeout: float, out) -> None:
    running: dict[int, tuple[int, int, bytearray]] = {}  # progress pipe's read end -> (source, child pid, partial line)
    pending = iter(enumerate(sources))
    while True:
        while len(running) < _jobs() and (item := next(pending, None)) is not None:
            r, w = os.pipe()
            pid = _walk_in_child(item[1], timeout, progress=w)
            os.close(w)  # the child's copy is the only one left: end of file when it ends
            running[r] = (item[0], pid, bytearray())
        if not running:
            break
        for fd in select.select(list(running), [], [])[0]:
            i, pid, partial = running[fd]
            chunk = os.read(fd, 65536)
            if chunk:
                *parts, rest = (partial + chunk).split(b"\n")
                out.write(b"".join(b"p %d %s\n" % (i, part) for part in parts))
                running[fd] = (i, pid, bytearray(rest))
            else:
                os.close(fd)
                del running[fd]
                out.write(b"x %d %d\n" % (i, _exit_code(os.waitpid(pid, 0)[1])))
            out.flush()
    out.write(b"end\n")
    out.flush()


_LOST = -1000
"""A file's code when the helper went away before its child ended (the file is then checked again, on its own)."""


class _Ahead:
    """What the helper has said so far about the files of one ``ahead`` request."""

    def __init__(self, keys: list[tuple], timeout: float) -> None:
        self.timeout = timeout
        self.index = {key: i for i, key in enumerate(keys)}
        self.parts: list[set[str]] = [set() for _ in keys]
        self.codes: list[int | None] = [None] * len(keys)
        self.open = True


class _Helper:
    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.lock = threading.Lock()
        self.ahead: _Ahead | None = None

    def _start(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", __name__],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env={**os.environ, "PYTHONPATH": _path()},
            )

    def _stop(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.proc = None

    def check(self, src: str | bytes, timeout: float) -> int:
        """The exit code of the child that walked ``src`` (a path, or a file's bytes)."""
        kind, payload = (b"path", os.fsencode(src)) if isinstance(src, str) else (b"bytes", src)
        header = b"%s %d %f\n" % (kind, len(payload), timeout)
        with self.lock:
            self._finish_ahead()
            for attempt in (0, 1):  # a helper that died (killed, out of memory) is started once more
                self._start()
                try:
                    self.proc.stdin.write(header + payload)
                    self.proc.stdin.flush()
                    reply = self.proc.stdout.readline()
                except (BrokenPipeError, OSError):
                    reply = b""
                if reply:
                    return int(reply)
                self._stop()
                if attempt:
                    raise RuntimeError("the HDF5 read-through helper (python -m l2.format.hdf5_guard) did not start")
        raise AssertionError("unreachable")

    def check_ahead(self, keyed: dict[tuple, str], timeout: float) -> None:
        """Start walking the files ``keyed`` (by :func:`_key`); :meth:`wait` collects the answers."""
        payload = b"\0".join(os.fsencode(p) for p in keyed.values())
        with self.lock:
            self._finish_ahead()
            if not keyed:  # no regular file among the paths: nothing to ask (an empty payload would read as one "")
                self.ahead = None
                return
            self.ahead = _Ahead(list(keyed), timeout)
            self._start()
            try:
                self.proc.stdin.write(b"ahead %d %f\n" % (len(payload), timeout) + payload)
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError):
                self._lost()

    def wait(self, key: tuple, part: str | None) -> int | None:
        """The exit code of ``key``'s child once it ended, or None as soon as it has read ``part`` through (with
        ``part`` None: once it ended). ``key`` must be in the current :attr:`ahead`."""
        with self.lock:
            ahead = self.ahead
            i = ahead.index[key]
            while ahead.codes[i] is None and (part is None or part not in ahead.parts[i]):
                self._read_ahead()
            return ahead.codes[i]

    def _read_ahead(self) -> None:
        try:
            line = self.proc.stdout.readline() if self.proc is not None else b""
        except OSError:
            line = b""
        if not line:
            self._lost()
            return
        kind, *rest = line.split()
        if kind == b"p":
            self.ahead.parts[int(rest[0])].add(rest[1].decode())
        elif kind == b"x":
            self.ahead.codes[int(rest[0])] = int(rest[1])
        else:  # b"end"
            self.ahead.open = False

    def _lost(self) -> None:
        self.ahead.codes = [_LOST if c is None else c for c in self.ahead.codes]
        self.ahead.open = False
        if self.proc is not None:
            self._stop()

    def _finish_ahead(self) -> None:
        """Read the current ``ahead`` request's answers to its end (the helper serves one request at a time)."""
        while self.ahead is not None and self.ahead.open:
            self._read_ahead()

    def forget(self) -> None:
        """In a forked child: the helper, its pipes and its pending answers are the parent's. Reading them here
        would leave the parent waiting for answers this child took, so the child starts a helper of its own."""
        self.proc, self.ahead, self.lock = None, None, threading.Lock()

    def close(self) -> None:
        if self.proc is not None:
            with self.lock:
                self._finish_ahead()
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
os.register_at_fork(after_in_child=_HELPER.forget)


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


def _ahead_key(path: str) -> tuple | None:
    """``path``'s key when it is among the files of the last :func:`check_ahead`, unchanged since; else None."""
    ahead, key = _HELPER.ahead, _key(path)
    return key if ahead is not None and key in ahead.index else None


def checked_ahead(path: str) -> bool:
    """Whether ``path``, unchanged, is among the files of the last :func:`check_ahead`."""
    return _ahead_key(path) is not None


def read_through(src: str | bytes, timeout: float | None = None, part: str | None = None) -> str | None:
    """Read ``src`` (a path, or a whole file's bytes) through in a child process.

    Returns None when the child finished, else why it did not (a hang past ``timeout`` seconds, default
    ``$L2L3_HDF5_READ_TIMEOUT`` or 60, or a crash), as a message to report at the file's root. A path that
    :func:`check_ahead` is checking, unchanged since, is answered from that check: the whole file, or with
    ``part`` as soon as that part is read through: ``"/"`` for everything but what lies below the
    ``/data/demo_<i>`` groups, ``"demo_<i>"`` for that demo too (a file outside the check is read through
    whole whatever ``part`` says).
    """
    timeout = _timeout(timeout)
    if isinstance(src, str) and (key := _ahead_key(src)) is not None:
        code = _HELPER.wait(key, part)
        if code != _LOST:
            return None if code is None else _problem(code, _HELPER.ahead.timeout)
    return _problem(_HELPER.check(src, timeout), timeout)


def read_through_part(path: str, part: str) -> str | None:
    """:func:`read_through` of one part of a file that :func:`check_ahead` is checking; None at once for any other
    file (the caller read it through whole before it trusted it)."""
    key = _ahead_key(path)
    if key is None:
        return None
    code = _HELPER.wait(key, part)
    if code == _LOST:
        return read_through(path)
    return None if code is None else _problem(code, _HELPER.ahead.timeout)


def check_ahead(paths: list[str], timeout: float | None = None) -> None:
    """Start checking the regular files among ``paths`` in the background, one child each, as many at once as
    there are cores, and return: each file's :func:`read_through` then waits for its answer (or only for the part
    it names). Reading is what a check costs, and the cores share it with the caller's own work."""
    keyed = {key: path for path in paths if os.path.isfile(path) and (key := _key(path)) is not None}
    _HELPER.check_ahead(keyed, _timeout(timeout))


def read_through_all(paths: list[str], timeout: float | None = None) -> None:
    """:func:`check_ahead`, then wait until every file is checked."""
    check_ahead(paths, timeout)
    with _HELPER.lock:
        _HELPER._finish_ahead()


if __name__ == "__main__":
    _serve()
