"""Crash campaign: kill -9 a real scripted collection again and again; the demo file must survive.

    python bench/crash_campaign.py                       # 20 kills, state-only (about 20 min on 2 cores)
    python bench/crash_campaign.py --kills 4 --seed 1    # quicker
    python bench/crash_campaign.py --cameras             # with both cameras (streamed frames), slower

Every round launches ``l2/scripted/run.py --append`` on the same file (4 envs), waits until it is
collecting, and kills it with SIGKILL, in turns:

  - ``outside``: after a random delay, from this process;
  - ``in-write``: the child kills itself in the middle of writing a demo group (while h5py creates the
    n-th dataset of its k-th episode, n and k random): the worst moment for the file.

After each kill the file must pass ``l2.format.validate``, every demo the run had reported as written (its
progress bar, updated after each flushed episode) must still be in it (``lost`` counts those that are
not), and the next round appends to the same file. Nothing here is timed: the delays only pick moments.
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

# The child: the scripted runner, with h5py's create_dataset wrapped so that the run can kill itself
# while writing the k-th episode (CRASH_EPISODE) at its n-th dataset (CRASH_DATASET); 0 = never.
CHILD = """
import ctypes, os, signal, sys
ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: dies with the campaign, never left running
sys.path.insert(0, {repo!r})
import h5py
from l2.recording import handler as recording
episode, dataset = int(os.environ["CRASH_EPISODE"]), int(os.environ["CRASH_DATASET"])
write, create = recording.L2DatasetFileHandler.write_episode, h5py.Group.create_dataset
seen = {{"episodes": 0, "datasets": 0}}
def create_dataset(group, *args, **kwargs):
    seen["datasets"] += 1
    if seen["datasets"] == dataset:
        os.kill(os.getpid(), signal.SIGKILL)
    return create(group, *args, **kwargs)
def write_episode(self, data, *args, **kwargs):
    seen["episodes"] += not data.is_empty()  # the first reset exports an empty episode, which writes nothing
    if seen["episodes"] == episode:
        h5py.Group.create_dataset = create_dataset
    return write(self, data, *args, **kwargs)
recording.L2DatasetFileHandler.write_episode = write_episode
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
    episode, dataset = (rng.randint(1, 4), rng.randint(1, 12)) if mode == "in-write" else (0, 0)
    cmd = [
        sys.executable,
        "-c",
        CHILD.format(repo=str(REPO)),
        "--num_envs",
        "4",
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
    env = {**os.environ, "CRASH_EPISODE": str(episode), "CRASH_DATASET": str(dataset)}
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
        moment = f"episode {episode}, dataset {dataset}"
    try:
        proc.wait(timeout=args.startup_timeout + args.max_delay + 600)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    reader.join(timeout=10)
    valid, verdict = validator_verdict(path) if path.exists() else (before == 0, "no file yet")
    return Round(mode, moment, reported, before, demos_in(path) if valid else -1, valid, verdict, proc.returncode)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
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
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    rounds: list[Round] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file or Path(tmp) / "crash_lift_cube.hdf5"
        for i in range(args.kills):
            mode = ("outside", "in-write")[i % 2]
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
    print(
        f"\n  kills {killed}/{len(rounds)} rounds (SIGKILL), file valid after {survived}/{len(rounds)}, "
        f"reported demos lost {lost}, demos in the file at the end {rounds[-1].after if rounds else 0}"
    )
    return 0 if rounds and survived == len(rounds) and lost == 0 and killed == len(rounds) else 1


if __name__ == "__main__":
    sys.exit(main())
