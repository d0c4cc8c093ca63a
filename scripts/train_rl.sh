#!/usr/bin/env bash
# Train the RL source's policy on the CPU, as the shipped one was trained, in one command:
#   1. warm start: behaviour cloning of the scripted expert with DAgger (l2/rl/pretrain.py),
#   2. its success rate over 64 episodes (the recording runner, l2/rl/rollout.py --episodes 64),
#   3. PPO from that actor: critic warm-up with the actor frozen, then PPO (l2/rl/train.py),
#   4. the learning curve (python -m l2.rl.plot) and the success rate after PPO, over the same 64 episodes.
#
#   scripts/train_rl.sh                          # SEED=42, RUN=cpu_seed42, 64 envs: about 31 min on 2 cores
#   SEED=1 RUN=cpu_seed1 PPO_ITERATIONS=200 scripts/train_rl.sh
#
# Then ship it: python -m l2.rl.checkpoint logs/rl/<run>/model_<it>.pt
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$REPO/scripts/setup.sh"
cd "$REPO"
PY="$REPO/.venv/bin/python"
SEED="${SEED:-42}"
RUN="${RUN:-cpu_seed$SEED}"
NUM_ENVS="${NUM_ENVS:-64}"
DIR="logs/rl/$RUN"
EVAL=(--num_envs 64 --episodes 64 --seed 1000 --overwrite presets=no_cameras)  # the same 64 cube poses each time
start=$(date +%s)

echo "== 1/4 warm start: DAgger on the scripted expert -> $DIR/model_bc.pt"
"$PY" l2/rl/pretrain.py --num_envs "$NUM_ENVS" --seed "$SEED" --output "$DIR/model_bc.pt"
bc_done=$(date +%s)

echo "== 2/4 success rate of the warm start"
"$PY" l2/rl/rollout.py --checkpoint "$DIR/model_bc.pt" --output "$DIR/eval/bc.hdf5" "${EVAL[@]}" | tee "$DIR/eval_bc.txt"

echo "== 3/4 PPO from the warm start"
ppo_start=$(date +%s)
"$PY" l2/rl/train.py --agent rsl_rl_finetune_cfg_entry_point --init "$DIR/model_bc.pt" --critic_warmup 20 \
  --num_envs "$NUM_ENVS" --seed "$SEED" --run_name "$RUN" ${PPO_ITERATIONS:+--max_iterations "$PPO_ITERATIONS"}
ppo_done=$(date +%s)
final=$(ls "$DIR"/model_[0-9]*.pt | sort -t_ -k2 -n | tail -1)

echo "== 4/4 learning curve and success rate after PPO"
"$PY" -m l2.rl.plot "$DIR"
"$PY" l2/rl/rollout.py --checkpoint "$final" --output "$DIR/eval/ppo.hdf5" "${EVAL[@]}" | tee "$DIR/eval_ppo.txt"

echo
echo "trained in $(( (ppo_done - start) / 60 )) min (warm start $(( (bc_done - start) / 60 )) min, PPO $(( (ppo_done - ppo_start) / 60 )) min)"
echo "  success before PPO  $(grep -o 'success rate.*' "$DIR/eval_bc.txt")"
echo "  success after PPO   $(grep -o 'success rate.*' "$DIR/eval_ppo.txt")"
echo "  checkpoint          $final   (ship it: $PY -m l2.rl.checkpoint $final)"
echo "  learning curve      $DIR/learning_curve.png"
