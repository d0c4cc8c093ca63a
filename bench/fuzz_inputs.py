"""Fuzz campaign: mutated inputs through every reader must fail cleanly, never with a traceback.

    python bench/fuzz_inputs.py                    # 200 mutations per reader (about 10 min on 2 cores)
    python bench/fuzz_inputs.py --per-reader 20 --seed 7 --keep failures/   # quicker; keep failing inputs

For each reader (L2 HDF5 with cameras, a platform export chunk, a platform export .tar.gz, an ALOHA
file with JPEG frames) it takes a valid input and mutates a copy, seeded: byte flips, truncation, zeroed
blocks, a dataset replaced by one of another dtype or shape, NaN/inf in a float dataset, a deleted or
mistyped attribute, a deleted dataset or group. Each mutant goes through ``l2.format.validate`` (L2 files) and
``l3/convert.py`` (the reader's shipped config), in this process, and must:

  - never raise (a traceback is a failure);
  - l2.format.validate: exit 0 or 1, every violation line ``FILE:/hdf5/path: message``;
  - l3/convert.py: exit 0 with a dataset that l3.validate accepts, or exit 2 with exactly one line
    ``error: FILE:/hdf5/path: message`` (``notice:`` lines aside) and nothing left in the output folder;
  - with ``--skip-bad`` and a good input beside it: exit 0 and every episode of the good input converted.

Each mutant is checked in a separate process with a time limit (``--timeout``): a hang is a failure too.
A file that makes the HDF5 library loop is refused by the read-through guard once its own limit passes
(``--read-timeout``, 10 s here instead of the converter's default 60 s); a mutant meets that limit up to three
times (validate, convert, convert --skip-bad), so ``--timeout`` must be more than three times it.
The tests run a few mutations per reader (tests/test_fuzz_inputs.py); the table here is the campaign.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for p in (REPO, REPO / "tests"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import h5py  # noqa: E402
import numpy as np  # noqa: E402

MUTATIONS = (
    "flip_bytes",
    "truncate",
    "zero_block",
    "wrong_dtype",
    "wrong_shape",
    "nan",
    "drop_attr",
    "mistype_attr",
    "drop_node",
)
BYTE_MUTATIONS = ("flip_bytes", "truncate", "zero_block")


@dataclass
class Reader:
    name: str
    config: Path
    make: Callable[[Path, int], Path]
    """(folder, seed) -> a valid input file in that folder."""
    episodes: Callable[[Path], int]
    """Number of episodes a valid input of this reader holds."""
    l2: bool = False


def _l2(folder: Path, seed: int) -> Path:
    from l3_fixtures import make_l2_file

    return make_l2_file(folder / "scripted_lift_cube.hdf5", 2, seed=seed, length=8, camera=True)


def _platform(folder: Path, seed: int) -> Path:
    from l3_real_fixtures import make_platform_chunk

    return make_platform_chunk(folder / "chunk_001.hdf5", 1, [6, 7], seed=seed, size=(32, 48))


def _platform_tar(folder: Path, seed: int) -> Path:
    from l3_real_fixtures import make_tar_gz

    chunk = _platform(folder / "chunks", seed)
    return make_tar_gz(folder / "export.tar.gz", [chunk])


def _aloha(folder: Path, seed: int) -> Path:
    from l3_real_fixtures import make_aloha_file

    return make_aloha_file(folder / "episode_0.hdf5", 8, seed=seed, compress=True, size=(32, 48))


READERS = {
    "l2": Reader("l2", REPO / "config/lift_cube.yaml", _l2, lambda p: 2, l2=True),
    "platform": Reader("platform", REPO / "config/platform_export.yaml", _platform, lambda p: 2),
    "platform_tar": Reader("platform_tar", REPO / "config/platform_export.yaml", _platform_tar, lambda p: 2),
    "aloha": Reader("aloha", REPO / "config/aloha_bimanual.yaml", _aloha, lambda p: 1),
}


# --------------------------------------------------------------------------- mutations
def _nodes(f: h5py.File) -> tuple[list[h5py.Dataset], list[h5py.Group]]:
    datasets, groups = [], []
    f.visititems(lambda name, obj: (datasets if isinstance(obj, h5py.Dataset) else groups).append(obj))
    return datasets, groups


def _attr_owners(f: h5py.File) -> list:
    datasets, groups = _nodes(f)
    return [o for o in [f, *groups, *datasets] if len(o.attrs)]


def mutate(path: Path, kind: str, rng: np.random.Generator) -> str:
    """Mutate the file in place; returns what was done (for the report)."""
    if kind in BYTE_MUTATIONS:
        data = bytearray(path.read_bytes())
        if kind == "flip_bytes":
            offsets = rng.integers(0, len(data), size=int(rng.integers(1, 17)))
            for o in offsets:
                data[o] ^= int(rng.integers(1, 256))
            what = f"{len(offsets)} bytes flipped"
        elif kind == "truncate":
            keep = int(len(data) * rng.uniform(0.02, 0.98))
            data = data[:keep]
            what = f"truncated to {keep} bytes"
        else:
            start, size = int(rng.integers(0, len(data))), int(rng.integers(64, 4097))
            data[start : start + size] = bytes(min(size, len(data) - start))
            what = f"{size} bytes zeroed at {start}"
        path.write_bytes(bytes(data))
        return what
    with h5py.File(path, "r+") as f:
        datasets, groups = _nodes(f)
        if kind in ("wrong_dtype", "wrong_shape", "nan"):
            pool = [d for d in datasets if d.dtype.kind == "f"] if kind == "nan" else datasets
            d = pool[int(rng.integers(len(pool)))]
            name, parent, value = d.name, d.parent, d[()]
            if kind == "nan":
                flat = value.reshape(-1)
                flat[int(rng.integers(flat.size))] = rng.choice([np.nan, np.inf, -np.inf])
                d[...] = flat.reshape(value.shape)
                return f"{name}: a NaN/inf"
            del parent[name.rsplit("/", 1)[-1]]
            if kind == "wrong_dtype":
                new = (
                    value.astype(np.float64 if value.dtype.kind in "iub" else np.int8)
                    if value.dtype.kind in "iubf"
                    else np.zeros(value.shape[:1], dtype=np.float32)
                )
                parent.create_dataset(name.rsplit("/", 1)[-1], data=new)
                return f"{name}: dtype {value.dtype} -> {new.dtype}"
            if value.ndim and value.shape[0] > 1 and rng.random() < 0.5:
                new = value[:-1]
            else:
                new = value.reshape(1, *value.shape) if value.ndim < 2 else np.concatenate([value, value[:, -1:]], 1)
            parent.create_dataset(name.rsplit("/", 1)[-1], data=new)
            return f"{name}: shape {value.shape} -> {new.shape}"
        if kind in ("drop_attr", "mistype_attr"):
            owners = _attr_owners(f)
            owner = owners[int(rng.integers(len(owners)))]
            key = list(owner.attrs)[int(rng.integers(len(owner.attrs)))]
            if kind == "drop_attr":
                del owner.attrs[key]
                return f"{owner.name}: attr {key} deleted"
            old = owner.attrs[key]
            owner.attrs[key] = "not a number" if not isinstance(old, (str, bytes)) else np.arange(3)
            return f"{owner.name}: attr {key} retyped"
        nodes = [n for n in [*datasets, *groups] if n.name != "/"]
        node = nodes[int(rng.integers(len(nodes)))]
        del f[node.name]
        return f"{node.name} deleted"


# --------------------------------------------------------------------------- checks
@dataclass
class Outcome:
    reader: str
    kind: str
    what: str
    problems: list[str] = field(default_factory=list)
    converted: bool = False


def _run(fn: Callable[[list[str]], int], argv: list[str]) -> tuple[int | None, str, str, str | None]:
    """Run a CLI main in this process: (exit status, stdout, stderr, exception text or None)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = fn(argv)
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else 2
        except BaseException as e:  # noqa: BLE001 - a traceback is exactly what is looked for
            return None, out.getvalue(), err.getvalue(), f"{type(e).__name__}: {e}"
    return rc, out.getvalue(), err.getvalue(), None


