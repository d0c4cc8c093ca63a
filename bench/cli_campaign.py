"""Bad command lines against every command: each must end in one line, with no traceback and nothing written.

The cases are derived from each command's own argparse definition (its parser is taken from its ``main`` without
running it): every input path argument gets a missing path, the other kind of path (a folder for a file, a file
for a folder), an empty folder, random bytes and a truncated copy of a valid input; every output path an existing
path of the other kind and a path under a file; every typed option a value of the wrong type and values past its
bounds (``l2.format.cli_args`` types say which); ``--config`` files that are not UTF-8, not YAML, or hold an unknown
key; the ``KEY=VALUE`` overrides of the simulator commands an unknown preset, an unknown key and a malformed one.
An unknown option is tried on every command. Every other argument keeps a valid value, so the error is the case's
own.

Each case runs in its own process (``python -m MODULE ...`` or ``python bench/X.py ...``, in an empty working
folder) under a time limit. It passes when the exit status is 1 or 2, stderr holds exactly one non-empty line,
neither stream holds a traceback, the working folder is still empty and the inputs are unchanged (hashed before
and after). Prints a table of command x category (cases, passed) and every failure; exit status 1 if any failed.

Examples::

    python bench/cli_campaign.py                      # every command (a few minutes on 2 cores)
    python bench/cli_campaign.py --commands l3.validate l2.replay --jobs 2
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from l2.format import cli_args  # noqa: E402
from l2.recording.sim import override_arg  # noqa: E402


@dataclass
class Inputs:
    """Valid inputs every command's base command line draws on, made once in the campaign's folder."""

    root: Path
    demos: Path  # a small L2 file (state only)
    dataset: Path  # its GR00T LeRobot dataset
    config: Path  # a state-only mapping config
    rl_checkpoint: Path
    bc_checkpoint: Path
    trace: Path


def make_inputs(root: Path) -> Inputs:
    from l3_fixtures import make_l2_file, state_only_config

    root.mkdir(parents=True, exist_ok=True)
    demos = make_l2_file(root / "scripted_lift_cube.hdf5", n=2)
    config = state_only_config(root, REPO / "config" / "lift_cube.yaml")
    dataset = root / "dataset"
    subprocess.run(
        [sys.executable, "-m", "l3.convert", str(demos), "--config", str(config), "--output", str(dataset)],
        cwd=root,
        check=True,
        capture_output=True,
    )
    return Inputs(
        root,
        demos,
        dataset,
        config,
        REPO / "l2" / "lift" / "config" / "franka" / "policies" / "rl" / "model.pt",
        REPO / "l2" / "lift" / "config" / "franka" / "policies" / "bc" / "model.pth",
        REPO / "config" / "teleop" / "lift_cube_trace.json",
    )


@dataclass
class Command:
    """A command: how to start it, and a valid command line to vary (``base`` given the inputs)."""

    name: str
    start: list[str]  # ["-m", module] or [script path]
    module: str  # where its parser comes from
    base: Callable[[Inputs], list[str]]
    sub: str | None = None  # a sub-command's name (l2.serve)


def _none(_: Inputs) -> list[str]:
    return []


def _m(module: str, base: Callable[[Inputs], list[str]] = _none, name: str | None = None, sub: str | None = None):
    return Command(name or module + (f" {sub}" if sub else ""), ["-m", module], module, base, sub)


def _script(path: str, base: Callable[[Inputs], list[str]] = _none) -> Command:
    return Command(path, [str(REPO / path)], path, base)


COMMANDS = [
    _m("l2.scripted.run"),
    _m("l2.rl.rollout"),
    _m("l2.teleop.run"),
    _m("l2.mimic.run", lambda i: ["--input", str(i.demos)], name="l2.mimic"),
    _m("l2.replay", lambda i: [str(i.demos)]),
    _m("l2.evaluate"),
    _m("l2.distributed", lambda i: ["--source", "scripted", "--num_demos", "1", "--workers", "1", "--output", "out"]),
    _m("l2.serve", lambda i: ["replay", str(i.dataset), "--config", str(i.config)], sub="replay"),
    _m("l2.serve", lambda i: ["robomimic", str(i.bc_checkpoint)], sub="robomimic"),
    _m("l2.format.validate", lambda i: [str(i.demos)]),
    _m("l2.tools.merge", lambda i: [str(i.demos), "--output", "merged.hdf5"]),
    _m("l2.tools.split", lambda i: [str(i.demos)]),
    _m("l2.tools.inspect_demos", lambda i: [str(i.demos)]),
    _m("l2.tools.frame_strip", lambda i: [str(i.demos)]),
    _m("l3.convert", lambda i: [str(i.demos), "--config", str(i.config), "--output", "out"]),
    _m("l3.validate", lambda i: [str(i.dataset)]),
    _m("l3.inspect_dataset", lambda i: [str(i.dataset)]),
    _m("l2.rl.train"),
    _m("l2.rl.pretrain", lambda i: ["--output", "warm.pt"]),
    _m("l2.rl.checkpoint", lambda i: [str(i.rl_checkpoint), "--to", "exported"]),
    _m("l2.rl.plot"),
    _m("l2.bc.train"),
    _m("l2.bc.lerobot_train", lambda i: [str(i.dataset), "--output", "run"]),
    _m("l2.bc.ship", lambda i: [str(i.root), "--to", "shipped"]),
    _m("l2.bc.plot"),
    _m("l2.teleop.make_trace"),
    _m("l2.recording.warmup"),
    _m("l2.assets.franka_build"),
    _m("l2.assets.so101_build"),
    _script("bench/cli_campaign.py"),
    _script("bench/convert.py"),
    _script("bench/fuzz_inputs.py"),
    _script("bench/fault_campaign.py"),
    _script("bench/crash_campaign.py"),
    _script("bench/record_overhead.py"),
    _script("bench/cameras.py"),
    _script("bench/variety.py"),
    _script("bench/policy_protocol.py"),
]


# ------------------------------------------------------------------------------------------------- parsers
class _Parsed(Exception):
    def __init__(self, parser: argparse.ArgumentParser):
        self.parser = parser


def parser_of(command: Command) -> argparse.ArgumentParser:
    """The command's parser, taken from the first ``parse_args`` its ``main`` calls (nothing else of it runs)."""

    def capture(self, *args, **kwargs):
        raise _Parsed(self)

    if command.module.endswith(".py"):
        spec = importlib.util.spec_from_file_location(f"_campaign_{Path(command.module).stem}", REPO / command.module)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(command.module)
    original = argparse.ArgumentParser.parse_args
    argparse.ArgumentParser.parse_args = capture
    try:
        module.main([])
    except _Parsed as parsed:
        parser = parsed.parser
    else:
        raise RuntimeError(f"{command.name}: main() parsed no command line")
    finally:
        argparse.ArgumentParser.parse_args = original
    if command.sub:
        subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = subs.choices[command.sub]
    return parser


