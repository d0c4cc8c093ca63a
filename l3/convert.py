"""Convert L2 HDF5 demonstrations (and real-robot exports) into a GR00T LeRobot v2.1 dataset: wiring and CLI.

One way through: the readers (:mod:`l3.inputs`) scan the inputs, :class:`l3.writer.MetaWriter` numbers
the episodes to write, each is read and written once under its numbers (:func:`l3.writer.write_episode`,
in worker processes), the MetaWriter writes ``meta/``, and :mod:`l3.validate` checks the result before it
is renamed into place. With ``--skip-bad`` the episodes are read and checked first, so that only good
ones are numbered.

    python l3/convert.py data/demos/*.hdf5 --output outputs/lift_cube
    python -m l3.convert data/demos --output outputs/lift_cube --workers 2 --include-failed

Exit status: 0 done; 2 bad input or usage (one line ``error: FILE:/hdf5/path: message`` on stderr,
no output left behind); 1 the written dataset failed ``l3.validate`` (nothing renamed into place).
"""

from __future__ import annotations

import argparse
import fnmatch
import glob
import multiprocessing as mp
import os
import shlex
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as `python l3/convert.py`: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tqdm import tqdm

from l2.format import atomic
from l2.format.cli_args import Parser, existing_file, existing_path, finite_float, output_folder, positive_int
from l2.format.hdf5_guard import check_ahead, read_through_all
from l2.format.interrupts import interrupted_line, terminate_as_interrupt
from l3 import card, v30
from l3 import inputs as l3_inputs
from l3 import layout as lay
from l3 import validate as l3_validate
from l3.config_file import load_mapping
from l3.errors import ConfigError, InputError, OutputInvalid, UsageError
from l3.layout import Layout
from l3.mapping import Mapping, dump_mapping, with_names
from l3.output import SourceCount, Summary, replace_output
from l3.readers.common import EpisodeRef, check_read_through
from l3.video import AUTO_MIN_CAP_DB, choose_pix_fmt
from l3.writer import BackgroundWrites, EpisodeJob, EpisodeResult, MetaWriter, write_episode

HDF5_SUFFIXES = (".hdf5", ".h5", ".he5")


def _nothing_left(summary: Summary, other_sources: dict[str, int], low_score: int, min_score: float | None) -> str:
    """Why no episode is left to convert, with the flag that keeps what was dropped."""
    counts = summary.per_source.values()
    files, episodes = sum(c.files for c in counts), sum(c.episodes for c in counts)
    failed, bad = sum(c.failed_dropped for c in counts), sum(c.bad for c in counts)
    parts = [f"read {episodes} episode(s) in {files} file(s)"]
    if failed:
        parts.append(f"{failed} dropped as failed (--include-failed keeps them)")
    if low_score:
        parts.append(f"{low_score} scored below --min-score {min_score:g} (lower it to keep them)")
    if bad:
        parts.append(f"{bad} skipped as bad input")
    if other_sources:
        tags = ", ".join(f"{tag} ({n} episode(s))" for tag, n in sorted(other_sources.items()))
        parts.append(f"left out by --sources: {tags}")
    return "no episodes to convert: " + "; ".join(parts)


# --------------------------------------------------------------------------- inputs


def resolve_inputs(inputs: Iterable[str]) -> list[str]:
    """Files from file, directory and glob arguments, in argument order (sorted within each)."""
    out: dict[str, None] = {}
    for arg in inputs:
        if os.path.isdir(arg):
            found = sorted(str(p) for p in Path(arg).rglob("*") if p.suffix.lower() in HDF5_SUFFIXES and p.is_file())
        elif os.path.exists(arg):
            found = [arg]
        else:
            found = sorted(p for p in glob.glob(arg, recursive=True) if os.path.isfile(p))
            if not found:
                raise InputError(arg, "/", "no such file, directory or matching glob")
        for p in found:
            out.setdefault(p, None)
    return list(out)