def check(reader: Reader, mutant: Path, good: Path, work: Path) -> tuple[list[str], bool]:
    """The rules of this campaign for one mutated input; returns (problems, converted)."""
    import l2.format.validate as l2_validate
    import l3.convert as l3_convert
    from l3 import layout
    from l3.validate import validate

    problems = []
    if reader.l2:
        rc, out, err, exc = _run(l2_validate.main, [str(mutant)])
        if exc:
            problems.append(f"l2.format.validate raised {exc}")
        elif rc not in (0, 1):
            problems.append(f"l2.format.validate exit {rc}")
        else:
            for line in out.splitlines():
                if not line.startswith(f"{mutant}:") or (": OK," not in line and ":/" not in line):
                    problems.append(f"l2.format.validate line without FILE:/path: {line[:200]}")
    out_dir = work / "out"
    rc, _, err, exc = _run(l3_convert.main, [str(mutant), "--config", str(reader.config), "-o", str(out_dir), "-q"])
    lines = [line for line in err.splitlines() if line and not line.startswith("notice:")]
    converted = False
    if exc:
        problems.append(f"convert raised {exc}")
    elif rc == 0:
        converted = True
        errors = validate(out_dir)
        if errors:
            problems.append(f"convert exit 0 but l3.validate: {errors[0]}")
    elif rc == 2:
        # FILE:/path, or for a member of an archive FILE/member:/path
        if len(lines) != 1 or not lines[0].startswith(f"error: {mutant}") or ":/" not in lines[0]:
            problems.append(f"convert exit 2 without one 'error: FILE:/hdf5/path: message' line: {lines[:3]}")
        if out_dir.exists() or list(work.glob(".out*")):
            problems.append("convert exit 2 left output behind")
    else:
        problems.append(f"convert exit {rc}: {lines[:2]}")
    shutil.rmtree(out_dir, ignore_errors=True)

    skip_dir = work / "skip"
    rc, _, err, exc = _run(
        l3_convert.main,
        [str(good), str(mutant), "--config", str(reader.config), "-o", str(skip_dir), "-q", "--skip-bad"],
    )
    if exc:
        problems.append(f"convert --skip-bad raised {exc}")
    elif rc != 0:
        problems.append(f"convert --skip-bad exit {rc}: {err.strip().splitlines()[-1:]}")
    else:
        eps = [json.loads(line) for line in (skip_dir / layout.EPISODES_PATH).read_text().splitlines()]
        kept = sum(1 for e in eps if str(good) in str(e.get("file", "")))
        if kept != reader.episodes(good):
            problems.append(f"convert --skip-bad kept {kept} of the good input's {reader.episodes(good)} episodes")
    shutil.rmtree(skip_dir, ignore_errors=True)
    return problems, converted


