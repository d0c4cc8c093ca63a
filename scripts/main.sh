#!/usr/bin/env bash
# The main job, on the CPU with defaults: set up (when missing) -> collect scripted demos ->
# validate them -> convert to a GR00T LeRobot dataset -> validate it -> summary.
#
#   scripts/main.sh                      # 8 demos with 8 envs
#   NUM_DEMOS=32 NUM_ENVS=16 scripts/main.sh
#
# Scripted demos are appended to data/demos/scripted_lift_cube.hdf5 (an existing file is never
# truncated); on the first run a teleop session is replayed from config/teleop/ into
# data/demos/teleop_lift_cube.hdf5; with RL_CHECKPOINT=logs/rl/<run>/model_<it>.pt a PPO rollout is
# appended to data/demos/rl_lift_cube.hdf5. The GR00T dataset is derived from all files in
# data/demos/ and rewritten at outputs/lift_cube_gr00t.
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

TELEOP="data/demos/teleop_lift_cube.hdf5"
if [ ! -f "$TELEOP" ]; then
  echo "== 1b/4 collect: a teleop session replayed from the shipped device trace (first run only)"
  "$PY" l2/teleop/run.py --teleop_device replay --trace config/teleop/lift_cube_trace.json --num_demos 1 --output "$TELEOP"
fi
if [ -n "${RL_CHECKPOINT:-}" ]; then
  echo "== 1c/4 collect: PPO policy rollout of $RL_CHECKPOINT"
  RL="data/demos/rl_lift_cube.hdf5"
  "$PY" l2/rl/rollout.py --checkpoint "$RL_CHECKPOINT" --num_envs "${NUM_ENVS:-8}" --num_demos "${NUM_DEMOS:-8}" \
    --output "$RL" $([ -f "$RL" ] && echo --append)
fi

echo "== 2/4 validate the L2 HDF5 files"
"$PY" -m l2.validate data/demos/*.hdf5

echo "== 3/4 convert to GR00T LeRobot (validated at the end by l3.validate)"
"$PY" l3/convert.py data/demos --config config/lift_cube.yaml --output "$GR00T" --overwrite

echo "== 4/4 validate the GR00T LeRobot dataset"
"$PY" -m l3.validate "$GR00T"

echo
echo "main job done in $(( $(date +%s) - start )) s"
echo "  demos (L2 HDF5):        $(ls -d "$REPO"/data/demos/*.hdf5 | tr '\n' ' ')"
echo "  GR00T LeRobot dataset:  $REPO/$GR00T"