def parse_source_overrides(items: Iterable[str]) -> list[tuple[str, str]]:
    """``NAME=GLOB`` pairs; the first matching glob (on the path or the file name) wins."""
    out = []
    for it in items:
        name, sep, pattern = it.partition("=")
        if not sep or not name or not pattern:
            raise UsageError(f"--source expects NAME=GLOB, got {it!r}")
        out.append((name, pattern))
    return out


def source_override(file: str, overrides: list[tuple[str, str]]) -> str | None:
    """The --source override matching ``file``, or None (the reader tags the episodes: an L2 demo's own
    ``source`` attribute, else the file name's prefix; real-robot readers their own tag)."""
    for name, pattern in overrides:
        if fnmatch.fnmatch(file, pattern) or fnmatch.fnmatch(os.path.basename(file), pattern):
            return name
    return None


# --------------------------------------------------------------------------- workers

_W: dict = {}


def _init_worker(state: dict) -> None:
    _W.clear()
    _W.update(state)


def _check_one(ref: EpisodeRef) -> tuple[EpisodeRef, InputError | None]:
    """Read and check one episode, every camera frame included (the --skip-bad pass); write nothing."""
    try:
        l3_inputs.read_episode(ref, _W["plan"], check_frames=True)
    except InputError as e:
        return ref, e
    return ref, None


def _convert_one(item: tuple[EpisodeRef, EpisodeJob]) -> EpisodeResult:
    """Read, check and write one episode under its job's numbers (its files are removed again if it is bad)."""
    ref, job = item
    ep = l3_inputs.read_episode(ref, _W["plan"], task=job.tasks[0])
    return write_episode(_W["root"], _W["layout"], ep, job, _W.get("writes"))


def choose_pix_fmts(plan: l3_inputs.Plan, first: EpisodeRef) -> tuple[dict[str, str], list[str]]:
    """Each camera's pixel format: the mapping's ``video.pix_fmt``, or with ``auto`` :func:`l3.video.choose_pix_fmt` of
    the camera's frames in ``first`` (the first episode written); with ``auto``, one line per camera saying which
    and why."""
    video, cameras = plan.layout.video, plan.layout.cameras
    if video.pix_fmt != "auto" or not cameras:
        return {c.key: video.pix_fmt for c in cameras}, []
    ep = l3_inputs.read_episode(first, plan)
    chosen, lines = {}, []
    for c in cameras:
        pix_fmt, cap = choose_pix_fmt(ep.cameras[c.key].chunks())
        chosen[c.key] = pix_fmt
        than = "at least" if pix_fmt == "yuv420p" else "below"
        lines.append(
            f"camera {c.key}: {pix_fmt}, crf {video.resolved(pix_fmt).crf} (video.pix_fmt auto: the first episode's "
            f"frames read back from yuv420p at {cap:.1f} dB, {than} {AUTO_MIN_CAP_DB:g} dB)"
        )
    return chosen, lines


CODEBASE_VERSIONS = (lay.CODEBASE_VERSION, v30.CODEBASE_VERSION)
"""The dataset formats ``--codebase-version`` writes: LeRobot v2.1 (what GR00T reads), v3.0 through LeRobot."""
POOL_CHUNK = 16
"""The most state-only episodes a pool worker takes at once: handing them out one by one cost a state-only
conversion with ``--workers 2`` a fifth of its speed (an episode's work is a few ms, its round trip about 0.5 ms)."""


