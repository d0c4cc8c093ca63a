"""Outputs replaced whole: written under a temporary name beside the target, flushed to disk, renamed into place.

A reader (or a kill, or a power cut once the rename is on disk) sees the old target or the new one, never a
half-written one. Every tool that replaces a file or a folder whole goes through :func:`publish` (the report
pages, merged and Mimic files, traces, manifests, converted datasets).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import glob
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

_LIBC = None


def temp_path(target: str | os.PathLike, tag: str = "tmp") -> Path:
    """A hidden name beside ``target`` for this process: ``.<name>.<pid>.<tag>`` (same folder, same filesystem)."""
    target = Path(target)
    return target.with_name(f".{target.name}.{os.getpid()}.{tag}")


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (of any user)."""
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    return True


def remove_stale_temps(target: str | os.PathLike) -> list[Path]:
    """Remove the temporaries (:func:`temp_path`) that processes no longer running left beside ``target`` (a
    kill -9 leaves its temporary behind; the next run writing the same target clears it). Returns them."""
    target = Path(target)
    prefix = f".{target.name}."
    stale = []
    for p in target.parent.glob(f"{glob.escape(prefix)}*") if target.parent.is_dir() else ():
        pid = p.name[len(prefix) :].split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
            stale.append(p)
    return stale


def _fsync(path: Path, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def flush_to_disk(path: str | os.PathLike) -> None:
    """Put ``path``'s data on disk: a file's with fsync; a folder's, every file below it, with one syncfs of its
    filesystem where Linux offers it (fsyncing hundreds of files one by one costs about 30 times more)."""
    global _LIBC
    path = Path(path)
    if not path.is_dir():
        _fsync(path)
        return
    if hasattr(os, "sched_getaffinity"):  # Linux
        if _LIBC is None:
            _LIBC = ctypes.CDLL(None, use_errno=True)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            if _LIBC.syncfs(fd) == 0:
                return
        finally:
            os.close(fd)
    for root, _, files in os.walk(path):
        for name in files:
            _fsync(Path(root) / name)


def publish(tmp: str | os.PathLike, target: str | os.PathLike, *, overwrite: bool = True) -> None:
    """Flush ``tmp`` (a file or a folder) to disk and rename it to ``target``. An existing target is replaced only
    with ``overwrite`` (else FileExistsError, and ``tmp`` stays); a file replaces a file in one rename, anything
    else is moved aside first and removed once the new one is in place."""
    tmp, target = Path(tmp), Path(target)
    exists = target.exists() or target.is_symlink()
    if exists and not overwrite:
        raise FileExistsError(f"{target} exists (pass --overwrite to replace it)")
    flush_to_disk(tmp)
    old = None
    if exists and (tmp.is_dir() or (target.is_dir() and not target.is_symlink())):
        old = temp_path(target, "old")
        os.replace(target, old)
    os.replace(os.fspath(tmp), os.fspath(target))
    with contextlib.suppress(OSError):  # the rename itself, on disk (not every filesystem opens folders)
        _fsync(target.parent, directory=True)
    if old is not None:
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old)
        else:
            old.unlink()


@contextlib.contextmanager
def replacing(target: str | os.PathLike, *, overwrite: bool = True, tag: str = "tmp") -> Iterator[Path]:
    """``with replacing(out) as tmp: write(tmp)``: ``tmp`` is published as ``out`` when the block ends, and removed
    if it raises (nothing is left behind)."""
    remove_stale_temps(target)
    tmp = temp_path(target, tag)
    try:
        yield tmp
        publish(tmp, target, overwrite=overwrite)
    except BaseException as exc:
        note_free_space(exc, tmp)
        raise
    finally:
        if tmp.is_dir() and not tmp.is_symlink():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)


def write_text(target: str | os.PathLike, text: str, *, overwrite: bool = True) -> None:
    """Write ``text`` (UTF-8) to ``target`` whole (:func:`replacing`); its folder is made if missing."""
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    with replacing(target, overwrite=overwrite) as tmp:
        tmp.write_text(text, encoding="utf-8")


