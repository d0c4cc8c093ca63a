#!/usr/bin/env bash
# Build (once) a private venv with LeRobot for the L3 conformance tests and the v3.0 output, print its python.
#
#   scripts/setup_lerobot.sh [v21|v30] [--check]
#
#   v21 (default): lerobot 0.3.3, the last release that reads LeRobot v2.1 datasets.
#   v30:           lerobot 0.6.1 (Python 3.12), whose v2.1 -> v3.0 converter `l3/convert.py
#                  --codebase-version v3.0` runs, whose LeRobotDataset the v3.0 tests load, and whose
#                  lerobot-train trains ACT on our v3.0 output (accelerate: its training loop); also what
#                  `python -m l2.serve lerobot` needs beside LeRobot (pyzmq, msgpack, PyYAML, h5py).
#   --check:       build nothing: print the venv's python if it is built, else exit 3.
#
# The venv is ${L2L3_CACHE:-$HOME/.cache/l2l3}/venvs/lerobot-<v21|v30>-<hash>; how it is built and
# reused: scripts/test_venv.sh. Both flavours pin the same torch/torchvision (one download).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/test_venv.sh"

flavour="${1:-v21}"
[[ -z "${2:-}" || "${2:-}" == --check ]] || { echo "usage: $0 [v21|v30] [--check]" >&2; exit 2; }
[[ -z "${2:-}" ]] || TEST_VENV_CHECK_ONLY=1
check="import lerobot, torch; from lerobot.datasets.lerobot_dataset import LeRobotDataset"
case "$flavour" in
  # av: torchvision 0.22's pyav video reader (lerobot 0.3.x's "pyav" backend) passes metadata_errors=,
  # which PyAV 16+ removed.
  v21) reqs=("lerobot==0.3.3" "${TEST_VENV_TORCH[@]}" "av==15.1.0") ;;
  # lerobot 0.6 needs Python >= 3.12 and accepts torch >= 2.7. Its torchcodec is not loadable without
  # FFmpeg's shared libraries; LeRobot then decodes with PyAV.
  v30) reqs=("lerobot[dataset]==0.6.1" "${TEST_VENV_TORCH[@]}" "av==15.1.0" "accelerate" "pyzmq" "msgpack" "pyyaml"
             "h5py")
       TEST_VENV_PYTHONS=(3.12)
       check="$check; import lerobot.scripts.convert_dataset_v21_to_v30, accelerate, zmq, msgpack, yaml, h5py" ;;
  *) echo "usage: $0 [v21|v30] [--check]" >&2; exit 2 ;;
esac

build_venv "lerobot-$flavour" "$check" "${reqs[@]}"
