#!/usr/bin/env bash
# The main job on Isaac Lab's own SO-101 cube stack (docs/stack.md), a task this package did not write, on the CPU:
# collect it through every source -> validate -> convert with no hand-written mapping -> validate -> serve the
# dataset's own actions back over GR00T's policy-server protocol in closed loop -> summary.
#
#   TASK=stack scripts/main.sh             # (scripts/main.sh hands over to this script)
#   NUM_DEMOS=8 NUM_ENVS=8 TASK=stack scripts/main.sh
#
# Scripted demos (the stacking expert, two cameras) are appended to data/demos/scripted_stack_cube_so101.hdf5; on the
# first run the keyboard and leader-arm traces of config/teleop/so101_stack_* are replayed into
# data/demos/teleop_stack_cube_so101.hdf5; Isaac Lab Mimic appends MIMIC_DEMOS (2) demos generated from this run's
# scripted ones; a PPO policy is trained for 2 iterations and rolled out (the recorder's proof, not the policy's:
# its failed episodes go to rl_stack_cube_so101_failed.hdf5, which is not converted). The GR00T dataset is rewritten
# from the stack's files, converted without --config: the mapping inferred from what the files record is written
# into it (meta/l3_mapping.yaml).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$REPO/scripts/setup.sh"
cd "$REPO"
PY="$REPO/.venv/bin/python"
TASK=stack_cube_so101
DEMOS="data/demos/scripted_$TASK.hdf5"
TELEOP="data/demos/teleop_$TASK.hdf5"
MIMIC="data/demos/mimic_$TASK.hdf5"
RL="data/demos/rl_$TASK.hdf5"
GR00T="outputs/${TASK}_gr00t"
EVAL="outputs/eval"
RL_LOGS="logs/rl_stack_main"
start=$(date +%s)

echo "== 1/5 collect: the scripted stacking expert with two cameras (joint targets through the task's pose IK)"
"$PY" l2/scripted/run.py --task L2-Stack-Cube-SO101-Scripted-v0 --num_envs "${NUM_ENVS:-4}" \
  --num_demos "${NUM_DEMOS:-4}" --output "$DEMOS" $([ -f "$DEMOS" ] && echo --append)

if [ ! -f "$TELEOP" ]; then
  echo "== 1b/5 collect: teleop sessions replayed from the shipped keyboard and leader-arm traces (first run only)"
  "$PY" l2/teleop/run.py --task L2-Stack-Cube-SO101-Teleop-v0 --teleop_device replay \
    --trace config/teleop/so101_stack_keyboard_trace.json --num_demos 1 --output "$TELEOP"
  "$PY" l2/teleop/run.py --task L2-Stack-Cube-SO101-Teleop-v0 --teleop_device replay \
    --trace config/teleop/so101_stack_leader_trace.json --num_demos 1 --output "$TELEOP" --append
fi

n=$("$PY" -c "import h5py, sys; print(len(h5py.File(sys.argv[1], 'r')['data']))" "$DEMOS")
THIS_RUN=$(seq -f "demo_%g" $(( n - ${NUM_DEMOS:-4} )) $(( n - 1 )) | tr '\n' ' ')
echo "== 1c/5 collect: Isaac Lab Mimic generates MIMIC_DEMOS (${MIMIC_DEMOS:-2}) demos from this run's scripted ones"
# docs/stack.md: on the stack about one generated attempt in six succeeds, so the attempts are bounded and a run
# without a generated demo goes on
"$PY" -m l2.mimic --task L2-Stack-Cube-SO101-Mimic-v0 --input "$DEMOS" --demos $THIS_RUN \
  --num_demos "${MIMIC_DEMOS:-2}" --num_envs "${MIMIC_DEMOS:-2}" --max_attempts "${MIMIC_ATTEMPTS:-4}" \
  --output "$MIMIC" $([ -f "$MIMIC" ] && echo --append) || echo "   (no Mimic demo this run)"

echo "== 1d/5 collect: a PPO policy trained for 2 iterations, rolled out (failed episodes kept apart)"
rm -rf "$RL_LOGS"
"$PY" l2/rl/train.py --task L2-Stack-Cube-SO101-RL-v0 --num_envs 8 --max_iterations 2 --log_root "$RL_LOGS" \
  --run_name brief > /dev/null
"$PY" l2/rl/rollout.py --task L2-Stack-Cube-SO101-RL-v0 --checkpoint "$(ls "$RL_LOGS"/brief/model_*.pt | tail -n 1)" \
  --num_envs 2 --episodes 2 --keep-failed --output "$RL" --overwrite env.episode_length_s=5 || true

INPUTS=("$DEMOS" "$TELEOP")
[ -f "$MIMIC" ] && INPUTS+=("$MIMIC")
echo "== 2/5 validate the L2 HDF5 files"
"$PY" -m l2.format.validate "${INPUTS[@]}" "data/demos/rl_${TASK}_failed.hdf5" --expect-obs front,wrist

echo "== 3/5 convert to GR00T LeRobot without a mapping config (inferred from what the files record)"
"$PY" l3/convert.py "${INPUTS[@]}" --output "$GR00T" --overwrite

echo "== 4/5 validate the GR00T LeRobot dataset"
"$PY" -m l3.validate "$GR00T"

mkdir -p "$EVAL"
echo "== 5/5 evaluate in closed loop: this run's scripted demos, converted, served back over GR00T's policy-server"
echo "   protocol from their initial states (through the dataset's own meta/l3_mapping.yaml)"
"$PY" -m l2.evaluate --task L2-Stack-Cube-SO101-Joint-v0 --policy "replay:$GR00T" --reset-from "$DEMOS" \
  --episodes "${NUM_DEMOS:-4}" --num_envs "${NUM_ENVS:-4}" --report "$EVAL/stack_replay.json"

rate() { "$PY" -c 'import json, sys; r = json.load(open(sys.argv[1])); print(r["successes"], r["episodes"], sep="/")' "$1"; }
count() { "$PY" -c 'import h5py, sys; print(len(h5py.File(sys.argv[1], "r")["data"]))' "$1"; }
echo
echo "stack main job done in $(( $(date +%s) - start )) s"
echo "  demos (L2 HDF5):        scripted $(count "$DEMOS"), teleop $(count "$TELEOP"), Mimic $([ -f "$MIMIC" ] && count "$MIMIC" || echo 0) in $REPO/data/demos/*_$TASK.hdf5"
echo "                          RL (2 iterations of PPO): $(count "data/demos/rl_${TASK}_failed.hdf5") episodes, failed, in $REPO/data/demos/rl_${TASK}_failed.hdf5"
echo "  GR00T LeRobot dataset:  $REPO/$GR00T ($(find "$GR00T/videos" -name '*.mp4' | wc -l) videos)"
echo "  mapping used:           $REPO/$GR00T/meta/l3_mapping.yaml (edit it and convert again with --config)"
echo "  closed loop:            the dataset replayed over GR00T's protocol $(rate "$EVAL/stack_replay.json") episodes stacked ($REPO/$EVAL/)"
