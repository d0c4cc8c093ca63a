#!/usr/bin/env bash
# Build (once) a private venv with robomimic, print its python: the L2 conformance test, BC training
# (scripts/train_bc.sh) and serving a BC checkpoint (python -m l2.serve robomimic) run in it.
#
#   scripts/setup_robomimic.sh
#
# robomimic 0.3.0 (the registry's release) with the torch/torchvision every test venv pins; six (robomimic's
# config module imports it, its package does not require it); tensorboard (its training logs); and what
# l2.serve needs beside the policy (pyzmq, msgpack, PyYAML, pyarrow, h5py). The venv is
# ${L2L3_CACHE:-$HOME/.cache/l2l3}/venvs/robomimic-<hash>; how it is built and reused: scripts/test_venv.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/test_venv.sh"

build_venv robomimic "import robomimic, torch, zmq, msgpack, yaml; from robomimic.utils.dataset import SequenceDataset; \
from robomimic.config import config_factory" \
  "robomimic==0.3.0" "${TEST_VENV_TORCH[@]}" "six" "tensorboard" "pyzmq" "msgpack" "pyyaml" "pyarrow" "h5py"