def os_error(exc: BaseException) -> OSError | None:
    """``exc`` as an OSError: itself, or one that the HDF5 library reported inside another error (h5py raises
    RuntimeError "... errno = 28, error message = 'No space left on device' ..." for a failed write); None for
    anything else."""
    if isinstance(exc, OSError) and exc.errno is not None:
        return exc
    text = str(exc)
    code = re.search(r"errno = (\d+)", text)
    if code is None or int(code.group(1)) == 0:
        return None
    name = re.search(r"filename = '([^']*)'", text)
    return OSError(int(code.group(1)), os.strerror(int(code.group(1))), name.group(1) if name else None)


FALLOC_FL_KEEP_SIZE = 1


def reserve_space(path: str | os.PathLike, nbytes: int) -> bool:
    """Reserve ``nbytes`` of disk past the end of the file at ``path`` without changing its size (Linux
    ``fallocate`` with KEEP_SIZE), so that writes appending that much to it cannot meet a full disk, even one
    that another process fills meanwhile. OSError (ENOSPC) when there is no room; False where the filesystem or
    the system cannot reserve. :func:`release_space` gives back what the writes did not use."""
    global _LIBC
    if not hasattr(os, "sched_getaffinity"):  # not Linux
        return False
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
    fallocate = _LIBC.fallocate
    fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
    fd = os.open(path, os.O_WRONLY)
    try:
        if fallocate(fd, FALLOC_FL_KEEP_SIZE, os.fstat(fd).st_size, nbytes) == 0:
            return True
        code = ctypes.get_errno()
    finally:
        os.close(fd)
    if code in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
        return False
    raise OSError(code, os.strerror(code), os.fspath(path))


def release_space(path: str | os.PathLike) -> None:
    """Give back the disk :func:`reserve_space` reserved past the file's end (a truncate to its own size)."""
    os.truncate(path, os.path.getsize(path))


def free_bytes(path: str | os.PathLike) -> int:
    """Free bytes on the filesystem of ``path`` (or of its nearest existing parent)."""
    folder = next((p for p in (Path(path), *Path(path).parents) if p.exists()), Path("."))
    return shutil.disk_usage(folder).free


def note_free_space(exc: BaseException, path: str | os.PathLike) -> None:
    """Remember on a full disk's error how much was free when it failed (before its temporary is removed), for
    :func:`io_error_line`."""
    error = os_error(exc)
    if error is not None and error.errno in (errno.ENOSPC, errno.EDQUOT):
        with contextlib.suppress(OSError):
            exc.free_at_failure = free_bytes(path)


def io_error_line(
    exc: OSError, target: str | os.PathLike, kept: str, *, free: int | None = None, need: int | None = None
) -> str:
    """One line for a failed write: what failed and where, the free space there (for a full disk; ``free`` when
    measured at the failure, ``need`` when known), and what was kept, e.g. ``out/ds: no space left on device
    (0.0 MB free on that filesystem); no output written``."""
    free = getattr(exc, "free_at_failure", None) if free is None else free
    exc = os_error(exc) or exc
    hidden = exc.filename is None or any(part.startswith(".") for part in Path(exc.filename).parts[1:])
    where = target if hidden else exc.filename  # a temporary beside the target: name the target
    reason = (os.strerror(exc.errno) if exc.errno else exc.strerror or str(exc)).lower()
    space = ""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        free = free_bytes(where) if free is None else free
        needs = f", about {need / 1e6:.1f} MB needed" if need is not None else ""
        space = f" ({free / 1e6:.1f} MB free on that filesystem{needs})"
    return f"{where}: {reason}{space}; {kept}"


def abandon_hdf5(f) -> None:
    """Close the open ``h5py.File`` ``f`` without writing anything more to it: what is on disk stays as the last
    flush left it. After a failed write (a full disk) HDF5 still holds changes it would try to write on close;
    pointed at an anonymous in-memory file, its descriptor takes them and the close succeeds (sec2 driver, h5py's
    default)."""
    if not f:
        return
    # An anonymous file takes the writes and the resize on close (/dev/null refuses the resize; kept for systems
    # without memfd, where the close may then fail, still without touching the file).
    memfd = getattr(os, "memfd_create", None)
    sink = memfd("abandoned-hdf5") if memfd else os.open(os.devnull, os.O_RDWR)
    try:
        os.dup2(sink, f.id.get_vfd_handle())
    finally:
        os.close(sink)
    f.close()
