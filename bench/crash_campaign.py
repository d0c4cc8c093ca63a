"""Crash campaign: kill -9 a real scripted collection again and again; the demo file must survive. Then kill -9
the tools that write whole outputs (conversion, merge, split) at random moments.

    python bench/crash_campaign.py                       # 20 kills, state-only (about 20 min on 2 cores)
    python bench/crash_campaign.py --kills 4 --seed 1    # quicker
    python bench/crash_campaign.py --cameras             # with both cameras (streamed frames), slower
    python bench/crash_campaign.py --kills 0 --tool-kills 30   # only the tools
    python bench/crash_campaign.py --kills 0 --tool-kills 0 --driver-kills 3   # only the --workers drivers

Every round launches ``l2/scripted/run.py --append`` on the same file (4 envs), waits until it is
collecting, and kills it with SIGKILL, in turns:

  - ``outside``: after a random delay, from this process;
  - ``in-write``: the child kills itself in the middle of writing a demo group (while h5py creates the
    n-th dataset of its k-th episode, n and k random);
  - ``in-flush``: the child kills itself inside HDF5's flush after its k-th episode, at the flush's n-th write
    to the file: the worst moment for the file, which only the undo journal (``l2.format.journal``) brings
    back to its last flush.

After each kill the file must pass ``l2.format.validate``, every demo the run had reported as written (its
progress bar, updated after each flushed episode) must still be in it (``lost`` counts those that are
not), and the next round appends to the same file. Nothing here is timed: the delays only pick moments.

Driver rounds (``--driver-kills``) start a ``--workers 2`` collection (its driver and two collectors) and, once a shard
holds a demo, a second driver with the same command, which must be refused (one line naming the first's pid, exit 2)
while the first lives; the campaign kills the first driver (SIGKILL) after a random number of such refusals, and the
second then resumes its shards: it must say so, end with exactly the demos asked for, and the file must hold every
demo that was finished in the shards when the first died, each once.

Tool rounds (``--tool-kills``, in turns ``l3/convert.py``, ``l2.tools.merge``, ``l2.tools.split``) run each tool
on a small camera L2 file and kill it at a random moment of a clean run's duration. The target (the dataset
folder, the merged file, the split file) must then be what it was before (absent, or the previous output,
byte-identical), or the complete new output (it validates); the inputs must be byte-identical; and the
temporary the killed run left beside the target must be gone after the next run of the same tool.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# The child: the scripted runner, with h5py's create_dataset (CRASH_IN=write) or the journaled file's writes
# during a flush (CRASH_IN=flush) wrapped so that the run kills itself from its k-th episode (CRASH_EPISODE) on,
# at the n-th dataset or write (CRASH_AT); 0 = never.
CHILD = """
import ctypes, os, signal, sys
ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: dies with the campaign, never left running
sys.path.insert(0, {repo!r})
import h5py
from l2.format.journal import JournaledFile
from l2.recording import handler as recording
where, episode, at = os.environ["CRASH_IN"], int(os.environ["CRASH_EPISODE"]), int(os.environ["CRASH_AT"])
write, create = recording.L2DatasetFileHandler.write_episode, h5py.Group.create_dataset
flush, file_write = recording.L2DatasetFileHandler.flush, JournaledFile.write
seen = {{"episodes": 0, "calls": 0, "flushing": False}}
def count():
    seen["calls"] += 1
    if seen["calls"] == at:
        os.kill(os.getpid(), signal.SIGKILL)
def create_dataset(group, *args, **kwargs):
    count()
    return create(group, *args, **kwargs)
def write_episode(self, data, *args, **kwargs):
    seen["episodes"] += not data.is_empty()  # the first reset exports an empty episode, which writes nothing
    if seen["episodes"] == episode and where == "write":
        h5py.Group.create_dataset = create_dataset
    return write(self, data, *args, **kwargs)
def flushing(self):
    seen["flushing"] = seen["episodes"] >= episode
    try:
        return flush(self)
    finally:
        seen["flushing"] = False
def journaled_write(self, data):
    if seen["flushing"]:
        count()
    return file_write(self, data)
