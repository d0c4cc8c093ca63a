"""Input formats: detect each input's layout, dispatch to its reader, one mapping per format.

Formats (one reader each in ``l3/readers/``, each a :class:`l3.readers.common.Reader` yielding
:class:`l3.episode.Episode` objects):

- ``l2``: L2 HDF5 demos (``/data/demo_<i>``), ``l3.readers.l2_hdf5``;
- ``platform``: the data platform's export (``chunk_NNN.hdf5`` with ``/data/episode_NNN``, or
  the ``.tar.gz`` holding them), ``l3.readers.platform_hdf5``;
- ``aloha``: ALOHA / ACT / Agilex cobot_magic episodes (``/observations``, ``/action``),
  ``l3.readers.aloha_hdf5``.

A conversion may mix formats. Each format gets its own mapping (the config's ``inputs.<format>``
section, else its top level, else one inferred from the format's first episode); :func:`plan`
reconciles them into the one dataset layout or refuses with a message naming both inputs. Each
input file is opened once to detect its format and scan it (:class:`Input`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import h5py
import numpy as np

from l3.config_file import load_mapping
from l3.episode import Episode
from l3.errors import ConfigError, InputError
from l3.mapping import Mapping, reconcile, resolve_fps, with_names
from l3.readers import aloha_hdf5, l2_hdf5, platform_hdf5
from l3.readers.common import EpisodeRef, FileScan, Reader, Terms, check_read_through, open_hdf5, reading

READERS: dict[str, Reader] = {r.format: r for r in (l2_hdf5.READER, platform_hdf5.READER, aloha_hdf5.READER)}
FORMATS = tuple(READERS)
DETECT_ORDER = (platform_hdf5.READER, aloha_hdf5.READER, l2_hdf5.READER)
"""The L2 reader claims any file with /data, so it is asked last."""
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")


class Input:
    """One input file, opened once: its reader (detected from its structure, or forced) and its scan.

    Use as a context manager (closes the file).
    """

    def __init__(self, file: str, forced: str | None = None):
        self.file, self._h5 = file, None
        archive = file.lower().endswith(ARCHIVE_SUFFIXES) and platform_hdf5.is_archive(file)
        if not archive:
            check_read_through(file, part="/")  # the L2 reader waits for each demo's part before it reads it
        if forced is not None:
            if forced not in READERS:
                raise ConfigError(f"unknown input format {forced!r} (one of {', '.join(FORMATS)})")
            self.reader = READERS[forced]
        elif archive:
            self.reader = platform_hdf5.READER
        else:
            self._h5 = open_hdf5(file)
            try:
                self.reader = self._detect(self._h5)
            except BaseException:
                self.close()
                raise
        if not archive and self.reader is not l2_hdf5.READER:
            check_read_through(file)  # the other readers read anywhere in the file: all of it first

    def _detect(self, f: h5py.File) -> Reader:
        with reading(self.file, "/", "cannot read the HDF5 structure, truncated or corrupt?"):
            for reader in DETECT_ORDER:
                if reader.detect(f):
                    return reader
            top = sorted(f.keys())[:8]
        raise InputError(
            self.file,
            "/",
            f"unknown layout (top-level entries {top}): expected /data/demo_<i> (L2 "
            "demos), /data/episode_<NNN> (platform export) or /observations + /action (ALOHA); "
            "--format forces one",
        )

    @property
    def format(self) -> str:
        return self.reader.format

    def scan(self, source: str | None, filter_key: str | None = None) -> FileScan:
        """The input's episodes (``.refs`` in order, ``.errors``, ``.source``); ``source`` None: the reader's tag;
        ``filter_key``: only the demos an L2 file's ``mask/<filter_key>`` lists."""
        if filter_key is None:
            return self.reader.scan(self.file, source, self._h5)
        if self.reader is not l2_hdf5.READER:
            raise InputError(
                self.file,
                "/",
                f"--filter-key selects demos of L2 files (mask/{filter_key}); this input is in {self.format} format",
            )
        return l2_hdf5.READER.scan(self.file, source, self._h5, filter_key)

    def close(self) -> None:
        if self._h5 is not None:
            self._h5.close()
            self._h5 = None

    def __enter__(self) -> Input:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def close_cached() -> None:
    for r in READERS.values():
        r.close()


