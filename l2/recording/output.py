"""The output file of a recording run: whether the run may write it, and holding it for the run (before any
simulator starts)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from l2.format.locks import hold_folder, in_use

OnExists = Literal["refuse", "overwrite", "append"]
PARALLEL = (
    "to collect in parallel use python -m l2.distributed (one shard per worker) "
    "or separate files joined by python -m l2.tools.merge"
)


def work_folder(output: str | os.PathLike) -> Path:
    """The folder of the run writing ``output``, beside it: ``.<stem>.workers/``, which holds the run's lock (and the
    shards of a ``--workers`` run, l2.recording.workers)."""
    output = Path(output).absolute()
    return output.with_name(f".{output.stem}.workers")


def hold_output(output: str | os.PathLike) -> None:
    """Hold ``output`` for this run as long as the process lives (the lock in :func:`work_folder`), or refuse it with a
    one-line ValueError naming the pid of the run that holds it."""
    if (busy := hold_folder(work_folder(output), remove_when_empty=True)) is not None:
        raise ValueError(f"{output}: {busy}; {PARALLEL}")


def check_output(output: str | os.PathLike, on_exists: OnExists = "refuse", keep_failed: bool = False) -> Path:
    """Refuse, with an exception whose text is one line, an output (and failed file) that the run may not touch:
    not ``.hdf5``, held by another run, existing without ``on_exists`` saying what to do, in use, not writable.
    Holds the output for this run from then on (:func:`hold_output`). Returns its path."""
    output = Path(output)
    if output.suffix != ".hdf5":
        raise ValueError(f"{output}: the output must be an .hdf5 file")
    hold_output(output)
    failed = output.with_name(output.stem + "_failed.hdf5")
    for path in (output, failed) if keep_failed else (output,):
        if path.exists() and on_exists == "refuse":
            raise FileExistsError(f"{path} exists; pass --append to add demos or --overwrite to replace it")
        if path.exists() and (busy := in_use(path)) is not None:
            raise ValueError(f"{path}: {busy}; {PARALLEL}")
        if path.exists() and on_exists == "append" and not os.access(path, os.W_OK):
            why = "read-only filesystem" if _read_only(path) else "no permission"
            raise ValueError(f"{path}: not writable ({why})")
    folder = next(p for p in (output.parent, *output.parent.parents) if p.exists())
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{folder}: not writable, so {output} cannot be written there")
    return output


def _read_only(path: Path) -> bool:
    return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
