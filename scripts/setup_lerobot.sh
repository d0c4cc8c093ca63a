#!/usr/bin/env bash
# Build (once) a private venv with LeRobot for the L3 conformance tests, print its python.
#
#   scripts/setup_lerobot.sh [v21|v30] [--check]
#
#   v21 (default): lerobot 0.3.3, the last release that reads LeRobot v2.1 datasets.
#   v30:           lerobot 0.6.1 (Python 3.12), whose v2.1 -> v3.0 converter `l3/convert.py
#                  --codebase-version v3.0` runs, and whose LeRobotDataset the v3.0 tests load.
#   --check:       build nothing: print the venv's python if it is built, else exit 3.
#
# The venv lives outside the repository, in
#   ${L2L3_CACHE:-$HOME/.cache/l2l3}/venvs/lerobot-<v21|v30>-<hash of the pinned requirements>
# and is reused when its marker file exists and `import lerobot` still works; a half-built
# one is removed and built again. Both flavours pin the same torch/torchvision so that pip's
# wheel cache downloads the (large, CUDA) torch wheels only once.
# Python: $LEROBOT_PYTHON, else python3.12 / python3.11 on PATH, else a pyenv 3.12/3.11.
# The last line of stdout is the venv's python executable; everything else goes to stderr.
set -euo pipefail

flavour="${1:-v21}"
check="${2:-}"
[[ -z "$check" || "$check" == --check ]] || { echo "usage: $0 [v21|v30] [--check]" >&2; exit 2; }
pythons=(3.12 3.11)
case "$flavour" in
  # av: torchvision 0.22's pyav video reader (lerobot 0.3.x's "pyav" backend) passes metadata_errors=,
  # which PyAV 16+ removed; 15.1 is also what lerobot 0.4.x requires.
  v21) reqs=("lerobot==0.3.3" "torch==2.7.1" "torchvision==0.22.1" "av==15.1.0") ;;
  # lerobot 0.6 needs Python >= 3.12 and accepts torch >= 2.7, so the same torch as v21 (one download).
  # Its torchcodec is not loadable without FFmpeg's shared libraries; LeRobot then decodes with PyAV.
  v30) reqs=("lerobot[dataset]==0.6.1" "torch==2.7.1" "torchvision==0.22.1" "av==15.1.0"); pythons=(3.12) ;;
  *) echo "usage: $0 [v21|v30] [--check]" >&2; exit 2 ;;
esac

spec="${reqs[*]}"
hash="$(printf '%s' "$spec" | sha256sum | cut -c1-12)"
cache="${L2L3_CACHE:-$HOME/.cache/l2l3}"
venv="$cache/venvs/lerobot-$flavour-$hash"
marker="$venv/.l2l3-ready"

works() {
  [[ -f "$marker" ]] && "$venv/bin/python" -c "import lerobot" >/dev/null 2>&1
}

find_python() {
  local c v ok root
  ok="$(printf '"%s", ' "${pythons[@]}")"
  for c in "${LEROBOT_PYTHON:-}" "${pythons[@]/#/python}"; do
    [[ -n "$c" ]] || continue
    if "$c" -c "import sys, venv; sys.exit('%d.%d' % sys.version_info[:2] not in ($ok))" >/dev/null 2>&1; then
      command -v "$c"; return 0
    fi
  done
  root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
  for v in "${pythons[@]}"; do
    for c in "$root"/versions/"$v"*/bin/python"$v"; do
      if [[ -x "$c" ]] && "$c" -c 'import venv' >/dev/null 2>&1; then echo "$c"; return 0; fi
    done
  done
  return 1
}

if [[ -n "$check" ]]; then
  if works; then echo "$venv/bin/python"; exit 0; fi
  echo "LeRobot $flavour venv not built: $venv" >&2
  exit 3
fi

# One builder at a time (tests may start in parallel).
mkdir -p "$cache/venvs"
exec 9>"$cache/venvs/.lerobot-$flavour.lock"
flock 9

if works; then
  echo "$venv/bin/python"
  exit 0
fi

py="$(find_python)" || { echo "error: no Python ${pythons[*]} found (set LEROBOT_PYTHON)" >&2; exit 1; }
echo "building $venv with $py: $spec" >&2
rm -rf "$venv"
"$py" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip >&2
"$venv/bin/python" -m pip install --quiet "${reqs[@]}" >&2
"$venv/bin/python" -c "import lerobot, torch; from lerobot.datasets.lerobot_dataset import LeRobotDataset" >&2
if [[ "$flavour" == v30 ]]; then
  "$venv/bin/python" -c "import lerobot.scripts.convert_dataset_v21_to_v30" >&2
fi
printf '%s\n' "$spec" > "$marker"
echo "$venv/bin/python"
