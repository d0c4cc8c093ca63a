#!/usr/bin/env bash
# The main job, on the CPU with defaults: set up (when missing) -> collect demos with camera images ->
# validate them -> convert to a GR00T LeRobot dataset with videos -> validate it -> evaluate the shipped
# policies in closed loop -> HTML reports -> summary.
#
#   scripts/main.sh                      # the variety scene: 4 scripted demos with 4 envs (two 224x224 cameras each)
#   SCENE=plain scripts/main.sh          # the plain scene: one red cube, one instruction
#   NUM_DEMOS=16 NUM_ENVS=8 scripts/main.sh
#   RL_DEMOS=4 RL_CHECKPOINT=logs/rl/<run>/model_<it>.pt scripts/main.sh
#   ROBOT=so101 scripts/main.sh          # the SO-101 (docs/so101.md): its files are <source>_<task>_so101.hdf5
#   TASK=stack scripts/main.sh           # Isaac Lab's own SO-101 cube stack (docs/stack.md): scripts/main_stack.sh
#
# ROBOT=so101 collects scripted, Mimic and RL demos and a leader-arm teleop session (config/teleop/so101_*), converts
# them with config/so101_lift_cube.yaml (LeRobot so101_follower names and units, GR00T so100_dualcam keys), rolls out
# and evaluates its shipped RL and BC policies (l2/lift/config/so101/policies/, trained on the plain scene: docs/so101.md
# gives their rates on both scenes) and evaluates in closed loop the converted dataset's own actions served over
# GR00T's policy protocol.
#
# SCENE=variety (the default, presets=variety) draws per episode three cubes of distinct colors, the target and
# an instruction that names it, the mat, the robot's shade and the table camera's pose; its files are named
# <source>_lift_cube_variety.hdf5. SCENE=plain writes <source>_lift_cube.hdf5. Each scene has its own files
# and its own GR00T dataset (outputs/<task>_gr00t).
#
# Scripted demos are appended to data/demos/scripted_<task>.hdf5 (an existing file is never truncated); on the
# first run a teleop session is replayed from config/teleop/ into data/demos/teleop_<task>.hdf5; the scene's
# shipped RL policy (l2/lift/config/franka/policies/rl_variety or rl; or RL_CHECKPOINT) appends RL_DEMOS (2)
# rollouts to data/demos/rl_<task>.hdf5; Isaac Lab Mimic appends MIMIC_DEMOS (2) demos generated from this run's
# scripted ones to data/demos/mimic_<task>.hdf5. A demo file of an earlier version (no camera frames; RL demos without the cube's orientation) is moved to data/demos_earlier/,
# never mixed with new demos. The GR00T dataset is derived from this scene's files in data/demos/ and rewritten.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
case "${TASK:-lift}" in
  lift) ;;
  stack) exec bash "$REPO/scripts/main_stack.sh" ;;
  *) echo "error: TASK=${TASK}: choose lift or stack" >&2; exit 2 ;;
esac
bash "$REPO/scripts/setup.sh"
cd "$REPO"
PY="$REPO/.venv/bin/python"
case "${SCENE:-variety}" in
  variety) TASK=lift_cube_variety; PRESETS=presets=variety; TRACE=config/teleop/lift_cube_variety_trace.json
           SCENE_OBS=",distractor_positions"; RL_POLICY="${RL_CHECKPOINT:-l2/lift/config/franka/policies/rl_variety/model.pt}" ;;
  plain)   TASK=lift_cube; PRESETS=; TRACE=config/teleop/lift_cube_trace.json; SCENE_OBS=
           RL_POLICY="${RL_CHECKPOINT:-l2/lift/config/franka/policies/rl/model.pt}" ;;
  *) echo "error: SCENE=${SCENE}: choose variety or plain" >&2; exit 2 ;;
esac
MAPPING=config/lift_cube.yaml
CAMERAS="table_cam,wrist_cam"
GYM_TASK=(); TELEOP_TASK=(); RL_TASK=(); BC_TASK=(); MIMIC_TASK=()
BC_MODEL="l2/lift/config/franka/policies/bc/model.pth"; BC_CONFIG=config/robomimic/lift_cube_lowdim.yaml
case "${ROBOT:-franka}" in
  franka) ;;
  so101)  TASK="${TASK/lift_cube/lift_cube_so101}"; MAPPING=config/so101_lift_cube.yaml; CAMERAS="front,wrist"
          GYM_TASK=(--task L2-Lift-Cube-SO101-JointPos-Scripted); TELEOP_TASK=(--task L2-Lift-Cube-SO101-JointPos-Teleop)
          RL_TASK=(--task L2-Lift-Cube-SO101-JointPos-Rel); MIMIC_TASK=(--task L2-Lift-Cube-SO101-JointPos-Mimic)
          RL_POLICY="${RL_CHECKPOINT:-l2/lift/config/so101/policies/rl/model.pt}"  # trained on the plain scene
          BC_TASK=(--task L2-Lift-Cube-SO101-JointPos); BC_MODEL=l2/lift/config/so101/policies/bc/model.pth
          BC_CONFIG=config/robomimic/so101_lift_cube_lowdim.yaml
          TRACE="config/teleop/so101_$(basename "${TRACE/_trace/_leader_trace}")" ;;
  *) echo "error: ROBOT=${ROBOT}: choose franka or so101" >&2; exit 2 ;;
