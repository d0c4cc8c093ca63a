#!/usr/bin/env bash
# The same number of demos from every source, for the source comparison of docs/train.md: scripted, RL (the
# shipped PPO policy), teleop (device traces of the scripted operator, one cube pose each) and Mimic
# (generated from the scripted ones), state only, merged into one file that python -m l2.bc.train takes.
# Rerunning it collects only what is missing.
#
#   scripts/collect_bc_mix.sh [N]        # N of each source (default 25) -> data/bc/mix_lift_cube.hdf5
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
N="${1:-25}"
PY="$REPO/.venv/bin/python"
OUT="data/bc/mix"
VARIED="presets=no_cameras,varied_start"   # as the scripted BC demos: the arm starts around its home pose
mkdir -p "$OUT/traces"
count() { "$PY" -c "import h5py, sys; print(len(h5py.File(sys.argv[1], 'r')['data']))" "$1" 2>/dev/null || echo 0; }
missing() { echo $(( N - $(count "$OUT/$1_lift_cube.hdf5") )); }
append() { [ -f "$OUT/$1_lift_cube.hdf5" ] && echo --append || true; }

m=$(missing scripted)
if [ "$m" -gt 0 ]; then
  "$PY" l2/scripted/run.py --num_envs "$m" --num_demos "$m" --seed 101 --output "$OUT/scripted_lift_cube.hdf5" \
    $(append scripted) "$VARIED"
fi
m=$(missing rl)
if [ "$m" -gt 0 ]; then
  "$PY" l2/rl/rollout.py --num_envs "$m" --num_demos "$m" --seed 102 --output "$OUT/rl_lift_cube.hdf5" \
    $(append rl) "$VARIED"
fi
for k in $(seq $(( $(count "$OUT/teleop_lift_cube.hdf5") + 1 )) "$N"); do  # a trace fixes its start: home
  "$PY" -m l2.teleop.make_trace --output "$OUT/traces/trace_$k.json" --seed $((1000 + k)) presets=no_cameras
  "$PY" l2/teleop/run.py --teleop_device replay --trace "$OUT/traces/trace_$k.json" --num_demos 1 \
    --output "$OUT/teleop_lift_cube.hdf5" $(append teleop) presets=no_cameras
done
m=$(missing mimic)
if [ "$m" -gt 0 ]; then
  "$PY" -m l2.mimic --input "$OUT/scripted_lift_cube.hdf5" --num_demos "$m" --output "$OUT/mimic_lift_cube.hdf5" \
    $(append mimic) presets=no_cameras
fi
"$PY" -m l2.tools.merge "$OUT"/{scripted,rl,teleop,mimic}_lift_cube.hdf5 -o data/bc/mix_lift_cube.hdf5 --overwrite \
  --env-name L2-Lift-Cube-Franka-IK-Abs