def _serve(conn, read_timeout: float) -> None:
    """The checking process: runs :func:`check` for each (reader name, mutant, good, work) it receives."""
    from l2.format.hdf5_guard import TIMEOUT_ENV

    os.environ[TIMEOUT_ENV] = f"{read_timeout:g}"
    while True:
        name, mutant, good, work = conn.recv()
        conn.send(check(READERS[name], mutant, good, work))


class IsolatedChecker:
    """Runs :func:`check` in a separate process (spawned once, reused), restarted after a hang or a crash,
    so that a native library looping forever on a corrupt file counts as a failure instead of stopping
    the campaign."""

    def __init__(self, timeout: float, read_timeout: float):
        self.timeout, self.read_timeout = timeout, read_timeout
        self._start()

    def _start(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, self.read_timeout), daemon=True)
        self.proc.start()

    def _restart(self) -> None:
        self.proc.kill()
        self.proc.join()
        self._start()

    def __call__(self, reader: Reader, mutant: Path, good: Path, work: Path) -> tuple[list[str], bool]:
        self.conn.send((reader.name, mutant, good, work))
        if not self.conn.poll(self.timeout):
            self._restart()
            return [f"hang: no result after {self.timeout:g} s"], False
        try:
            return self.conn.recv()
        except EOFError:
            code = self.proc.exitcode
            self._restart()
            return [f"the checking process died (exit {code}): a crash in a native library?"], False

    def close(self) -> None:
        self.proc.kill()
        self.proc.join()


