"""The command line of every command: a parser that answers bad input in one line, and argument types that check
what can be checked before any work starts (counts, ports, addresses, paths).

A bad command line ends as ``<prog>: error: argument --x: <what is wrong> (see --help)`` on stderr, exit status 2,
with nothing written. Each type function carries what it accepts as attributes (``kind``, and ``minimum`` /
``maximum`` for numbers), which ``bench/cli_campaign.py`` reads to derive its bad inputs from a command's parser.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from l2.format.l2file import one_line


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose errors are one line (the usage is one ``--help`` away), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see --help)\n")


def fail(message: str, status: int = 2) -> NoReturn:
    """End the command with ``error: <message>`` on stderr (one line) and ``status``."""
    print(f"error: {one_line(message)}", file=sys.stderr, flush=True)
    raise SystemExit(status)


def _typed(kind: str, **facts) -> Callable[[Callable], Callable]:
    def mark(fn: Callable) -> Callable:
        fn.kind = kind
        for name, value in facts.items():
            setattr(fn, name, value)
        return fn

    return mark


def _number(text: str, cast: type, what: str):
    try:
        value = cast(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if cast is float and value != value:  # NaN compares false with every bound
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return value


def int_at_least(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An integer option in ``[minimum, maximum]``."""

    @_typed("int", minimum=minimum, maximum=maximum)
    def parse(text: str) -> int:
        value = _number(text, int, "an integer")
        if value < minimum or (maximum is not None and value > maximum):
            bound = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
            raise argparse.ArgumentTypeError(f"{value} is out of range: give an integer {bound}")
        return value

    parse.__name__ = f"int_at_least_{minimum}"
    return parse


def float_at_least(minimum: float, maximum: float | None = None, *, inclusive: bool = True) -> Callable[[str], float]:
    """A finite number option ``>= minimum`` (``> minimum`` unless ``inclusive``), at most ``maximum``."""

    @_typed("float", minimum=minimum, maximum=maximum)
    def parse(text: str) -> float:
        value = _number(text, float, "a number")
        low = value >= minimum if inclusive else value > minimum
        if not low or value == float("inf") or (maximum is not None and value > maximum):
            bound = f"{'>=' if inclusive else '>'} {minimum:g}" + ("" if maximum is None else f" and <= {maximum:g}")
            raise argparse.ArgumentTypeError(f"{text} is out of range: give a number {bound}")
        return value

    parse.__name__ = f"float_at_least_{minimum:g}"
    return parse


def float_below(minimum: float, maximum: float) -> Callable[[str], float]:
    """A number option in ``[minimum, maximum)`` (``maximum`` itself refused: the marker says so with
    ``maximum_excluded``)."""

    @_typed("float", minimum=minimum, maximum=maximum, maximum_excluded=True)
    def parse(text: str) -> float:
        value = _number(text, float, "a number")
        if not minimum <= value < maximum:
            raise argparse.ArgumentTypeError(f"{text} is out of range: give a number >= {minimum:g} and < {maximum:g}")
        return value

    parse.__name__ = f"float_below_{maximum:g}"
    return parse


@_typed("float", minimum=None, maximum=None)
def finite_float(text: str) -> float:
    """Any finite number (no inf, no NaN)."""
    value = _number(text, float, "a number")
    if value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"{text} is out of range: give a finite number")
    return value


positive_int = int_at_least(1)
non_negative_int = int_at_least(0)
positive_float = float_at_least(0.0, inclusive=False)
non_negative_float = float_at_least(0.0)
fraction = float_at_least(0.0, 1.0)
port = int_at_least(1, 65535)
port.kind = "port"
seed = int_at_least(0, 2**32 - 1)


@_typed("host_port")
def host_port(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (the port 1-65535) as ``(host, port)``."""
    host, sep, number = text.rpartition(":")
    if not sep or not host:
        raise argparse.ArgumentTypeError(f"{text!r}: give HOST:PORT, e.g. localhost:5555")
    return host, port(number)


def _exists(text: str) -> Path:
    path = Path(text).expanduser()
    if not path.exists():
        missing = next((p for p in reversed(path.parents) if not p.exists()), path)
        where = "" if missing == path else f" ({missing} does not exist)"
        raise argparse.ArgumentTypeError(f"{text}: no such file or folder{where}")
    if not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f"{text}: not readable (permission denied)")
    return path


@_typed("file")
def existing_file(text: str) -> str:
    """An input file that exists and can be read."""
    if _exists(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text}: is a folder, not a file")
    return text


@_typed("folder")
def existing_folder(text: str) -> str:
    """An input folder that exists and can be read."""
    if not _exists(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text}: is a file, not a folder")
    return text


@_typed("path")
def existing_path(text: str) -> str:
    """An input that exists: a file, or a folder of files (a glob pattern is taken as given)."""
    if not any(c in text for c in "*?["):
        _exists(text)
    return text


def _writable_place(text: str) -> Path:
    path = Path(text).expanduser()
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise argparse.ArgumentTypeError(f"{text}: cannot be written: {parent} is a file, not a folder")
            break
    return path


@_typed("output_file")
def output_file(text: str) -> str:
    """A file to write: not an existing folder, under folders (existing or not) that are not files."""
    if _writable_place(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text}: is a folder; give the file to write")
    return text


@_typed("output_folder")
def output_folder(text: str) -> str:
    """A folder to write: not an existing file, under folders (existing or not) that are not files."""
    path = _writable_place(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: is a file; give the folder to write")
    return text