esac
DEMOS="data/demos/scripted_$TASK.hdf5"
TELEOP="data/demos/teleop_$TASK.hdf5"
RL="data/demos/rl_$TASK.hdf5"
MIMIC="data/demos/mimic_$TASK.hdf5"
GR00T="outputs/${TASK}_gr00t"
REPORTS="outputs/reports"
EVAL="outputs/eval"
BC_PORT="${BC_PORT:-5557}"
start=$(date +%s)

# Demos recorded before the cameras existed, or before every source recorded the cube's orientation and the
# end-effector pose (what state policies need; RL demos older than that also hold the pose reached, not
# commanded), cannot share a file or a dataset with new demos: such files are moved aside, never appended to.
for f in "$DEMOS" "$TELEOP" "$RL" "$MIMIC"; do
  [ -f "$f" ] || continue
  expect="$CAMERAS,object_orientation,ee_position,ee_orientation$SCENE_OBS"
  if ! "$PY" -m l2.format.validate "$f" --expect-obs "$expect" > /dev/null 2>&1; then
    mkdir -p data/demos_earlier
    dest="data/demos_earlier/$(basename "$f")"
    [ -e "$dest" ] && dest="${dest%.hdf5}.$(date +%Y%m%d-%H%M%S).hdf5"  # never replace an earlier one
    mv -n "$f" "$dest"
    echo "note: $f was recorded by an earlier version (it lacks one of the obs terms $expect) or does not validate:"
    echo "      moved to $dest; new demos go to a new file"
  fi
done

echo "== 1/6 collect: scripted pick-and-lift with two cameras, kit-less Newton on the CPU, one collector process per"
echo "   core (--workers auto; scene: ${SCENE:-variety})"
"$PY" l2/scripted/run.py "${GYM_TASK[@]}" --num_envs "${NUM_ENVS:-4}" --num_demos "${NUM_DEMOS:-4}" --output "$DEMOS" \
  $([ -f "$DEMOS" ] && echo --append) $PRESETS

if [ ! -f "$TELEOP" ]; then
  echo "== 1b/6 collect: a teleop session replayed from the shipped device trace (first run only)"
  "$PY" l2/teleop/run.py "${TELEOP_TASK[@]}" --teleop_device replay --trace "$TRACE" --num_demos 1 --output "$TELEOP"
fi
echo "== 1c/6 collect: rollout of the RL policy $RL_POLICY"
"$PY" l2/rl/rollout.py "${RL_TASK[@]}" --checkpoint "$RL_POLICY" --num_envs "${RL_DEMOS:-2}" \
  --num_demos "${RL_DEMOS:-2}" --output "$RL" $([ -f "$RL" ] && echo --append) $PRESETS

n=$("$PY" -c "import h5py, sys; print(len(h5py.File(sys.argv[1], 'r')['data']))" "$DEMOS")
THIS_RUN=$(seq -f "demo_%g" $(( n - ${NUM_DEMOS:-4} )) $(( n - 1 )) | tr '\n' ' ')
echo "== 1d/6 collect: Isaac Lab Mimic generates MIMIC_DEMOS (${MIMIC_DEMOS:-2}) new demos from this run's scripted ones"
"$PY" -m l2.mimic "${MIMIC_TASK[@]}" --input "$DEMOS" --demos $THIS_RUN --num_demos "${MIMIC_DEMOS:-2}" \
  --num_envs "${MIMIC_DEMOS:-2}" --output "$MIMIC" $([ -f "$MIMIC" ] && echo --append) $PRESETS

