#!/usr/bin/env bash
# The whole test suite: sets everything up when missing (see scripts/setup.sh), then runs pytest.
# Extra arguments go to pytest, e.g. scripts/test.sh -m "not sim" or scripts/test.sh tests/test_validate.py
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
L2L3_BROWSER=1 bash "$REPO/scripts/setup.sh"  # also headless Chromium, for the inspection-report test
cd "$REPO"
"$REPO/.venv/bin/ruff" check --quiet .  # lint first (settings in pyproject.toml): a finding fails the run
"$REPO/.venv/bin/ruff" format --check --quiet .  # and the formatting (ruff format . fixes it)
# In parallel, one pytest-xdist worker per core; a test module stays on one worker (its module fixtures are made
# once). -n 0 runs everything in this process, one test at a time.
exec "$REPO/.venv/bin/python" -m pytest -n auto --dist loadscope "$@"
