"""Fault campaign: every resource fault a user meets, on real small filesystems, each checked the same way.

    python bench/fault_campaign.py            # every case (the collection ones start the simulator: ~4 min)
    python bench/fault_campaign.py --no-sim   # the tools only (seconds)

A case runs a real command of the project against a fault: a full filesystem (a tmpfs of a few MB), a
read-only one, a second writer, SIGINT / SIGTERM in the middle of the work. It passes when the command ends
with exactly one ``error:`` line and no traceback, the exit status the docs promise (2; 130 / 143 for a
signal), its inputs byte-identical (or, for a collection, the file valid with every demo it had), and nothing
left beside the target (no temporary, no spool). Mounting needs root: as root or in CI (``CI=true``) a tmpfs that
cannot be mounted fails the campaign (exit 1, saying why); elsewhere it says that it skipped and why, exit 0.
Nothing here is timed: the seconds column only shows what a case costs.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ONE_PROCESS = ("--num_envs", "2", "--workers", "1")
"""A collection in one process: the faults hit the recorder's own file (the workers' shards: tests/test_workers.py)."""
AUTO = ("--num_envs", "2", "--workers", "auto")
"""A collection as a user starts it: one collector process per core (two envs: at most two)."""
for p in (REPO, REPO / "tests"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))


@dataclass
class Outcome:
    case: str
    exit_code: int
    expected_code: int
    line: str | None
    """The one ``error:`` line (None: none, several, or a traceback)."""
    inputs_intact: bool
    leftovers: list[str]
    seconds: float

    @property
    def ok(self) -> bool:
        return (
            self.exit_code == self.expected_code and self.line is not None and self.inputs_intact and not self.leftovers
        )


def one_line(stderr: str) -> str | None:
    lines = [x for x in stderr.splitlines() if x.startswith("error: ")]
    return lines[0] if len(lines) == 1 and "Traceback" not in stderr else None


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextlib.contextmanager
def tmpfs(folder: Path, options: str) -> Iterator[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], check=True, capture_output=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)


def can_mount(work: Path) -> str | None:
    """None when a tmpfs can be mounted here, else why not."""
    probe = work / "probe"
    probe.mkdir()
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(probe)], capture_output=True)
    if mount.returncode != 0:
        return mount.stderr.decode().strip() or f"mount exited {mount.returncode}"
    subprocess.run(["umount", str(probe)], check=False)
    return None


class EndedBeforeSignal(Exception):
    """The command finished before ``signal_when`` held: the case tried nothing (run it again)."""


def run(*args: str, signal_when: Callable[[], bool] | None = None, sig: int = signal.SIGTERM):
    """A command of the project (``python ARGS``), optionally signalled once ``signal_when()`` holds."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, *args], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    if signal_when is not None:
        while not signal_when() and proc.poll() is None:
            time.sleep(0.01)
        if proc.poll() is not None:
            stdout, stderr = proc.communicate()
            raise EndedBeforeSignal(
                f"python {' '.join(args)} ended (exit {proc.returncode}) after {time.perf_counter() - start:.1f} s "
                f"before it could be signalled: {one_line(stderr) or one_line(stdout)}"
            )
        proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=1800)
    return proc.returncode, stdout, stderr


