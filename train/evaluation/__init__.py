"""Evaluation of runs and exported models (``glassbox evaluate``, or ``python -m train.evaluation.evaluate``).

- ``heldout``: perplexity per source on the run's held-out validation documents.
- ``harness``: lm-evaluation-harness tasks (``tasks/``) on an export.
- ``compare``: a blind side-by-side sheet of two models' answers to ``prompts.jsonl``.
- ``evaluate``: the command.
"""