# --------------------------------------------------------------------------------------------------- cases
@dataclass
class Case:
    command: Command
    category: str
    argv: list[str]
    setup: Callable[[Path], None] | None = None  # makes what the case names, in its working folder


def _replace(base: list[str], action: argparse.Action, value: str) -> list[str]:
    """``base`` with ``action`` given ``value`` (an option replaced or added; a positional replaced)."""
    if action.option_strings:
        argv, flags, k = [], set(action.option_strings), 0
        while k < len(base):
            if base[k] in flags:
                k += 2
                continue
            argv.append(base[k])
            k += 1
        return [*argv, action.option_strings[0], value]
    positionals = [
        k for k, a in enumerate(base) if not a.startswith("-") and (k == 0 or not base[k - 1].startswith("-"))
    ]
    argv = list(base)
    if positionals:
        argv[positionals[0]] = value
    else:
        argv.append(value)
    return argv


def _write(name: str, data: bytes) -> Callable[[Path], None]:
    def setup(cwd: Path) -> None:
        path = cwd.parent / "given" / name  # outside the working folder, which must stay empty
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    return setup


def _folder(name: str, with_file: bool = False) -> Callable[[Path], None]:
    def setup(cwd: Path) -> None:
        path = cwd.parent / "given" / name
        path.mkdir(parents=True, exist_ok=True)
        if with_file:
            (path / "note.txt").write_text("not what the command reads\n")

    return setup


GIVEN = "../given"
RANDOM = os.urandom(4096)