def campaign(
    readers: list[str],
    per_reader: int,
    seed: int,
    keep: Path | None = None,
    progress: bool = False,
    timeout: float = 120.0,
    read_timeout: float = 10.0,
) -> list[Outcome]:
    """Run ``per_reader`` mutations for each reader; every outcome, problems included."""
    from tqdm import tqdm

    if timeout <= 3 * read_timeout:
        raise ValueError(f"--timeout {timeout:g} must exceed 3 x --read-timeout {read_timeout:g}")
    rng = np.random.default_rng(seed)
    outcomes = []
    checker = IsolatedChecker(timeout, read_timeout)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name in readers:
            reader = READERS[name]
            good = reader.make(tmp / name / "good", 1)
            original = reader.make(tmp / name / "orig", 2)
            for i in tqdm(range(per_reader), desc=f"fuzz {name}", disable=not progress, dynamic_ncols=True):
                kind = MUTATIONS[i % len(MUTATIONS)]
                if name == "platform_tar" and kind not in BYTE_MUTATIONS:
                    kind = BYTE_MUTATIONS[i % len(BYTE_MUTATIONS)]  # structural ones: see the chunk reader
                work = tmp / name / f"m{i}"
                work.mkdir(parents=True)
                mutant = work / original.name
                shutil.copy(original, mutant)
                try:
                    what = mutate(mutant, kind, rng)
                except (OSError, KeyError, ValueError, TypeError) as e:  # the file was already unreadable for h5py
                    what = f"not applied ({type(e).__name__})"
                problems, converted = checker(reader, mutant, good, work)
                outcomes.append(Outcome(name, kind, what, problems, converted))
                if problems and keep is not None:
                    keep.mkdir(parents=True, exist_ok=True)
                    shutil.copy(mutant, keep / f"{name}_{i}_{kind}{''.join(mutant.suffixes)}")
                shutil.rmtree(work, ignore_errors=True)
    checker.close()
    return outcomes


def main(argv: list[str] | None = None) -> int:
    from l2.format import cli_args

    parser = cli_args.Parser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("--per-reader", type=int, default=200, help="mutations per reader (default: %(default)s)")
    parser.add_argument("--readers", default=",".join(READERS), help="comma-separated (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, default=None, help="copy failing mutants into this folder")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per mutant before it counts as a hang")
    parser.add_argument(
        "--read-timeout",
        type=float,
        default=10.0,
        help="the HDF5 read-through guard's limit in the checks, in seconds (default: %(default)s; "
        "the converter's own default is 60)",
    )
    args = parser.parse_args(argv)
    if args.timeout <= 3 * args.read_timeout:
        parser.error(f"--timeout {args.timeout:g} must exceed 3 x --read-timeout {args.read_timeout:g}")
    outcomes = campaign(
        args.readers.split(","),
        args.per_reader,
        args.seed,
        args.keep,
        progress=True,
        timeout=args.timeout,
        read_timeout=args.read_timeout,
    )
    print(f"\nfuzz campaign, seed {args.seed}: {args.per_reader} mutations per reader")
    print(f"  {'reader':<13} {'mutants':>7} {'converted':>9} {'refused':>7} {'failures':>8}")
    for name in args.readers.split(","):
        mine = [o for o in outcomes if o.reader == name]
        bad = [o for o in mine if o.problems]
        conv = sum(o.converted for o in mine)
        print(f"  {name:<13} {len(mine):>7} {conv:>9} {len(mine) - conv:>7} {len(bad):>8}")
    failures = [o for o in outcomes if o.problems]
    kinds = Counter(o.kind for o in failures)
    for o in failures[:20]:
        print(f"  FAIL {o.reader} {o.kind} ({o.what}): {o.problems[0]}")
    if failures:
        print(f"  failures by mutation: {dict(kinds)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
