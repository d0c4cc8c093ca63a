"""Imitation learning on the collected demonstrations: robomimic BC-RNN on the state terms, LeRobot ACT on the
cameras, each served over the policy-server protocol and measured in the task with ``python -m l2.evaluate``.

``train.py`` is the whole loop (collect, split, train, evaluate) for robomimic; ``robomimic_policy.py`` and
``lerobot_policy.py`` serve a checkpoint of each and run in that library's own venv (no Isaac Lab import);
Each robot's shipped BC policy is in its task config, ``l2/lift/config/<robot>/policies/bc/`` (docs/train.md).
"""