echo "== 2/6 validate the L2 HDF5 files (every demo must hold both cameras)"
"$PY" -m l2.format.validate data/demos/*_"$TASK".hdf5 --expect-obs "$CAMERAS$SCENE_OBS"

echo "== 2b/6 replay this run's scripted demos from their initial states (do their successes reproduce?)"
"$PY" -m l2.replay "$DEMOS" --episodes "$(seq -s, $(( n - ${NUM_DEMOS:-4} )) $(( n - 1 )))" --num_envs "${NUM_ENVS:-4}" \
  $([ "${ROBOT:-franka}" = so101 ] && echo --min-rate 0.5)  # docs/so101.md: an SO-101 replay can lift a step late

echo "== 3/6 convert to GR00T LeRobot with H.264 videos (validated at the end by l3.validate)"
# The scripted demos first: their episodes lead the dataset, where step 5 serves them back by index.
INPUTS=("$DEMOS")
for f in data/demos/*_"$TASK".hdf5; do [ "$f" = "$DEMOS" ] || INPUTS+=("$f"); done
"$PY" l3/convert.py "${INPUTS[@]}" --config "$MAPPING" --output "$GR00T" --overwrite

echo "== 4/6 validate the GR00T LeRobot dataset"
"$PY" -m l3.validate "$GR00T"

mkdir -p "$EVAL"
echo "== 5/6 evaluate in closed loop: the scene's shipped RL policy (in-process) and the shipped BC policy (robomimic,"
echo "   served from its venv over GR00T's policy-server protocol), 16 episodes each on this scene, state only"
"$PY" -m l2.evaluate "${RL_TASK[@]}" --policy "rsl_rl:$RL_POLICY" --episodes 16 --num_envs 16 \
  --report "$EVAL/rl.json" $PRESETS
RM_PY="$(bash scripts/setup_robomimic.sh | tail -n 1)"  # builds robomimic's venv once (about 6 GB)
"$RM_PY" -m l2.serve robomimic "$BC_MODEL" --config "$BC_CONFIG" --host 127.0.0.1 --port "$BC_PORT" --quiet > "$EVAL/bc_server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
"$PY" -m l2.evaluate "${BC_TASK[@]}" --policy "server:127.0.0.1:$BC_PORT" --config "$BC_CONFIG" \
  --episodes 16 --num_envs 16 --timeout 300 --report "$EVAL/bc.json" $PRESETS
kill "$server" 2>/dev/null || true
if [ "${ROBOT:-franka}" = so101 ]; then
  echo "   and this run's scripted demos, converted, served back over GR00T's policy-server"
  echo "   protocol (their actions in so101_follower units, turned back into joint targets) from their initial states"
  "$PY" -m l2.evaluate --policy "replay:$GR00T" --reset-from "$DEMOS" --episodes "${NUM_DEMOS:-4}" \
    --num_envs "${NUM_ENVS:-4}" --task L2-Lift-Cube-SO101-JointPos --config "$MAPPING" --report "$EVAL/replay.json" $PRESETS
fi

echo "== 6/6 inspection reports: what was collected and what GR00T will read, as HTML pages"
"$PY" -m l2.tools.inspect_demos data/demos/*_"$TASK".hdf5 --output "$REPORTS/${TASK}_demos.html" --overwrite --quiet
"$PY" -m l3.inspect_dataset "$GR00T" --output "$REPORTS/${TASK}_gr00t.html" --overwrite --quiet

echo
echo "main job done in $(( $(date +%s) - start )) s"
echo "  demos (L2 HDF5):        $(ls -d "$REPO"/data/demos/*_"$TASK".hdf5 | tr '\n' ' ')"
echo "  GR00T LeRobot dataset:  $REPO/$GR00T ($(find "$GR00T/videos" -name '*.mp4' | wc -l) videos)"
rate() { "$PY" -c 'import json, sys; r = json.load(open(sys.argv[1])); print(r["successes"], r["episodes"], sep="/")' "$1"; }
if [ "${ROBOT:-franka}" = franka ]; then
  echo "  closed loop:            RL $(rate "$EVAL/rl.json"), BC $(rate "$EVAL/bc.json") episodes lifted ($REPO/$EVAL/)"
else
  echo "  closed loop:            RL $(rate "$EVAL/rl.json"), BC $(rate "$EVAL/bc.json"), the dataset replayed over GR00T's protocol $(rate "$EVAL/replay.json") episodes lifted ($REPO/$EVAL/)"
fi
echo "  instructions:           $("$PY" -c 'import json, sys; print(len({t for line in open(sys.argv[1]) for t in json.loads(line)["tasks"]}))' "$GR00T/meta/episodes.jsonl") distinct, the episodes' tasks in $GR00T/meta/episodes.jsonl"
echo "  reports (open in a browser): $REPO/$REPORTS/${TASK}_demos.html, $REPO/$REPORTS/${TASK}_gr00t.html"
echo "  see what the cameras saw: $PY -m l2.tools.frame_strip $DEMOS --first-frames 8 --output first_frames.png"