def _input_cases(command: Command, action: argparse.Action, base: list[str], inputs: Inputs) -> list[Case]:
    kind = getattr(action.type, "kind", None)
    value = _value(base, action)
    cases = [Case(command, "missing path", _replace(base, action, "no_such/file.hdf5"))]
    if kind in ("file", "path"):
        cases.append(
            Case(command, "random bytes", _replace(base, action, f"{GIVEN}/random.bin"), _write("random.bin", RANDOM))
        )
        if value and Path(value).is_file() and action.dest != "config":  # half a YAML config may still be one
            data = Path(value).read_bytes()
            cases.append(
                Case(
                    command,
                    "truncated file",
                    _replace(base, action, f"{GIVEN}/cut.bin"),
                    _write("cut.bin", data[: len(data) // 2]),
                )
            )
    if kind == "file":
        cases.append(
            Case(command, "folder for a file", _replace(base, action, f"{GIVEN}/folder"), _folder("folder", True))
        )
    if kind in ("folder", "path"):
        cases.append(Case(command, "empty folder", _replace(base, action, f"{GIVEN}/empty"), _folder("empty")))
    if kind == "folder":
        cases.append(
            Case(
                command,
                "file for a folder",
                _replace(base, action, f"{GIVEN}/random.bin"),
                _write("random.bin", RANDOM),
            )
        )
    if action.dest == "config":
        bad = {
            "config not UTF-8": b"state:\n  \xca\xfe: [1, 2]\n",
            "config not YAML": b"state: [unclosed\n  - :\n",
            "config unknown key": (Path(value).read_bytes() if value else b"") + b"\nno_such_key: 1\n",
            "config mistyped value": b"fps: fast\nstate: 3\n",
        }
        for category, data in bad.items():
            cases.append(
                Case(command, category, _replace(base, action, f"{GIVEN}/config.yaml"), _write("config.yaml", data))
            )
    return cases


def _output_cases(command: Command, action: argparse.Action, base: list[str]) -> list[Case]:
    kind = action.type.kind
    cases = [
        Case(
            command,
            "output under a file",
            _replace(base, action, f"{GIVEN}/random.bin/out"),
            _write("random.bin", RANDOM),
        )
    ]
    if kind == "output_file":
        cases.append(
            Case(
                command, "folder for an output file", _replace(base, action, f"{GIVEN}/folder"), _folder("folder", True)
            )
        )
    else:
        cases.append(
            Case(
                command,
                "file for an output folder",
                _replace(base, action, f"{GIVEN}/random.bin"),
                _write("random.bin", RANDOM),
            )
        )
    return cases


def _value_cases(command: Command, action: argparse.Action, base: list[str]) -> list[Case]:
    typ, kind = action.type, getattr(action.type, "kind", None)
    if kind == "host_port":
        return [Case(command, "bad value", _replace(base, action, v)) for v in ("nocolon", "host:0", "host:http")]
    if kind in ("int", "port", "float") or typ in (int, float):
        values = ["abc"]
        low, high = getattr(typ, "minimum", None), getattr(typ, "maximum", None)
        if low is not None:
            values.append(str(low - 1) if kind != "float" else f"{low - 0.5:g}")
        if high is not None:
            values.append(str(high + 1))
        return [
            Case(command, "out of range" if v != "abc" else "wrong type", _replace(base, action, v)) for v in values
        ]
    return []


def _value(base: list[str], action: argparse.Action) -> str | None:
    if action.option_strings:
        for k, a in enumerate(base[:-1]):
            if a in action.option_strings:
                return base[k + 1]
        return action.default if isinstance(action.default, str) else None
    positionals = [
        a for k, a in enumerate(base) if not a.startswith("-") and (k == 0 or not base[k - 1].startswith("-"))
    ]
    return positionals[0] if positionals else None


def cases_of(command: Command, inputs: Inputs) -> list[Case]:
    """Every bad command line of ``command`` its parser gives reason to try."""
    parser = parser_of(command)
    base = command.base(inputs)
    prefix, vary = (base[:1], base[1:]) if command.sub else ([], base)  # a sub-command's name stays first
    cases = [Case(command, "unknown option", [*base, "--no-such-option"])]
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        kind = getattr(action.type, "kind", None)
        if kind in ("file", "folder", "path"):
            found = _input_cases(command, action, vary, inputs)
        elif kind in ("output_file", "output_folder"):
            found = _output_cases(command, action, vary)
        elif action.type is override_arg:
            found = [
                Case(command, "unknown preset or override", [*vary, v])
                for v in ("presets=no_such_preset", "env.no_such_key=1", "not_an_override")
            ]
        else:
            found = _value_cases(command, action, vary)
        for case in found:
            case.argv = prefix + case.argv
        cases += found
    return cases


# ------------------------------------------------------------------------------------------------ running
@dataclass
class Outcome:
    case: Case
    ok: bool
    why: str
    seconds: float


def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_file() and not path.is_symlink():
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def run_case(case: Case, inputs: Inputs, timeout: float) -> Outcome:
    """Run one case in an empty working folder; pass when it ends in one line, status 1 or 2, nothing written."""
    with tempfile.TemporaryDirectory(prefix="cli_case_") as tmp:
        cwd = Path(tmp) / "cwd"
        cwd.mkdir()
        if case.setup:
            case.setup(cwd)
        given = cwd.parent / "given"
        before = (_tree_digest(inputs.root), _tree_digest(given) if given.exists() else "")
        env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONWARNINGS": "ignore"}
        start = time.perf_counter()
        try:
            proc = subprocess.run(
                [sys.executable, *case.command.start, *case.argv],
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            return Outcome(case, False, f"still running after {timeout:g} s", timeout)
        seconds = time.perf_counter() - start
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        after = (_tree_digest(inputs.root), _tree_digest(given) if given.exists() else "")
        left = sorted(p.name for p in cwd.iterdir())
        why = ""
        if "Traceback" in proc.stderr or "Traceback" in proc.stdout:
            why = "traceback: " + next(line for line in reversed(lines) if line.strip())
        elif proc.returncode not in (1, 2):
            why = f"exit status {proc.returncode}" + (f": {lines[-1]}" if lines else "")
        elif len(lines) != 1:
            why = f"{len(lines)} lines on stderr: " + " | ".join(lines[:3])
        elif left:
            why = f"wrote {', '.join(left)}"
        elif after != before:
            why = "changed its inputs"
        return Outcome(case, not why, why or lines[0], seconds)


def print_table(outcomes: list[Outcome]) -> None:
    table: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for o in outcomes:
        table[(o.case.command.name, o.case.category)].append(o.ok)
    width = max(len(c) for c, _ in table)
    cat_width = max(len(k) for _, k in table)
    print(f"\n{'command':<{width}}  {'category':<{cat_width}}  cases  passed")
    for (command, category), oks in sorted(table.items()):
        print(f"{command:<{width}}  {category:<{cat_width}}  {len(oks):>5}  {sum(oks):>6}")
    passed = sum(o.ok for o in outcomes)
    commands = len({o.case.command.name for o in outcomes})
    print(
        f"\ncli campaign: {len(outcomes)} cases over {commands} commands: {passed} passed, "
        f"{len(outcomes) - passed} failed"
    )


def main(argv: list[str] | None = None) -> int:
    parser = cli_args.Parser(
        prog="python bench/cli_campaign.py",
        description=__doc__.split("\n\n")[0],
        epilog="examples:" + __doc__.split("Examples::")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    names = sorted({c.name for c in COMMANDS})
    parser.add_argument("--commands", nargs="+", choices=names, metavar="NAME", help=f"only these ({', '.join(names)})")
    parser.add_argument(
        "--jobs", type=cli_args.positive_int, default=os.cpu_count() or 1, help="cases run at once (default: the cores)"
    )
    parser.add_argument(
        "--timeout", type=cli_args.positive_float, default=120.0, help="seconds a case may run (default: %(default)s)"
    )
    parser.add_argument(
        "--max-cases", type=cli_args.positive_int, default=None, help="at most this many cases per command"
    )
    args = parser.parse_args(argv)

    commands = [c for c in COMMANDS if not args.commands or c.name in args.commands]
    with tempfile.TemporaryDirectory(prefix="cli_campaign_") as tmp:
        inputs = make_inputs(Path(tmp) / "inputs")
        cases: list[Case] = []
        for command in commands:
            found = cases_of(command, inputs)
            cases += found[: args.max_cases] if args.max_cases else found
        print(f"cli campaign: {len(cases)} cases over {len(commands)} commands, {args.jobs} at a time", flush=True)
        from tqdm import tqdm

        with ThreadPoolExecutor(args.jobs) as pool, tqdm(total=len(cases), unit="case", mininterval=0.5) as bar:
            outcomes = []
            for outcome in pool.map(lambda c: run_case(c, inputs, args.timeout), cases):
                outcomes.append(outcome)
                bar.update(1)
    print_table(outcomes)
    failed = [o for o in outcomes if not o.ok]
    for o in failed:
        print(f"FAILED {o.case.command.name} [{o.case.category}] {' '.join(o.case.argv)}: {o.why}")
    return 1 if failed else 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
