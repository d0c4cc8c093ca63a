#!/usr/bin/env bash
# Build (once) a private venv with LeRobot for the L3 conformance tests, print its python.
#
#   scripts/setup_lerobot.sh [v21|v30]
#
#   v21 (default): lerobot 0.3.3, the last release that reads LeRobot v2.1 datasets.
#   v30:           lerobot 0.4.4, which ships the v2.1 -> v3.0 converter (absent from 0.3.x).
#
# The venv is ${L2L3_CACHE:-$HOME/.cache/l2l3}/venvs/lerobot-<v21|v30>-<hash>; how it is built and
# reused: scripts/test_venv.sh. Both flavours pin the same torch/torchvision.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/test_venv.sh"

flavour="${1:-v21}"
case "$flavour" in
  # av: torchvision 0.22's pyav video reader (lerobot 0.3.x's "pyav" backend) passes metadata_errors=,
  # which PyAV 16+ removed; 15.1 is also what lerobot 0.4.x requires.
  v21) reqs=("lerobot==0.3.3" "${TEST_VENV_TORCH[@]}" "av==15.1.0") ;;
  v30) reqs=("lerobot==0.4.4" "${TEST_VENV_TORCH[@]}") ;;
  *) echo "usage: $0 [v21|v30]" >&2; exit 2 ;;
esac

build_venv "lerobot-$flavour" "import lerobot, torch; from lerobot.datasets.lerobot_dataset import LeRobotDataset" \
  "${reqs[@]}"
