#!/usr/bin/env bash
# Build (once) a private venv with robomimic for the L2 conformance test, print its python.
#
#   scripts/setup_robomimic.sh
#
# robomimic 0.3.0 (the registry's release) with the torch/torchvision every test venv pins. The venv
# is ${L2L3_CACHE:-$HOME/.cache/l2l3}/venvs/robomimic-<hash>; how it is built and reused:
# scripts/test_venv.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/test_venv.sh"

build_venv robomimic "import robomimic, torch; from robomimic.utils.dataset import SequenceDataset" \
  "robomimic==0.3.0" "${TEST_VENV_TORCH[@]}"