def pool_chunk(items: int, workers: int, cameras: bool) -> int:
    """Episodes per hand-out to a pool worker: one each with cameras (seconds of encoding each, so the
    workers stay evenly loaded to the end), else a quarter of an even share, at most :data:`POOL_CHUNK`."""
    return 1 if cameras else max(1, min(POOL_CHUNK, items // (4 * workers)))


def _run(
    fn: Callable,
    items: list,
    workers: int,
    state: dict,
    desc: str,
    progress: bool,
    engine: str = "local",
    address: str | None = None,
) -> Iterator:
    """Map ``fn`` over ``items`` in order, in-process, in a pool or as Ray tasks, with a progress bar (pool
    workers take :func:`pool_chunk` items at a time)."""
    bar = tqdm(total=len(items), desc=desc, unit="ep", disable=not progress, leave=False, file=sys.stderr)
    try:
        if engine == "ray":
            from l3 import ray_engine

            for r in ray_engine.imap(fn, items, workers, state, address):
                yield r
                bar.update()
        elif workers <= 1:
            _init_worker(state)
            for r in map(fn, items):
                yield r
                bar.update()
        else:
            # forkserver: workers fork from a clean, single-threaded server that has imported l3 once
            # (plain fork from this process could inherit pyarrow/x264 threads mid-lock).
            if "forkserver" in mp.get_all_start_methods():
                ctx = mp.get_context("forkserver")
                ctx.set_forkserver_preload(["l3.convert"])
            else:
                ctx = mp.get_context("spawn")
            chunk = pool_chunk(len(items), workers, bool(state["plan"].layout.cameras))
            with ctx.Pool(workers, initializer=_init_worker, initargs=(state,)) as pool:
                for r in pool.imap(fn, items, chunksize=chunk):
                    yield r
                    bar.update()
    finally:
        l3_inputs.close_cached()
        bar.close()


# --------------------------------------------------------------------------- conversion

PROG = "python l3/convert.py"


def command_line(inputs: Iterable[str], output: str | Path, options: dict[str, Any]) -> str:
    """The command line that asks for what :func:`convert` is called with (``options``: its keyword arguments, those
    left out at their defaults): the paths as given, the options that differ from their defaults. What the card of
    a conversion started from Python records."""

    def given(name: str, default: Any = None) -> Any:
        value = options.get(name, default)
        return None if value == default else value

    config, sources, min_score = given("config"), given("sources"), given("min_score")
    values = {
        "--output": output,
        "--config": "<a mapping given from Python>" if isinstance(config, Mapping) else config,
        "--sources": ",".join(sources) if sources else None,
        "--max-episodes": given("max_episodes"),
        "--format": given("input_format"),
        "--min-score": None if min_score is None else f"{min_score:g}",
        "--filter-key": given("filter_key"),
        "--workers": given("workers", 1),
        "--codebase-version": given("codebase_version", lay.CODEBASE_VERSION),
        "--engine": given("engine", "local"),
        "--address": given("address"),
        "--license": given("license", card.DEFAULT_LICENSE),
    }
    argv = [str(p) for p in inputs]
    for flag, value in values.items():
        if value is not None:
            argv += [flag, str(value)]
    for override in options.get("source_overrides", ()):
        argv += ["--source", override]
    flags = {
        "--include-failed": not options.get("success_only", True),
        "--overwrite": options.get("overwrite", False),
        "--skip-bad": options.get("skip_bad", False),
    }
    argv += [flag for flag, on in flags.items() if on]
    return f"{PROG} {shlex.join(argv)}"


def convert(
    inputs: Iterable[str],
    output: str | Path,
    *,
    config: str | Path | Mapping | None = None,
    success_only: bool = True,
    sources: Iterable[str] | None = None,
    max_episodes: int | None = None,
    source_overrides: Iterable[str] = (),
    workers: int = 1,
    overwrite: bool = False,
    skip_bad: bool = False,
    progress: bool = False,
    log: Callable[[str], None] | None = None,
    input_format: str | None = None,
    min_score: float | None = None,
    engine: str = "local",
    address: str | None = None,
    filter_key: str | None = None,
    codebase_version: str = lay.CODEBASE_VERSION,
    license: str = card.DEFAULT_LICENSE,
    command: str | None = None,
) -> Summary:
    """Convert L2 HDF5 files, platform exports and ALOHA episodes into a GR00T LeRobot dataset at ``output``.

    Each input's format is detected from its structure (``input_format`` forces one, see
    :mod:`l3.inputs`); ``min_score`` drops episodes whose score (platform exports) is below it;
    ``filter_key`` keeps only the demos that an L2 file's robomimic filter key ``mask/<filter_key>`` lists.
    With ``skip_bad`` every candidate is read and checked first (frames included), so that the
    episodes written are numbered once, without the bad ones. ``engine="ray"`` runs the per-episode work
    as Ray tasks (:mod:`l3.ray_engine`; on the cluster at ``address``, else a local instance) and writes
    the same bytes. ``codebase_version="v3.0"``: the v2.1 dataset is written beside ``output`` first, then
    converted by LeRobot's own converter in its venv and checked against it (:mod:`l3.v30`). The dataset's card
    (``README.md``, :mod:`l3.card`) carries ``license`` and ``command``, the command line as typed (default:
    :func:`command_line` of these arguments).

    Raises InputError (bad input), ConfigError (bad mapping), UsageError (bad arguments or an
    existing output without ``overwrite``) or OutputInvalid; in every case nothing is left behind.
    """
    if codebase_version not in CODEBASE_VERSIONS:
        raise UsageError(f"--codebase-version {codebase_version}: {' or '.join(CODEBASE_VERSIONS)}")
    if card.license_problem(license):
        raise UsageError(f"--license: {card.license_problem(license)}")
    inputs = list(inputs)
    # the options that the card's command line states and the v3.0 stage's conversion takes as they are
    options = dict(
        success_only=success_only,
        sources=sources,
        max_episodes=max_episodes,
        source_overrides=source_overrides,
        workers=workers,
        skip_bad=skip_bad,
        input_format=input_format,
        min_score=min_score,
        engine=engine,
        address=address,
        filter_key=filter_key,
        license=license,
    )
    if command is None:
        kept = {"config": config, "overwrite": overwrite, "codebase_version": codebase_version}
        command = command_line(inputs, output, {**kept, **options})
    if config is not None and not isinstance(config, Mapping):
        config = load_mapping(config)  # a bad config is refused before any input is read
    if codebase_version == v30.CODEBASE_VERSION:
        stage = v30.stage_path(output, overwrite)  # fails fast: no venv, or an existing output
        summary = convert(inputs, stage, config=config, progress=progress, log=log, command=command, **options)
        return v30.finish(summary, output, overwrite, log, commands=[command], license=license)
    t0 = time.perf_counter()
    log = log or (lambda msg: print(msg, file=sys.stderr))
    output = Path(output)
    if output.exists() and not overwrite:
        raise UsageError(f"output {output} already exists (use --overwrite to replace it)")
    if max_episodes is not None and max_episodes < 1:
        raise UsageError("--max-episodes must be >= 1")
    overrides = parse_source_overrides(source_overrides)
    wanted = set(sources) if sources else None
    summary = Summary(output=output)

    def skip(e: InputError, count: SourceCount) -> None:
        if not skip_bad:
            raise e
        summary.skipped.append(str(e))
        count.bad += 1

    # 1. scan attributes (readers) and filter
    candidates: list[EpisodeRef] = []
    low_score = 0
    other_sources: dict[str, int] = {}  # source tag -> episodes left out by --sources
    files = resolve_inputs(inputs)
    in_process = workers <= 1 and engine == "local"
    # Each file's HDF5 read-through check (l2.format.hdf5_guard), on every core at once. Converting in this
    # process, each part of a file waits only for its own check, and the checks go on beside the conversion;
    # worker processes and --skip-bad need every file checked whole first.
    ahead = in_process and not skip_bad
    (check_ahead if ahead else read_through_all)(files)
    for file in files:
        try:
            inp = l3_inputs.Input(file, input_format)
        except InputError as e:
            skip(e, summary.per_source.setdefault("unknown", SourceCount()))
            continue
        with inp:
            override = source_override(file, overrides)
            try:
                scan = inp.scan(override, filter_key)
            except InputError as e:
                tag = override or inp.reader.source_from_name(file) or inp.format
                if wanted is not None and tag not in wanted:
                    continue  # a broken file that --sources leaves out anyway
                count = summary.per_source.setdefault(tag, SourceCount())
                count.files += 1
                skip(e, count)
                continue
        # --sources filters episodes: a merged L2 file holds demos of several sources
        refs = scan.refs if wanted is None else [ref for ref in scan.refs if ref.source in wanted]
        for ref in scan.refs:
            if wanted is not None and ref.source not in wanted:
                other_sources[ref.source] = other_sources.get(ref.source, 0) + 1
        if not refs and wanted is not None and scan.source not in wanted:
            continue
        tags = dict.fromkeys(([scan.source] if scan.errors or not refs else []) + [ref.source for ref in refs])
        for tag in tags:
            summary.per_source.setdefault(tag, SourceCount()).files += 1
        for e in scan.errors:
            summary.per_source[scan.source].episodes += 1
            skip(e, summary.per_source[scan.source])
        for ref in refs:
            count = summary.per_source[ref.source]
            count.episodes += 1
            if min_score is not None and ref.below(min_score):
                low_score += 1
            elif success_only and not ref.success:
                count.failed_dropped += 1
            else:
                candidates.append(ref)
    if min_score is not None:
        summary.notices.append(f"--min-score {min_score:g}: dropped {low_score} episode(s) scored below it")
    if not candidates:
        raise UsageError(_nothing_left(summary, other_sources, low_score, min_score))

    # 2. mapping per input format (from the first candidate of each), reconciled into one layout
    plan = l3_inputs.plan(candidates, config)
    for notice in plan.notices:
        summary.notices.append(notice)
        log(notice)
    if plan.inferred:  # written into the dataset, for the user to edit and pass back with --config
        summary.mapping, summary.unnamed = lay.MAPPING_PATH, plan.unnamed
    layout = Layout(plan.layout, plan.camera_shapes)
    state = {"plan": plan, "root": None, "layout": layout}

    # 3. the episodes to write: the first candidates, or with --skip-bad the first good ones
    if skip_bad:
        episodes: list[EpisodeRef] = []
        pending = candidates
        while pending and (max_episodes is None or len(episodes) < max_episodes):
            take = pending if max_episodes is None else pending[: max_episodes - len(episodes)]
            pending = pending[len(take) :]
            for ref, err in _run(_check_one, take, workers, state, "checking", progress, engine, address):
                if err is None:
                    episodes.append(ref)
                else:
                    skip(err, summary.per_source[ref.source])
        if not episodes:
            raise UsageError("no episodes left to convert: every candidate was bad (see the skipped list)")
    else:
        episodes = candidates if max_episodes is None else candidates[:max_episodes]
    pix_fmts, summary.videos = choose_pix_fmts(plan, episodes[0])
    state["layout"] = layout = replace(layout, pix_fmts=pix_fmts)

    # 4. into a temporary folder beside the target: number the episodes, write each one once (in
    #    parallel, in order), meta/; then validate and rename into place
    output.parent.mkdir(parents=True, exist_ok=True)
    atomic.remove_stale_temps(output)
    tmp = atomic.temp_path(output)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    meta = None
    # in this process, parquet files are written on a thread of their own while the next episode is read
    writes = BackgroundWrites() if in_process else None
    try:
        meta = MetaWriter(tmp, layout, [(ref.task or plan.layout.task, ref.success, ref.length) for ref in episodes])
        state["root"], state["writes"] = tmp, writes
        for r in _run(
            _convert_one,
            list(zip(episodes, meta.jobs, strict=True)),
            workers,
            state,
            "converting",
            progress,
            engine,
            address,
        ):
            meta.add(r)
            c = summary.per_source[r.fields["source"]]
            c.kept += 1
            c.frames += r.length
            if not r.success:
                c.failed_kept += 1
            summary.video_frames += r.video_frames
        if writes is not None:
            writes.drain()
            writes.close()
        if ahead:
            for file in files:  # a file is refused whole, as if checked before the scan: parts left unread too
                check_read_through(file)
        meta.finish()
        if plan.inferred:
            header = l3_inputs.inferred_header(list(plan.origins), plan.unnamed)
            (tmp / lay.MAPPING_PATH).write_text(dump_mapping(plan.mapping(), header), encoding="utf-8")
        violations = l3_validate.validate(tmp, deep=False)
        if violations:
            shown = "\n".join(f"  {v}" for v in violations[:20])
            raise OutputInvalid(f"written dataset failed validation ({len(violations)} violations):\n{shown}")
        card.write_card(tmp, [command], license)
        replace_output(tmp, output, overwrite)
    except BaseException as exc:
        atomic.note_free_space(exc, tmp)
        try:
            if writes is not None:
                writes.close()  # before the folder goes: no parquet may appear in it afterwards
            if meta is not None:
                meta.abort()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    summary.episodes, summary.frames = meta.episodes, meta.frames
    summary.count_bytes()
    summary.seconds = time.perf_counter() - t0
    return summary


# --------------------------------------------------------------------------- CLI

EPILOG = """\
examples:
  python l3/convert.py data/demos/*.hdf5 --output outputs/lift_cube
  python l3/convert.py data/demos --config config/lift_cube.yaml --output outputs/lift_cube --workers 2
  python l3/convert.py data/demos --output out --include-failed --sources scripted,teleop
  python l3/convert.py my_runs/*.hdf5 --source teleop='my_runs/quest_*' --output out
  python l3/convert.py data/demos/scripted_lift_cube.hdf5 --print-config > my_mapping.yaml
  python l3/convert.py data/demos --output out_v30 --codebase-version v3.0  # after scripts/setup_lerobot.sh v30

Each episode's source comes from its file name prefix (scripted_, rl_, teleop_, else unknown),
unless a --source NAME=GLOB matches first. Exit status: 0 ok, 2 bad input/usage (one line
"error: FILE:/hdf5/path: message", nothing written), 1 output failed validation.
"""


def build_parser() -> Parser:
    p = Parser(
        prog=PROG,
        description="Convert L2 HDF5 demos into a GR00T LeRobot v2.1 dataset (v3.0: see --codebase-version).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "inputs",
        nargs="+",
        type=existing_path,
        metavar="INPUT",
        help="L2 HDF5 files, platform export chunks or .tar.gz archives, ALOHA episode files; directories or globs",
    )
    p.add_argument("-o", "--output", type=output_folder, help="output dataset folder (required unless --print-config)")
    p.add_argument(
        "-c",
        "--config",
        type=existing_file,
        help="mapping YAML (default: inferred from the first episode; see config/lift_cube.yaml)",
    )
    p.add_argument("--print-config", action="store_true", help="print the mapping (given or inferred) as YAML and exit")
    f = p.add_mutually_exclusive_group()
    f.add_argument(
        "--success-only",
        dest="success_only",
        action="store_true",
        default=True,
        help="keep only successful episodes (default)",
    )
    f.add_argument(
        "--include-failed",
        dest="success_only",
        action="store_false",
        help="keep failed episodes too (annotation.human.validity = 'invalid')",
    )
    p.add_argument("--sources", help="comma-separated sources to keep, e.g. scripted,teleop")
    p.add_argument(
        "--source",
        action="append",
        default=[],
        metavar="NAME=GLOB",
        help="tag files matching GLOB (path or file name) with source NAME; repeatable",
    )
    p.add_argument("--max-episodes", type=positive_int, help="stop after this many episodes")
    p.add_argument(
        "--format",
        dest="input_format",
        choices=l3_inputs.FORMATS,
        help="force the input format (default: detected per file from its structure)",
    )
    p.add_argument(
        "--min-score",
        type=finite_float,
        metavar="X",
        help="drop platform-export episodes whose score attribute is below X (or missing)",
    )
    p.add_argument(
        "--filter-key",
        metavar="NAME",
        help="convert only the demos of L2 files listed in robomimic's "
        "filter key mask/NAME, e.g. train (written by python -m l2.tools.split)",
    )
    p.add_argument(
        "-j",
        "--workers",
        type=positive_int,
        default=1,
        help="worker processes (default 1); pays off with cameras (video encoding), less so for "
        "state-only data; the output is byte-identical for any number",
    )
    p.add_argument(
        "--codebase-version",
        choices=CODEBASE_VERSIONS,
        default=lay.CODEBASE_VERSION,
        help="LeRobot dataset format: v2.1 (default; what Isaac-GR00T reads, with meta/modality.json) or "
        "v3.0 (lerobot >= 0.4, its GR00T N1.7 integration): the v2.1 dataset converted by LeRobot's own "
        "converter in its venv (scripts/setup_lerobot.sh v30); see docs/lerobot_v30.md",
    )
    p.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="where the --workers run: local processes (default) or Ray tasks (same bytes; the output "
        "folder must be on storage every Ray node sees; docs/ray.md)",
    )
    p.add_argument(
        "--address",
        help="with --engine ray: the Ray cluster to join (e.g. auto or HEAD_IP:6379); "
        "default: a local Ray instance sized to this machine",
    )
    p.add_argument(
        "--license",
        type=card.license_id,
        default=card.DEFAULT_LICENSE,
        help=f"the dataset card's license, a Hugging Face license identifier (default {card.DEFAULT_LICENSE})",
    )
    p.add_argument("--overwrite", action="store_true", help="replace an existing output folder")
    p.add_argument(
        "--skip-bad",
        action="store_true",
        help="skip malformed files/episodes (listed in the summary) instead of stopping",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary table")
    return p


def print_config(args: argparse.Namespace) -> int:
    files = resolve_inputs(args.inputs)
    if args.config:
        m = load_mapping(args.config)
        sys.stdout.write(dump_mapping(m, f"L3 mapping ({args.config}); edit and pass back with --config FILE"))
        return 0
    if not files:
        raise UsageError(f"no input files in {', '.join(args.inputs)} to infer the mapping from")
    with l3_inputs.Input(files[0], args.input_format) as inp:
        scan = inp.scan(source_override(files[0], parse_source_overrides(args.source)))
    if not scan.refs:
        raise scan.errors[0] if scan.errors else UsageError(f"{files[0]}: no episodes")
    ref = scan.refs[0]
    terms, names = inp.reader.describe(ref)
    m = inp.reader.infer_mapping(ref, terms)
    unnamed = l3_inputs.unnamed_keys(m, terms, names)
    line = l3_inputs.unnamed_line(unnamed, [files[0]], bool(names)) if unnamed else None
    dims = {p: (terms[p][0][1] if len(terms[p][0]) > 1 else 0) for p in m.sources()}
    m = with_names(m, dims, names)
    sys.stdout.write(dump_mapping(m, l3_inputs.inferred_header([(inp.format, files[0])], line)))
    return 0


def _convert(args: argparse.Namespace, argv: list[str]) -> Summary:
    if not args.output:
        raise UsageError("--output DIR is required")
    if args.address and args.engine != "ray":
        raise UsageError("--address goes with --engine ray")
    return convert(
        args.inputs,
        args.output,
        config=args.config,
        success_only=args.success_only,
        sources=[s.strip() for s in args.sources.split(",") if s.strip()] if args.sources else None,
        max_episodes=args.max_episodes,
        source_overrides=args.source,
        workers=args.workers,
        overwrite=args.overwrite,
        skip_bad=args.skip_bad,
        progress=not args.quiet and sys.stderr.isatty(),
        input_format=args.input_format,
        min_score=args.min_score,
        engine=args.engine,
        address=args.address,
        filter_key=args.filter_key,
        codebase_version=args.codebase_version,
        license=args.license,
        command=f"{PROG} {shlex.join(argv)}",
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    try:
        with terminate_as_interrupt() as stop:  # SIGTERM as Ctrl-C: the temporary output is removed on the way out
            if args.print_config:
                return print_config(args)
            summary = _convert(args, argv)
    except (InputError, ConfigError, UsageError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OutputInvalid as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # a full disk, a read-only place: the temporary folder is gone
        print(f"error: {atomic.io_error_line(e, args.output, 'no output written')}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        line, code = interrupted_line(stop, "no output written")
        print(f"error: {line}", file=sys.stderr)
        return code
    if not args.quiet:
        print(summary.table(), file=sys.stderr)
    checked = (
        f"checked against its {lay.CODEBASE_VERSION} source"
        if args.codebase_version == v30.CODEBASE_VERSION
        else "l3.validate: ok"
    )
    print(
        f"wrote {summary.output} (LeRobot {args.codebase_version}, {summary.episodes} episodes, "
        f"{summary.frames} frames); {checked}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
