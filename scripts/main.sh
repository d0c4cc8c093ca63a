#!/usr/bin/env bash
# The main job, on the CPU with defaults: set up (when missing) -> collect scripted demos ->
# validate them -> convert to a GR00T LeRobot dataset -> validate it -> summary.
#
#   scripts/main.sh                      # 8 demos with 8 envs
#   NUM_DEMOS=32 NUM_ENVS=16 scripts/main.sh
#
# Demos are appended to data/demos/scripted_lift_cube.hdf5 (an existing file is never truncated);
# the GR00T dataset is derived from all files in data/demos/ and rewritten at outputs/lift_cube_gr00t.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$REPO/scripts/setup.sh"
cd "$REPO"
PY="$REPO/.venv/bin/python"
DEMOS="data/demos/scripted_lift_cube.hdf5"
GR00T="outputs/lift_cube_gr00t"
start=$(date +%s)

echo "== 1/4 collect: scripted pick-and-lift, kit-less Newton on the CPU"
"$PY" l2/scripted/run.py --num_envs "${NUM_ENVS:-8}" --num_demos "${NUM_DEMOS:-8}" --output "$DEMOS" \
  $([ -f "$DEMOS" ] && echo --append)

echo "== 2/4 validate the L2 HDF5 files"
"$PY" -m l2.validate data/demos/*.hdf5

echo "== 3/4 convert to GR00T LeRobot (validated at the end by l3.validate)"
"$PY" l3/convert.py data/demos --config config/lift_cube.yaml --output "$GR00T" --overwrite

echo "== 4/4 validate the GR00T LeRobot dataset"
"$PY" -m l3.validate "$GR00T"

echo
echo "main job done in $(( $(date +%s) - start )) s"
echo "  demos (L2 HDF5):        $REPO/$DEMOS"
echo "  GR00T LeRobot dataset:  $REPO/$GR00T"