recording.L2DatasetFileHandler.write_episode = write_episode
if where == "flush":
    recording.L2DatasetFileHandler.flush, JournaledFile.write = flushing, journaled_write
from l2.scripted.run import main
sys.exit(main(sys.argv[1:]))
"""

PROGRESS = re.compile(r"scripted demos:\s+\d+%\|[^|]*\|\s*(\d+)/\d+")


@dataclass
class Round:
    mode: str
    moment: str
    reported: int
    before: int
    after: int
    valid: bool
    verdict: str
    exit_code: int

    @property
    def lost(self) -> int:
        return max(0, self.before + self.reported - self.after)


def demos_in(path: Path) -> int:
    import h5py

    if not path.exists():
        return 0
    with h5py.File(path, "r") as f:
        return sum(1 for k in f.get("data", {}) if k.startswith("demo_"))


def run_round(path: Path, args: argparse.Namespace, rng: random.Random, mode: str, seed: int) -> Round:
    from l2.recording.cli import validator_verdict

    before = demos_in(path)
    episode, at = (rng.randint(1, 4), rng.randint(1, 12 if mode == "in-write" else 6)) if mode != "outside" else (0, 0)
    cmd = [
        sys.executable,
        "-c",
        CHILD.format(repo=str(REPO)),
        "--num_envs",
        "4",
        "--workers",
        "1",  # the recorder's own file under the kills (the workers' shards: tests/test_workers.py)
        "--num_demos",
        "100000",
        "--max_attempts",
        "100000",
        "--seed",
        str(seed),
        "--output",
        str(path),
        "--append",
    ]
    if not args.cameras:
        cmd.append("presets=no_cameras")
    env = {**os.environ, "CRASH_IN": mode.removeprefix("in-"), "CRASH_EPISODE": str(episode), "CRASH_AT": str(at)}
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    reported, started = 0, threading.Event()

    def read_progress() -> None:
        nonlocal reported
        buf = b""
        while chunk := proc.stderr.read1(4096):
            buf = (buf + chunk)[-8192:]
            for m in PROGRESS.finditer(buf.decode("utf-8", "replace")):
                started.set()
                reported = max(reported, int(m.group(1)))

    reader = threading.Thread(target=read_progress, daemon=True)
    reader.start()
    if mode == "outside":
        started.wait(args.startup_timeout)
        delay = rng.uniform(0, args.max_delay)
        moment = f"{delay:.1f} s into collection"
        if proc.poll() is None:
            time.sleep(delay)
            proc.send_signal(signal.SIGKILL)
    else:
        moment = f"episode {episode}, {'dataset' if mode == 'in-write' else 'flush write'} {at}"
    try:
        proc.wait(timeout=args.startup_timeout + args.max_delay + 600)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    reader.join(timeout=10)
    valid, verdict = validator_verdict(path) if path.exists() else (before == 0, "no file yet")
    return Round(mode, moment, reported, before, demos_in(path) if valid else -1, valid, verdict, proc.returncode)


# -- driver rounds ---------------------------------------------------------------------------------------------
@dataclass
class DriverRound:
    refusals: int
    """Times the second driver was refused while the first lived (each naming the first's pid)."""
    refused_right: bool
    finished_at_kill: int
    """Demos in the shards when the first driver had died."""
    resumed: bool
    demos: int
    kept_once: bool
    """Every demo finished at the kill is in the file, each once, and no demo twice."""
    exit_code: int
    error: str = ""
    """The resumed driver's one-line error, when it exited with one."""

    @property
    def ok(self) -> bool:
        return self.refused_right and self.resumed and self.kept_once and self.exit_code == 0


def demo_digests(path: Path) -> list[str]:
    """One digest per demo of an L2 file (over its datasets' names and bytes), in file order."""
    import hashlib

    import h5py

    out = []
    with h5py.File(path, "r") as f:
        for name in f["data"]:
            h = hashlib.sha256()
            f["data"][name].visititems(
                lambda key, obj, h=h: isinstance(obj, h5py.Dataset) and h.update(key.encode() + obj[()].tobytes())
            )
            out.append(h.hexdigest())
    return out


class FinishedFirst(Exception):
    """The first driver finished before it could be killed: the round tried nothing (run it again, longer)."""


def driver_round(work: Path, rng: random.Random, seed: int, num_demos: int) -> DriverRound:
    from l2.format.locks import LOCK, in_use, lock_holder
    from l2.format.validate import validate_file
    from l2.recording.output import work_folder
    from l2.recording.shards import count_demos

    out = work / f"round_{seed}_{num_demos}" / "scripted_lift_cube.hdf5"
    out.parent.mkdir(parents=True)
    folder = work_folder(out)
    shards = [folder / f"shard_{k}.hdf5" for k in range(2)]
    cmd = [sys.executable, "l2/scripted/run.py", "--num_envs", "2", "--num_demos", str(num_demos), "--workers", "2"]
    cmd += ["--seed", str(seed), "--output", str(out), "presets=no_cameras"]
    first = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def a_demo() -> bool:
        for shard in shards:
            try:
                if count_demos(shard):
                    return True
            except Exception:  # noqa: BLE001  read while its collector writes it: ask again
                pass
        return False

    while first.poll() is None and not (lock_holder(folder / LOCK) == first.pid and a_demo()):
        time.sleep(0.2)
    refusals, refused_right = 0, first.poll() is None
    for _ in range(rng.randint(1, 3)):  # the second driver, waiting to resume: refused while the first lives
        second = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
        errors = [line for line in second.stderr.splitlines() if line.startswith("error: ")]
        refusals += 1
        refused_right &= (
            second.returncode == 2
            and len(errors) == 1
            and f"in use by another process (pid {first.pid})" in errors[0]
            and "resuming" not in second.stdout
        )
    if first.poll() is not None:
        raise FinishedFirst(f"the first driver ended (exit {first.returncode}) before it was killed")
    first.send_signal(signal.SIGKILL)
    first.wait()
    while any(in_use(s) for s in [folder / LOCK, *shards]):  # its collectors die with it, letting go of files last
        time.sleep(0.2)
    finished = []
    for shard in shards:
        if shard.exists() and validate_file(shard).ok:  # validating rolls back a write the kill cut short
            finished += demo_digests(shard)
    second = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    resumed = "note: resuming the stopped run" in second.stdout
    demos = demo_digests(out) if out.exists() and validate_file(out).ok else []
    kept_once = len(demos) == num_demos == len(set(demos)) and set(finished) <= set(demos)
    error = next((line for line in reversed(second.stderr.splitlines()) if line.startswith("error: ")), "")
    return DriverRound(refusals, refused_right, len(finished), resumed, len(demos), kept_once, second.returncode, error)


def driver_rounds(kills: int, rng: random.Random) -> list[DriverRound]:
    rounds = []
    if not kills:
        return rounds
    print("\n  driver  refused  right  finished at kill  resumed  demos  each once  exit")
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(kills):
            for num_demos in (8, 16, 32):
                try:
                    r = driver_round(Path(tmp), rng, 2000 + i, num_demos)
                    break
                except FinishedFirst as e:
                    print(f"  driver round {i + 1}: {e} ({num_demos} demos); again with more", file=sys.stderr)
            else:
                raise RuntimeError("the first driver finished before its kill in every try")
            rounds.append(r)
            print(
                f"  {i + 1:>6}  {r.refusals:>7}  {'yes' if r.refused_right else 'NO':<5}  {r.finished_at_kill:>16}  "
                f"{'yes' if r.resumed else 'NO':<7}  {r.demos:>5}  {'yes' if r.kept_once else 'NO':<9}  "
                f"{r.exit_code:>4}",
                flush=True,
            )
            if r.exit_code:
                print(f"  driver round {i + 1}, the resumed run: {r.error or 'no error line'}", file=sys.stderr)
    print(
        f"\n  drivers: {sum(r.ok for r in rounds)}/{len(rounds)} killed while a second waited: refused while it lived, "
        "then resumed, every finished demo kept once"
    )
    return rounds


# -- tool rounds ---------------------------------------------------------------------------------------------
TOOLS = ("convert", "merge", "split")


@dataclass
class ToolRound:
    tool: str
    moment: str
    exit_code: int
    target: str
    """``before`` (as it was), ``new`` (the complete new output) or what is wrong with it."""
    inputs_intact: bool
    mid_write: bool
    """The kill left a temporary beside the target: it came while the output was being written."""
    stale_cleared: bool

    @property
    def ok(self) -> bool:
        return self.target in ("before", "new") and self.inputs_intact and self.stale_cleared


def _digest(path: Path) -> str:
    """A file's or a folder's content hash ("" when absent)."""
    import hashlib

    if not path.exists():
        return ""
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")) if path.is_dir() else [path]:
        if p.is_file():
            h.update(str(p.relative_to(path)).encode() if path.is_dir() else b"")
            h.update(p.read_bytes())
    return h.hexdigest()


class ToolBench:
    """Inputs and commands of the tool rounds, in a work folder."""

    def __init__(self, work: Path):
        sys.path.insert(0, str(REPO / "tests"))
        from l3_fixtures import make_l2_file

        self.work = work
        self.a = make_l2_file(work / "scripted_lift_cube.hdf5", 6, camera=True, length=40, frame_size=(224, 224))
        self.b = make_l2_file(work / "scripted_more.hdf5", 6, seed=1, camera=True, length=40, frame_size=(224, 224))
        self.split_file = work / "split" / "scripted_lift_cube.hdf5"
        self.targets = {
            "convert": work / "out" / "lift_cube_gr00t",
            "merge": work / "merged" / "scripted_lift_cube.hdf5",
            "split": self.split_file,
        }
        for t in self.targets.values():
            t.parent.mkdir(exist_ok=True)
        self.split_file.write_bytes(self.a.read_bytes())
        self.variant = 0
        """Alternated between rounds (input order, split seed), so that a new output differs from the old one."""
        # When each tool starts working (its --help: the imports) and ends (a clean run): kills land between.
        self.window = {t: (self.run(t, help_only=True).seconds, self.run(t).seconds) for t in TOOLS}

    def command(self, tool: str) -> list[str]:
        target = str(self.targets[tool])
        a, b = (self.a, self.b) if self.variant % 2 == 0 else (self.b, self.a)
        if tool == "convert":
            return ["l3/convert.py", str(a), str(b), "-o", target, "--overwrite", "-q"]
        if tool == "merge":
            return ["-m", "l2.tools.merge", str(a), str(b), "-o", target, "--overwrite", "-q"]
        return ["-m", "l2.tools.split", target, "--overwrite", "--seed", str(self.variant)]

    def run(self, tool: str, kill_after: float | None = None, help_only: bool = False):
        start = time.perf_counter()
        cmd = self.command(tool)[:2] + ["--help"] if help_only else self.command(tool)
        proc = subprocess.Popen([sys.executable, *cmd], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if kill_after is not None:
            try:
                proc.wait(timeout=kill_after)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
        stderr = proc.communicate()[1].decode(errors="replace")
        proc.seconds = time.perf_counter() - start
        if kill_after is None and proc.returncode != 0:
            raise RuntimeError(f"{tool}: clean run failed: {stderr[-2000:]}")
        return proc

    def target_state(self, tool: str, before: str) -> str:
        target = self.targets[tool]
        if _digest(target) == before:
            return "before"
        if tool == "convert":
            from l3.validate import validate

            problems = validate(target, deep=False)
            return "new" if not problems else f"damaged ({problems[0]})"
        from l2.format.validate import validate_file

        report = validate_file(target)
        return "new" if report.ok else f"damaged ({report.violations[0]})"

    def round(self, tool: str, rng: random.Random) -> ToolRound:
        target = self.targets[tool]
        inputs = [self.a, self.b]
        before, before_inputs = _digest(target), [_digest(p) for p in inputs]
        self.variant += 1
        delay = rng.uniform(*self.window[tool])
        proc = self.run(tool, kill_after=delay)
        state = self.target_state(tool, before)
        intact = [_digest(p) for p in inputs] == before_inputs

        def temporaries() -> list[str]:
            return [p.name for p in target.parent.iterdir() if p.name.startswith(f".{target.name}.")]

        mid_write = bool(temporaries())
        self.run(tool)  # the next run of the same tool clears what the killed one left
        leftovers = temporaries()
        moment = f"{delay:.2f} s of {self.window[tool][1]:.1f}"
        return ToolRound(tool, moment, proc.returncode, state, intact, mid_write, not leftovers)


def tool_rounds(kills: int, rng: random.Random) -> list[ToolRound]:
    rounds = []
    if not kills:
        return rounds
    with tempfile.TemporaryDirectory() as tmp:
        bench = ToolBench(Path(tmp))
        print("\n  tool    killed at     exit  writing  target  inputs  temporary")
        for i in range(kills):
            r = bench.round(TOOLS[i % len(TOOLS)], rng)
            rounds.append(r)
            print(
                f"  {r.tool:<7} {r.moment:<13} {r.exit_code:>4}  {'yes' if r.mid_write else 'no':<7}  {r.target:<6}  "
                f"{'intact' if r.inputs_intact else 'CHANGED':<6}  {'cleared' if r.stale_cleared else 'LEFT'}",
                flush=True,
            )
    killed = sum(r.exit_code == -signal.SIGKILL for r in rounds)
    print(
        f"\n  tools: {killed}/{len(rounds)} killed mid-run ({sum(r.mid_write for r in rounds)} while writing), "
        "target old or new whole in "
        f"{sum(r.target in ('before', 'new') for r in rounds)}/{len(rounds)}, inputs intact in "
        f"{sum(r.inputs_intact for r in rounds)}/{len(rounds)}, temporaries cleared in "
        f"{sum(r.stale_cleared for r in rounds)}/{len(rounds)}"
    )
    return rounds


def main(argv: list[str] | None = None) -> int:
    from l2.format import cli_args

    parser = cli_args.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=20, help="rounds, half of each mode (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="picks the moments (default: %(default)s)")
    parser.add_argument(
        "--max-delay",
        type=float,
        default=20.0,
        help="outside kills: at most this many s after collection starts (default: %(default)s)",
    )
    parser.add_argument(
        "--startup-timeout",
        type=float,
        default=300.0,
        help="s to wait for a run to start collecting (default: %(default)s)",
    )
    parser.add_argument("--cameras", action="store_true", help="record both cameras (default: state only)")
    parser.add_argument("--file", type=Path, default=None, help="demo file to collect into (default: a temp file)")
    parser.add_argument(
        "--driver-kills",
        type=int,
        default=2,
        help="rounds that kill a --workers driver while a second one waits to resume (default: %(default)s)",
    )
    parser.add_argument(
        "--tool-kills",
        type=int,
        default=9,
        help="rounds that kill conversion, merge and split, in turns (default: %(default)s)",
    )
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    rounds: list[Round] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file or Path(tmp) / "crash_lift_cube.hdf5"
        for i in range(args.kills):
            mode = ("outside", "in-write", "in-flush")[i % 3]
            r = run_round(path, args, rng, mode, seed=1000 + i)
            rounds.append(r)
            print(
                f"  {i + 1:>3}  {r.mode:<9} {r.moment:<27} exit {r.exit_code:>4}  reported {r.reported:>3}  "
                f"demos {r.before:>3} -> {r.after:>3}  lost {r.lost}  {r.verdict}",
                flush=True,
            )
            if not r.valid:
                break
    killed = sum(r.exit_code == -signal.SIGKILL for r in rounds)
    survived = sum(r.valid for r in rounds)
    lost = sum(r.lost for r in rounds if r.valid)
    if rounds:
        print(
            f"\n  kills {killed}/{len(rounds)} rounds (SIGKILL), file valid after {survived}/{len(rounds)}, "
            f"reported demos lost {lost}, demos in the file at the end {rounds[-1].after}"
        )
    drivers = driver_rounds(args.driver_kills, rng)
    tools = tool_rounds(args.tool_kills, rng)
    collection_ok = survived == len(rounds) and lost == 0 and killed == len(rounds)
    ran = rounds or drivers or tools
    return 0 if ran and collection_ok and all(r.ok for r in drivers) and all(r.ok for r in tools) else 1


if __name__ == "__main__":
    sys.exit(main())
