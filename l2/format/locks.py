"""Is an HDF5 file held by another process? HDF5 locks the files it opens (``flock``: shared for reading,
exclusive for writing); a second writer would otherwise fail deep inside h5py after the simulator has started."""

from __future__ import annotations

import errno
import fcntl
import os


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
        pid = lock_holder(path)
        return f"in use by another process{'' if pid is None else f' (pid {pid})'}"
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
