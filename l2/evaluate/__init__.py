"""Closed-loop evaluation (``python -m l2.evaluate``; the command's documentation is :mod:`l2.evaluate.cli`'s).

The package, by responsibility: ``cli`` (the command line), ``spec`` (the policy asked for, the defaults),
``actors`` (observations into action chunks), ``episodes`` (the episode loop), ``videos``, ``run`` (one
process), ``spread`` (several processes). Its entry points are those the single module had.
"""

from l2.evaluate.cli import main, parse_args
from l2.evaluate.run import evaluate
from l2.evaluate.spec import EvaluationError, PolicySpec, parse_policy
from l2.evaluate.spread import evaluate_spread

__all__ = ["EvaluationError", "PolicySpec", "evaluate", "evaluate_spread", "main", "parse_args", "parse_policy"]
