"""Is an HDF5 file held by another process? HDF5 locks the files it opens (``flock``: shared for reading,
exclusive for writing); a second writer would otherwise fail deep inside h5py after the simulator has started.

A run also holds a folder of its own for as long as it lives (:func:`hold_folder`: an exclusive ``flock`` on
``FOLDER/lock``, which the kernel lets go when the process ends, however it ends), so that a second run on the same
output is refused before it starts, and a folder whose holder is gone is known to be left by a stopped run."""

from __future__ import annotations

import atexit
import contextlib
import errno
import fcntl
import os
import shutil
from pathlib import Path

LOCK = "lock"
"""The file in a held folder whose ``flock`` its holder keeps (with the holder's pid written in it)."""
_held: dict[Path, tuple[int, bool]] = {}
"""The folders this process holds: folder -> (the lock's descriptor, remove the folder at exit when it holds
nothing but the lock)."""


def lock_holder(path: str | os.PathLike) -> int | None:
    """The pid that holds a lock on ``path`` according to ``/proc/locks`` (Linux), else None."""
    try:
        st = os.stat(path)
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            lines = f.readlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) < 6 or fields[1] == "->":  # "->" marks a waiter, not a holder
            continue
        try:
            major, minor, inode = fields[5].split(":")
            if int(inode) == st.st_ino and os.makedev(int(major, 16), int(minor, 16)) == st.st_dev:
                return int(fields[4])
        except ValueError:
            continue
    return None


def in_use(path: str | os.PathLike) -> str | None:
    """Why ``path`` cannot be written now ("in use by another process (pid N)"), None when it is free (or missing).

    Tries the exclusive lock HDF5 would take for writing, without waiting, and lets it go at once."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
            return None
        return _busy(lock_holder(path))
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _busy(pid: int | None) -> str:
    return f"in use by another process{'' if pid is None else f' (pid {pid})'}"


def hold_folder(folder: str | os.PathLike, *, remove_when_empty: bool = False) -> str | None:
    """Hold ``folder`` (made when missing) for as long as this process lives: None once held (also when this process
    already holds it), else why not ("in use by another process (pid N)").

    A folder that cannot be made or locked (a read-only place, no permission) is not held either, and gives None:
    the run's own checks name that problem. ``remove_when_empty``: at exit, the folder goes when it holds nothing but
    the lock."""
    folder = Path(folder).absolute()
    if folder in _held:
        return None
    lock = folder / LOCK
    for _ in range(100):  # the holder may remove the folder between our open and our lock: take the new one
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                return None
            return _busy(lock_holder(lock) or _written_pid(lock))
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(lock))
        except OSError:
            same = False
        if same:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            if not _held:
                atexit.register(_let_go)
            _held[folder] = (fd, remove_when_empty)
            return None
        os.close(fd)
    return None


def _written_pid(lock: Path) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        return int(lock.read_text().strip())
    return None


def _let_go() -> None:
    """At exit: remove the folders held only for the lock (a process killed -9 leaves its folder to the next run)."""
    for folder, (fd, remove_when_empty) in list(_held.items()):
        with contextlib.suppress(OSError):
            if remove_when_empty and [p.name for p in folder.iterdir()] == [LOCK]:
                shutil.rmtree(folder)
        os.close(fd)
    _held.clear()
