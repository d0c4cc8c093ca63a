#!/usr/bin/env bash
# Behaviour cloning on the CPU, end to end: scripted demos (collected with every core when missing) ->
# robomimic 0.3.0 BC on their state terms -> each checkpoint served over the policy-server protocol and
# evaluated in the task (python -m l2.evaluate) -> logs/bc/<name>/{summary.json, learning_curve.png, models/}.
#
#   scripts/train_bc.sh                                   # 200 demos, config/robomimic/bc_lift_lowdim.json
#   scripts/train_bc.sh --num_demos 50 --name n50         # flags: python -m l2.bc.train --help
#
# The shipped policy (l2/lift/config/franka/policies/bc/) came from the default run; docs/train.md says how it
# was measured and how to ship a run of your own.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$REPO/scripts/setup.sh"
RM_PY="$(bash "$REPO/scripts/setup_robomimic.sh" | tail -n 1)"
cd "$REPO"
exec "$REPO/.venv/bin/python" -m l2.bc.train --robomimic-python "$RM_PY" "$@"