class Campaign:
    def __init__(self, work: Path):
        from l3_fixtures import make_l2_file

        self.work = work
        self.data = make_l2_file(work / "scripted_lift_cube.hdf5", 12, camera=True, length=80, frame_size=(224, 224))
        self.copy = work / "scripted_copy.hdf5"
        self.copy.write_bytes(self.data.read_bytes())
        self.inputs = {p: digest(p) for p in (self.data, self.copy)}
        self.outcomes: list[Outcome] = []

    def check(
        self, case: str, folder: Path, expected: int, command: Callable[[], tuple], keep=(), names: str = ""
    ) -> None:
        """Run ``command`` (again when it outran its signal) and record its outcome; ``names``: what its line must
        say."""
        start = time.perf_counter()
        for _ in range(3):  # a signal case whose command outran its trigger (a busy machine) runs again
            try:
                code, _, stderr = command()
                break
            except EndedBeforeSignal as e:
                missed = str(e)
                print(f"  {case}: {missed}; again", file=sys.stderr)
                for p in folder.iterdir():  # what the finished command wrote would count as left behind
                    if p.name not in keep:
                        if p.is_dir():
                            shutil.rmtree(p)
                        else:
                            p.unlink()
        else:
            code, stderr = -1, f"error: never signalled in 3 runs: {missed}"
        leftovers = sorted(p.name for p in folder.iterdir() if p.name not in keep)
        intact = all(digest(p) == h for p, h in self.inputs.items())
        line = one_line(stderr)
        self.outcomes.append(
            Outcome(
                case,
                code,
                expected,
                line if line and names in line else None,
                intact,
                leftovers,
                time.perf_counter() - start,
            )
        )

    # -- the tools -----------------------------------------------------------------------------------------
    def tools(self) -> None:
        disk = self.work / "disk"
        data, copy = str(self.data), str(self.copy)
        with tmpfs(disk, "size=1m"):
            for version in ("v2.1", "v3.0"):
                out = str(disk / "lift_cube_gr00t")
                self.check(
                    f"convert ({version}) onto a full disk",
                    disk,
                    2,
                    lambda v=version, o=out: run("l3/convert.py", data, "-o", o, "--codebase-version", v, "-q"),
                )
            self.check(
                "merge onto a full disk",
                disk,
                2,
                lambda: run("-m", "l2.tools.merge", data, copy, "-o", f"{disk}/m.hdf5"),
            )
            filler = disk / "filler"
            filler.write_bytes(b"\0" * (shutil.disk_usage(disk).free - (16 << 10)))
            self.check(
                "inspection report onto a full disk",
                disk,
                2,
                lambda: run("-m", "l2.tools.inspect_demos", data, "-o", f"{disk}/report.html", "--quiet"),
                keep=("filler",),
            )
        with tmpfs(disk, f"size={self.data.stat().st_size + (512 << 10)}"):
            target = disk / self.data.name
            target.write_bytes(self.data.read_bytes())
            self.inputs[target] = digest(target)
            self.check(
                "split, no room for its copy",
                disk,
                2,
                lambda: run("-m", "l2.tools.split", str(target)),
                keep=(target.name,),
            )
            subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
            self.check(
                "split of a file on a read-only filesystem",
                disk,
                2,
                lambda: run("-m", "l2.tools.split", str(target)),
                keep=(target.name,),
            )
            del self.inputs[target]
        with tmpfs(disk, "ro,size=1m"):
            self.check(
                "convert into a read-only folder", disk, 2, lambda: run("l3/convert.py", data, "-o", f"{disk}/ds", "-q")
            )
            self.check(
                "merge into a read-only folder",
                disk,
                2,
                lambda: run("-m", "l2.tools.merge", data, "-o", f"{disk}/m.hdf5"),
            )
        out = self.work / "out"
        out.mkdir()
        self.check(
            "SIGTERM while converting",
            out,
            143,
            lambda: run(
                "l3/convert.py",
                data,
                copy,
                "-o",
                f"{out}/ds",
                signal_when=lambda: bool(list(out.glob(".ds.*/data/*/*.parquet"))),
            ),
        )
        self.check(
            "SIGTERM while merging",
            out,
            143,
            lambda: run(
                "-m",
                "l2.tools.merge",
                data,
                copy,
                "-o",
                f"{out}/m.hdf5",
                signal_when=lambda: bool(list(out.glob(".m.hdf5.*"))),
            ),
        )
        self.check(
            "Ctrl-C while splitting",
            out,
            130,
            lambda: self._split_interrupted(out),
            keep=("s.hdf5",),
        )

    def _split_interrupted(self, out: Path):
        target = out / "s.hdf5"
        target.write_bytes(self.data.read_bytes())
        self.inputs[target] = digest(target)
        started = lambda: bool(list(out.glob(".s.hdf5.*")))  # noqa: E731
        return run("-m", "l2.tools.split", str(target), signal_when=started, sig=signal.SIGINT)

    # -- the collectors (the simulator) ----------------------------------------------------------------------
    def collectors(self) -> None:
        from l2.format.validate import validate_file

        scripted = str(REPO / "l2" / "scripted" / "run.py")
        base = self.work / "base" / "scripted_lift_cube.hdf5"
        base.parent.mkdir()
        code, _, stderr = run(scripted, *ONE_PROCESS, "--num_demos", "2", "--output", str(base))
        if code != 0:
            raise RuntimeError(f"could not collect the base file: {stderr[-2000:]}")
        disk = self.work / "disk"
        with tmpfs(disk, f"size={base.stat().st_size + (3 << 20)}"):
            target = disk / base.name
            target.write_bytes(base.read_bytes())
            demos = validate_file(target).episodes
            self.check(
                "collect (append, cameras) onto a nearly full disk",
                disk,
                2,
                lambda: run(scripted, *ONE_PROCESS, "--num_demos", "20", "--output", str(target), "--append"),
                keep=(target.name,),
            )
            report = validate_file(target)
            self.outcomes[-1].inputs_intact = report.ok and report.episodes >= demos
        with tmpfs(disk, "size=1m"):
            self.check(
                "evaluate --record onto a 1 MB disk",
                disk,
                2,
                lambda: run(
                    "-m", "l2.evaluate", "--episodes", "4", "--num_envs", "2", "--record", f"{disk}/policy_x.hdf5"
                ),
            )
        with tmpfs(disk, "ro,size=1m"):
            self.check(
                "collect into a read-only folder",
                disk,
                2,
                lambda: run(scripted, "--num_envs", "1", "--num_demos", "1", "--output", f"{disk}/d/scripted_x.hdf5"),
            )
        for label, first_run in (("a one-process run", ONE_PROCESS), ("a --workers auto run", AUTO)):
            self._second_collector(scripted, label, first_run)

    def _second_collector(self, scripted: str, label: str, first_run: tuple[str, ...]) -> None:
        """While ``first_run`` collects into a file, second collectors (``--workers auto``, as a user starts them; as
        given and with ``--append``) are refused in one line naming its pid; then Ctrl-C ends it with its summary."""
        from l2.format.locks import LOCK, lock_holder
        from l2.format.validate import validate_file
        from l2.recording.output import work_folder

        folder = self.work / f"busy_{len(self.outcomes)}"
        folder.mkdir()
        target = folder / "scripted_lift_cube.hdf5"
        work = work_folder(target)
        err = self.work / f"{folder.name}.stderr"  # a file, not a pipe: its progress bar must never block it
        with open(err, "w") as stderr:
            first = subprocess.Popen(
                [sys.executable, scripted, *first_run, "--num_demos", "40", "--output", str(target)],
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        written = lambda: _has_demo(target) or any(_has_demo(p) for p in work.glob("shard_[0-9]*.hdf5"))  # noqa: E731
        while first.poll() is None and not (lock_holder(work / LOCK) == first.pid and written()):
            time.sleep(0.5)
        # The first run's own: its lock's folder, its camera spool, the undo journal of the file it appends to.
        keep = (target.name, work.name, f".{target.stem}.{first.pid}.frames.spool", f"{target.name}.journal")
        for extra in ((), ("--append",)):
            self.check(
                f"a second collector{' appending' if extra else ''} while {label} writes the file",
                folder,
                2,
                lambda e=extra: run(scripted, *AUTO, "--num_demos", "2", "--output", str(target), *e),
                keep=keep,
                names=f"in use by another process (pid {first.pid})",
            )
        start = time.perf_counter()
        first.send_signal(signal.SIGINT)
        stdout, _ = first.communicate(timeout=600)
        report = validate_file(target)
        summary = "interrupted" in stdout and "by SIGINT" in stdout and "Traceback" not in err.read_text()
        self.outcomes.append(
            Outcome(
                f"Ctrl-C while {label} collects (a summary, not an error line)",
                first.returncode,
                130,
                "summary marked interrupted" if summary else None,
                report.ok and report.episodes >= 1,
                sorted(p.name for p in folder.iterdir() if p.name != target.name),
                time.perf_counter() - start,
            )
        )


def _has_demo(path: Path) -> bool:
    import h5py

    with contextlib.suppress(Exception), h5py.File(path, "r", locking=False) as f:
        return len(f["data"]) > 0
    return False


def main(argv: list[str] | None = None) -> int:
    from l2.format import cli_args

    parser = cli_args.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-sim", dest="sim", action="store_false", help="only the tools (no simulator)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        why = can_mount(work)
        if why is not None and (os.geteuid() == 0 or os.environ.get("CI") == "true"):
            who = "as root" if os.geteuid() == 0 else "in CI (CI=true)"
            print(f"faults: FAILED, cannot mount a tmpfs {who} ({why}): no case could run", file=sys.stderr)
            return 1
        if why is not None:
            print(f"faults: skipped, not root: cannot mount a tmpfs here ({why}); run as root, as CI does")
            return 0
        campaign = Campaign(work)
        campaign.tools()
        if args.sim:
            campaign.collectors()
    rows = campaign.outcomes
    width = max(len(o.case) for o in rows)
    print(f"\n  {'case':<{width}}  exit  one line  inputs  left beside  seconds")
    for o in rows:
        print(
            f"  {o.case:<{width}}  {o.exit_code:>4}  {'yes' if o.line else 'NO':<8}  "
            f"{'intact' if o.inputs_intact else 'CHANGED':<6}  {', '.join(o.leftovers) or 'nothing':<11}  "
            f"{o.seconds:>7.1f}" + ("" if o.exit_code == o.expected_code else f"  (expected exit {o.expected_code})")
        )
    print("\n  the lines:")
    for o in rows:
        print(f"  {o.case}: {re.sub(r'/tmp/[^ ]*/', '.../', o.line or '(none)')}")
    passed = sum(o.ok for o in rows)
    print(f"\n  faults: {passed}/{len(rows)} cases end in one line with their exit status, inputs intact, nothing left")
    return 0 if passed == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