@dataclass(frozen=True)
class Plan:
    """The dataset layout plus, per input format, its mapping and the per-row shape of each source."""

    layout: Mapping
    mappings: dict[str, Mapping]
    dims: dict[str, dict[str, tuple[int, ...]]]
    camera_shapes: dict[str, tuple[int, int]]
    notices: tuple[str, ...] = ()
    """What the user should know about the plan (e.g. inputs relabelled to the config's fps, legacy quaternions)."""
    inferred: bool = False
    """No mapping was given: each format's was inferred from its first episode."""
    unnamed: str | None = None
    """With an inferred mapping, which keys' columns no input names (:func:`unnamed_line`)."""
    origins: tuple[tuple[str, str], ...] = ()
    """``(format, file)``: the input each format's mapping was made for (inferred from its first episode)."""

    def mapping(self) -> Mapping:
        """The mapping to write out and pass back with ``--config``: the one format's (names filled in, fps as given:
        None for the inputs' rate), or with several formats the dataset layout and an ``inputs:`` section each."""
        if len(self.mappings) == 1:
            return next(iter(self.mappings.values()))
        return replace(self.layout, fps=next(iter(self.mappings.values())).fps, inputs=tuple(self.mappings.items()))

    def read_mapping(self, fmt: str) -> Mapping:
        """The format's mapping without its ``zeros`` padding keys (what the reader reads)."""
        m = self.mappings[fmt]
        return replace(
            m, state=tuple(s for s in m.state if s.zeros is None), action=tuple(s for s in m.action if s.zeros is None)
        )


def plan(candidates: list[EpisodeRef], config: str | Path | Mapping | None) -> Plan:
    """Mappings per format (from ``config`` or inferred from each format's first episode), reconciled."""
    firsts: dict[str, EpisodeRef] = {}
    for r in candidates:
        firsts.setdefault(r.format, r)
    base = config if isinstance(config, Mapping) or config is None else load_mapping(config)
    mappings, dims, origins = {}, {}, {}
    unnamed: list[str] = []
    recorded_names = False
    for fmt, ref in firsts.items():
        reader = READERS[fmt]
        with reading(ref.file, ref.group):
            terms, names = reader.describe(ref)
        m = base.for_format(fmt) if base is not None else reader.infer_mapping(ref, terms)
        if base is None:
            unnamed += unnamed_keys(m, terms, names)
            recorded_names |= bool(names)
        for p in m.sources():
            if p not in terms:
                if base is not None and len(firsts) > 1 and fmt not in dict(base.inputs):
                    others = ", ".join(f"{f} input {r.file}" for f, r in firsts.items() if f != fmt)
                    raise ConfigError(
                        f"mixed inputs: the config maps '{p}', which {fmt} input {ref.file} does not have "
                        f"(the mapping was written for {others}); give the config an 'inputs: {{{fmt}: ...}}' "
                        "section mapping this format onto the same state/action keys and widths (see "
                        "config/mixed_sim_platform.yaml, docs/l3_real.md)"
                    )
                raise InputError(ref.file, f"{ref.group}/{p}", "missing mapped term")
        d = {p: tuple(terms[p][0][1:]) for p in m.sources()}
        try:
            m = with_names(m, {p: (s[0] if s else 0) for p, s in d.items()}, names)
        except ConfigError as e:  # the mapping does not fit this input's arrays: name the input
            raise InputError(ref.file, ref.group, f"does not fit the mapping: {e}") from None
        mappings[fmt], dims[fmt], origins[fmt] = m, d, ref.file
    layout = reconcile(mappings, origins)
    rates = {r.file: r.rate for r in candidates if r.rate is not None}
    fps, notices = resolve_fps(layout.fps, rates)
    for fmt, m in mappings.items():
        notices += READERS[fmt].notices([r for r in candidates if r.format == fmt], m)
    layout = replace(layout, fps=fps)
    files = [r.file for r in firsts.values()]
    line = unnamed_line(list(dict.fromkeys(unnamed)), files, recorded_names) if unnamed else None
    if "platform" in mappings and layout.fps != platform_hdf5.FPS:
        raise ConfigError(
            f"fps is {layout.fps}, but platform exports are on a fixed {platform_hdf5.FPS} Hz frame "
            f"grid ({origins['platform']}); set fps: {platform_hdf5.FPS} in the config"
        )
    cams: dict[str, tuple[int, int]] = {}
    for fmt, m in mappings.items():
        for c in m.cameras:
            row, ref = dims[fmt][c.source], firsts[fmt]
            if len(row) != 3 or row[2] != 3:
                raise InputError(
                    ref.file,
                    f"{ref.group}/{c.source}",
                    f"camera term must hold (H, W, 3) frames or JPEG rows, its rows are {row}",
                )
            hw = tuple(row[:2])
            if (hw[0] % 2 or hw[1] % 2) and m.video.pix_fmt != "yuv444p":
                raise InputError(
                    ref.file,
                    f"{ref.group}/{c.source}",
                    f"camera frames are {hw[1]}x{hw[0]}: yuv420p videos need an even width and height "
                    f"(video.pix_fmt {m.video.pix_fmt}; yuv444p takes any size)",
                )
            if c.key in cams and cams[c.key] != hw:
                other = next(f for f in mappings if f != fmt)
                raise ConfigError(
                    f"camera {c.key}: frames are {hw[1]}x{hw[0]} in {fmt} input {origins[fmt]} but "
                    f"{cams[c.key][1]}x{cams[c.key][0]} in {other} input {origins[other]}; "
                    "one video size per camera key (frames are not resized)"
                )
            cams.setdefault(c.key, hw)
    return Plan(
        layout,
        mappings,
        dims,
        cams,
        tuple(notices),
        inferred=base is None,
        unnamed=line,
        origins=tuple(origins.items()),
    )


