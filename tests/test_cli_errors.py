"""Bad command lines, every command: one line on stderr, exit status 1 or 2, no traceback, nothing written.

The cases are bench/cli_campaign.py's, derived from each command's own parser; each test runs one case of every
category its command has (a missing path, a folder for a file, random bytes, a truncated file, a config that is not
UTF-8 or not YAML, a value of the wrong type or past its bounds, an unknown preset, an output path that is
something else ...). The whole campaign (every case) is ``python bench/cli_campaign.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from cli_campaign import COMMANDS, Command, cases_of, make_inputs, run_case  # noqa: E402

CASE_TIMEOUT = 600.0  # a hang guard only: every case ends at its parse or its checks before any simulator


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return make_inputs(tmp_path_factory.mktemp("cli") / "inputs")


@pytest.mark.parametrize("command", COMMANDS, ids=[c.name for c in COMMANDS])
def test_bad_command_lines_end_in_one_line(command: Command, inputs) -> None:
    first_of_each: dict[str, object] = {}
    for case in cases_of(command, inputs):
        first_of_each.setdefault(case.category, case)
    assert first_of_each, f"{command.name}: its parser gave no bad input to try"
    failed = [
        f"[{category}] {' '.join(case.argv)}: {outcome.why}"
        for category, case in first_of_each.items()
        if not (outcome := run_case(case, inputs, CASE_TIMEOUT)).ok
    ]
    assert not failed, "\n".join(failed)
