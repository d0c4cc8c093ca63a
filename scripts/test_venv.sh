# Shared by the scripts that build (once) a private venv for a conformance test against another
# project's own code (scripts/setup_lerobot.sh, scripts/setup_robomimic.sh). Source it, then call
#
#   build_venv NAME "IMPORT CHECK" REQUIREMENT...
#
# The venv lives outside the repository, in
#   ${L2L3_CACHE:-$HOME/.cache/l2l3}/venvs/<NAME>-<hash of the pinned requirements>
# and is reused when its marker file exists and the import check still passes; a half-built one is
# removed and built again; once a new one is built, the venvs of earlier pins of NAME are removed.
# Every caller pins the same torch, so pip's wheel cache downloads the (large, CUDA) torch wheels once.
# Python: $TEST_VENV_PYTHON (or the older $LEROBOT_PYTHON), else one of TEST_VENV_PYTHONS (default 3.12,
# 3.11; a caller may narrow it) on PATH, else from pyenv. The last line of stdout is the venv's python;
# everything else goes to stderr. With TEST_VENV_CHECK_ONLY=1 nothing is built: the python is printed
# if the venv is ready, else the script exits 3.

TEST_VENV_TORCH=("torch==2.7.1" "torchvision==0.22.1")
TEST_VENV_PYTHONS=(3.12 3.11)

find_python() {
  local c v ok root
  ok="$(printf '"%s", ' "${TEST_VENV_PYTHONS[@]}")"
  for c in "${TEST_VENV_PYTHON:-}" "${LEROBOT_PYTHON:-}" "${TEST_VENV_PYTHONS[@]/#/python}"; do
    [[ -n "$c" ]] || continue
    if "$c" -c "import sys, venv; sys.exit('%d.%d' % sys.version_info[:2] not in ($ok))" >/dev/null 2>&1; then
      command -v "$c"; return 0
    fi
  done
  root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
  for v in "${TEST_VENV_PYTHONS[@]}"; do
    for c in "$root"/versions/"$v"*/bin/python"$v"; do
      if [[ -x "$c" ]] && "$c" -c 'import venv' >/dev/null 2>&1; then echo "$c"; return 0; fi
    done
  done
  return 1
}

build_venv() {
  local name="$1" check="$2"
  shift 2
  local spec hash cache venv marker py
  spec="$*"
  hash="$(printf '%s' "$spec" | sha256sum | cut -c1-12)"
  cache="${L2L3_CACHE:-$HOME/.cache/l2l3}"
  venv="$cache/venvs/$name-$hash"
  marker="$venv/.l2l3-ready"
  if [[ "${TEST_VENV_CHECK_ONLY:-0}" == 1 ]]; then
    if [[ -f "$marker" ]] && "$venv/bin/python" -c "$check" >/dev/null 2>&1; then echo "$venv/bin/python"; return 0; fi
    echo "$name venv not built: $venv" >&2
    exit 3
  fi
  mkdir -p "$cache/venvs"

  # One builder at a time (tests may start in parallel).
  exec 9>"$cache/venvs/.$name.lock"
  flock 9
  if [[ -f "$marker" ]] && "$venv/bin/python" -c "$check" >/dev/null 2>&1; then
    echo "$venv/bin/python"
    return 0
  fi
  py="$(find_python)" || { echo "error: no Python ${TEST_VENV_PYTHONS[*]} found (set TEST_VENV_PYTHON)" >&2; return 1; }
  echo "building $venv with $py: $spec" >&2
  rm -rf "$venv"
  "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
  "$venv/bin/python" -m pip install --quiet "$@" >&2
  "$venv/bin/python" -c "$check" >&2
  printf '%s\n' "$spec" > "$marker"
  local old
  for old in "$cache/venvs/$name"-*; do  # venvs of earlier pins of this name: gone, instead of filling the disk
    [[ "$old" == "$venv" || ! -d "$old" ]] || rm -rf "$old"
  done
  echo "$venv/bin/python"
}
