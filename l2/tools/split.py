"""Train/validation split of an L2 file as robomimic filter keys (``docs/merge_split.md``).

    python -m l2.tools.split data/demos/scripted_lift_cube.hdf5 --valid 0.1 --seed 0

Writes ``mask/train`` and ``mask/valid`` into the file (a copy with them replaces it in one rename): 1-D arrays
of demo group names as fixed-length byte strings, the form robomimic writes and reads (``filter_by_attribute``,
``hdf5_filter_key`` / ``hdf5_validation_filter_key``). The demos are not touched. Existing masks are
replaced only with ``--overwrite``. ``--first N`` splits only demo_0 .. demo_<N-1> into ``mask/train_<N>`` and
``mask/valid_<N>``, so that training sets of several sizes live in one file (a data-scaling study).
"""

from __future__ import annotations

import errno
import os
import shutil
import sys

import h5py
import numpy as np

from l2.format import atomic, schema
from l2.format.cli_args import Parser, existing_file, float_below, int_at_least
from l2.format.cli_args import seed as seed_arg
from l2.format.interrupts import interrupted_line, terminate_as_interrupt
from l2.format.l2file import L2File, L2FileError

MASK_GROUP = schema.MASK_GROUP
COPY_HEADROOM = 1 << 20
"""Free bytes the masked copy needs beyond the file's size."""
TRAIN, VALID = "train", "valid"


class SplitError(Exception):
    """Bad input for a split, reported as one line (exit 2), with the file untouched."""


def split_names(demos: list[str], valid: float, seed: int) -> tuple[list[str], list[str]]:
    """(train, valid) demo names, each in numeric order: ``round(valid * n)`` demos drawn with ``seed`` go to
    valid, at least 1 when ``valid > 0`` and at most ``n - 1`` (train is never empty)."""
    n = len(demos)
    n_valid = min(n - 1, max(1 if valid > 0 else 0, round(valid * n)))
    picked = set(np.random.default_rng(seed).permutation(n)[:n_valid].tolist())
    return ([d for i, d in enumerate(demos) if i not in picked], [d for i, d in enumerate(demos) if i in picked])


def mask_names(f: h5py.File, key: str) -> list[str]:
    """Demo names listed by the filter key ``mask/<key>`` (KeyError when missing)."""
    return [n.decode() if isinstance(n, bytes) else str(n) for n in f[f"{MASK_GROUP}/{key}"][()]]


def write_mask(f: h5py.File, key: str, names: list[str]) -> None:
    """``mask/<key>`` as robomimic writes it: fixed-length byte strings."""
    path = f"{MASK_GROUP}/{key}"
    if path in f:
        del f[path]
    f.create_dataset(path, data=np.array([n.encode() for n in names], dtype=f"S{max(map(len, names), default=1)}"))


def mask_keys(first: int | None = None) -> tuple[str, str]:
    """The filter keys a split writes: ``train``/``valid``, or ``train_<N>``/``valid_<N>`` for the first N demos."""
    return (TRAIN, VALID) if first is None else (f"{TRAIN}_{first}", f"{VALID}_{first}")


def split(
    path: str | os.PathLike, valid: float = 0.1, seed: int = 0, overwrite: bool = False, first: int | None = None
) -> tuple[list, list]:
    """Write ``mask/train`` and ``mask/valid`` (see :func:`mask_keys`) into the L2 file at ``path``; returns
    (train, valid) names.

    Atomic: the masks go into a copy beside the file, which then replaces it in one rename (a kill or a full disk
    leaves the file as it was). The file stays open for reading meanwhile, so no collector appends to it."""
    file = os.fspath(path)
    if not 0 <= valid < 1:
        raise SplitError(f"--valid must be in [0, 1), got {valid}")
    try:
        l2 = L2File(file)
    except L2FileError as exc:
        raise SplitError(str(exc)) from None
    with l2:
        demos = l2.demos
        if first is not None:
            if first > len(demos):
                raise SplitError(f"{file}:/{schema.DATA_GROUP}: --first {first}, but the file holds {len(demos)} demos")
            demos = demos[:first]
        if len(demos) < 2:
            raise SplitError(f"{file}:/{schema.DATA_GROUP}: {len(demos)} demo(s); a split needs at least 2")
        keys = mask_keys(first)
        for key in keys:
            if f"{MASK_GROUP}/{key}" in l2.h5 and not overwrite:
                raise SplitError(f"{file}:/{MASK_GROUP}/{key}: exists (pass --overwrite to replace the split)")
        if not os.access(file, os.W_OK):
            raise SplitError(f"{file}: not writable")
        size = os.path.getsize(file)
        if atomic.free_bytes(file) < size + COPY_HEADROOM:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), file)
        train, val = split_names(demos, valid, seed)
        with atomic.replacing(file, tag="splitting") as tmp:
            shutil.copyfile(file, tmp)  # a reflink where the filesystem offers one
            shutil.copymode(file, tmp)
            with h5py.File(tmp, "r+") as f:
                write_mask(f, keys[0], train)
                write_mask(f, keys[1], val)
    return train, val


def main(argv: list[str] | None = None) -> int:
    p = Parser(
        prog="python -m l2.tools.split",
        description="Split an L2 file's demos into robomimic filter keys mask/train and mask/valid, written into "
        "the file (a copy of it with the keys replaces it in one rename; the demos are not touched).",
        epilog="robomimic reads them with filter_by_attribute='train' / hdf5_filter_key; L3 converts one with "
        "--filter-key NAME. Exit status: 0 written, 2 bad input or usage (one line, file untouched).",
    )
    p.add_argument("file", type=existing_file, metavar="FILE", help="L2 HDF5 file")
    p.add_argument(
        "--valid",
        type=float_below(0.0, 1.0),
        default=0.1,
        metavar="RATIO",
        help="share of demos for mask/valid (default 0.1; rounded, at least 1 when > 0, train never empty)",
    )
    p.add_argument("--seed", type=seed_arg, default=0, help="seed of the random draw (default 0)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing mask/train or mask/valid")
    p.add_argument(
        "--first",
        type=int_at_least(2),
        default=None,
        metavar="N",
        help="split only the first N demos, into mask/train_<N> and mask/valid_<N>",
    )
    args = p.parse_args(argv)
    try:
        with terminate_as_interrupt() as stop:  # SIGTERM as Ctrl-C: the copy is removed on the way out
            train, val = split(args.file, args.valid, args.seed, args.overwrite, args.first)
    except KeyboardInterrupt:
        line, code = interrupted_line(stop, "the filter keys were not written, the file is untouched")
        print(f"error: {line}", file=sys.stderr)
        return code
    except SplitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        kept = "the filter keys were not written, the file is untouched"
        print(f"error: {atomic.io_error_line(exc, args.file, kept)}", file=sys.stderr)
        return 2
    keys = mask_keys(args.first)
    print(
        f"{args.file}: mask/{keys[0]} {len(train)} demos, mask/{keys[1]} {len(val)} demos "
        f"({', '.join(val) or 'none'}), seed {args.seed}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
