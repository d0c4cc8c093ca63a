"""Errors that L3 reports as one line instead of a traceback."""

from __future__ import annotations

from l2.format.l2file import one_line


class InputError(Exception):
    """Malformed input, located by file and HDF5 path: ``str(e) == "FILE:/hdf5/path: message"``."""

    def __init__(self, file: str, path: str, message: str):
        path = path or "/"  # an episode that is a whole file (ALOHA) has the root as its group
        super().__init__(one_line(f"{file}:{path}: {message}"))
        self.file, self.path, self.message = file, path, message

    def __reduce__(self):  # keep it picklable across worker processes
        return (InputError, (self.file, self.path, self.message))


class ConfigError(Exception):
    """Invalid mapping configuration (message names the file and key)."""


class UsageError(Exception):
    """Bad command line or output location (reported as one line, exit 2)."""


class OutputInvalid(Exception):
    """The written dataset did not pass l3.validate (exit 1)."""
