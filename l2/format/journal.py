"""An undo journal that makes every flush of an HDF5 file all or nothing for a writer killed in between.

HDF5 changes a file in place, and a flush is many writes (object headers, B-tree nodes, heaps, the
superblock last). A writer killed in the middle of an episode's write or of its flush (``kill -9``, the OOM
killer) can leave metadata that points past the end the superblock records: the whole file unreadable, every
demo in it lost. Measured: 7 of 210 kills of a process that appends episodes in a loop left such a file.

A writer opens the file through :class:`JournaledFile` (h5py's file-object driver). Before HDF5 writes over
bytes that the last commit left on disk, the old bytes are appended to ``FILE.journal`` (4 KiB pages, each
saved once); bytes past the committed end need no saving. After each flush, :meth:`JournaledFile.commit`
empties the journal. :func:`recover`, run by every reader and writer before it opens the file, finds a journal
that no live writer holds, writes the saved pages back in reverse order and truncates the file to its committed
size: the file is then byte for byte what its last flush left. Like SQLite's rollback journal this guards
against a killed process, not a power cut (nothing is fsync'ed: the kernel keeps a killed process's writes).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import os
import struct
import sys
import time

MAGIC = b"L2UNDO1\n"
HEADER = struct.Struct("<8sQ")
"""The journal's header: MAGIC and the file's committed size."""
RECORD = struct.Struct("<QQ")
"""Each saved page: its offset and length, followed by the page's old bytes."""
PAGE = 4096


def journal_path(path: str | os.PathLike) -> str:
    return os.fspath(path) + ".journal"


class JournaledFile(io.RawIOBase):
    """``path`` open for reading and writing under an undo journal, with HDF5's exclusive lock held until
    :meth:`close`. Pass it to ``h5py.File(journaled, "r+")``; call :meth:`commit` after each ``flush()``."""

    def __init__(self, path: str | os.PathLike):
        super().__init__()
        self.path = os.fspath(path)
        self._file = open(self.path, "r+b", buffering=0)  # noqa: SIM115  closed in close()
        try:
            # The lock HDF5 itself takes to write (readers take it shared): a second writer is refused, and a reader
            # that finds the journal knows the writer is alive.
            fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            self._file.close()
            if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                raise OSError(exc.errno, "in use by another process", self.path) from None
            raise
        try:
            _roll_back(self._file.fileno(), self.path)  # a journal a killed writer left
            self._journal = os.open(journal_path(self.path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        except BaseException:
            self._file.close()
            raise
        self._discarding = False
        self._start()

    # -- what h5py's file-object driver calls
    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        return self._file.tell()

    def readinto(self, buffer) -> int:
        return self._file.readinto(buffer)

    def write(self, data) -> int:
        size = memoryview(data).nbytes
        if self._discarding:
            return size
        offset = self._file.tell()
        self._save(offset, offset + size)
        return self._file.write(data)

    def truncate(self, size: int | None = None) -> int:
        if self._discarding:
            return self._file.tell() if size is None else size
        size = self._file.tell() if size is None else size
        self._save(size, self._committed)
        return self._file.truncate(size)

    def flush(self) -> None:
        pass  # unbuffered: every write is already the kernel's

    # -- the journal
    def commit(self) -> None:
        """Call after HDF5's flush: what is on disk now is the state to roll back to."""
        if not self._discarding:
            self._start()

    def discard(self) -> None:
        """After a failed write: drop every write from now on (so that HDF5 can close), to be rolled back by
        :meth:`close`."""
        self._discarding = True

    def close(self) -> None:
        """Release the file: committed as it is (after HDF5's close wrote everything), or, after :meth:`discard`,
        rolled back to the last commit."""
        if self.closed:
            return
        try:
            os.close(self._journal)
            if self._discarding:
                _roll_back(self._file.fileno(), self.path)
            else:
                os.unlink(journal_path(self.path))
        finally:
            self._file.close()  # releases the lock
            super().close()

    def _start(self) -> None:
        self._committed = os.fstat(self._file.fileno()).st_size
        self._saved: set[int] = set()
        os.ftruncate(self._journal, 0)
        os.write(self._journal, HEADER.pack(MAGIC, self._committed))

    def _save(self, start: int, end: int) -> None:
        """Journal the committed bytes in [start, end) that are not saved yet, before they are overwritten."""
        end = min(end, self._committed)
        for page in range(start // PAGE, -(-end // PAGE)):
            if page in self._saved:
                continue
            offset = page * PAGE
            old = os.pread(self._file.fileno(), min(PAGE, self._committed - offset), offset)
            os.write(self._journal, RECORD.pack(offset, len(old)) + old)  # one write: a kill leaves it whole or short
            self._saved.add(page)


def recover(path: str | os.PathLike, wait: float = 0.0) -> bool:
    """Roll ``path`` back to its last commit if a killed writer left its journal (True then). A journal whose
    writer is alive (it holds the file's lock) is left alone, as is a file without one; ``wait``: seconds to wait
    for a writer that should be gone to let go of the lock (a killed process with a large memory frees it last)."""
    path = os.fspath(path)
    if not os.path.exists(journal_path(path)):
        return False
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(journal_path(path))
        return False
    except OSError as exc:
        raise OSError(
            exc.errno, f"a killed writer left {journal_path(path)} to roll it back, but {exc.strerror}", path
        ) from None
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return False  # its writer is still at work
                time.sleep(0.1)
        if rolled_back := _roll_back(fd, path):
            print(
                f"note: {path}: a writer was killed in the middle of a write; rolled back to its last flush",
                file=sys.stderr,
            )
        return rolled_back
    finally:
        os.close(fd)


def _roll_back(fd: int, path: str) -> bool:
    """Write the journal's pages back into the open file ``fd``, newest first, truncate it to its committed size,
    and remove the journal; True when that changed the file. Idempotent: a kill during it leaves a journal that
    does the same again."""
    try:
        with open(journal_path(path), "rb") as j:
            journal = j.read()
    except FileNotFoundError:
        return False
    if len(journal) >= HEADER.size:
        magic, committed = HEADER.unpack_from(journal)
        if magic != MAGIC:
            raise OSError(
                errno.EINVAL, f"{journal_path(path)} is not an undo journal of this program; move it away", path
            )
        pages, at = [], HEADER.size
        while at + RECORD.size <= len(journal):
            offset, length = RECORD.unpack_from(journal, at)
            data = journal[at + RECORD.size : at + RECORD.size + length]
            if len(data) < length:  # cut short by the kill: its page was not overwritten yet
                break
            pages.append((offset, data))
            at += RECORD.size + length
        for offset, data in reversed(pages):
            os.pwrite(fd, data, offset)
        changed = bool(pages) or os.fstat(fd).st_size != committed
        os.ftruncate(fd, committed)
    else:  # killed while a commit emptied it: the file is as that commit left it
        changed = False
    os.unlink(journal_path(path))
    return changed