def inferred_header(origins: list[tuple[str, str]], unnamed: str | None) -> str:
    """The comment over an inferred mapping written out (``--print-config``, ``meta/l3_mapping.yaml``)."""
    made = ", ".join(f"{file} ({fmt} format)" for fmt, file in origins)
    header = f"L3 mapping inferred from {made}; edit it and convert again with --config FILE"
    return header + (f"\n{unnamed}" if unnamed else "")


def unnamed_keys(m: Mapping, terms: Terms, names: dict[str, list[str]]) -> list[str]:
    """The state and action keys of ``m`` whose columns neither it nor the input names (``names``: what
    :meth:`Reader.describe` gives), as ``state.<key>``."""
    out = []
    for group, slices in (("state", m.state), ("action", m.action)):
        for s in slices:
            width = terms[s.source][0][1] if s.source in terms and len(terms[s.source][0]) > 1 else None
            if s.zeros is None and s.names is None and len(names.get(s.source) or ()) != width:
                out.append(f"{group}.{s.key}")
    return out


def unnamed_line(keys: list[str], files: list[str], recorded_any: bool) -> str:
    """What an inferred mapping says of ``keys``, whose columns no input names (``recorded_any``: the inputs name some
    other columns): ``columns unnamed: ...``."""
    where = ", ".join(files)
    what = f"no names for {', '.join(keys)}" if recorded_any else f"no column names ({', '.join(keys)})"
    return f"columns unnamed: {where} records {what}; written as <key>_<i> (give names: in the mapping)"


def read_episode(
    ref: EpisodeRef, p: Plan, task: str | None = None, check: bool = True, check_frames: bool = False
) -> Episode:
    """Read one episode with its format's reader and mapping; ``zeros`` keys are filled with 0.0."""
    m = p.mappings[ref.format]
    ep = READERS[ref.format].read(
        ref, p.read_mapping(ref.format), p.dims[ref.format], task=task, check=check, check_frames=check_frames
    )
    if any(s.zeros is not None for s in (*m.state, *m.action)):
        pad = lambda s, got: got[s.key] if s.zeros is None else np.zeros((ep.length, s.zeros), np.float32)  # noqa: E731
        ep.state = {s.key: pad(s, ep.state) for s in m.state}
        ep.action = {s.key: pad(s, ep.action) for s in m.action}
    return ep
