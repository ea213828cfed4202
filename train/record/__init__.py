"""Readers of a run record: they read ``runs/<name>/`` and never write into the trainer's files.

- ``load``: ``metrics.jsonl`` (torn lines skipped, one row per step), the resolved config, ``run.json``.
- ``diagnose``: findings about a loss curve (spikes, divergence, plateaus, overfitting, ...) with the
  numbers behind them and what to do (``glassbox diagnose RUN``).
- ``report``: one self-contained HTML page with the curves, the telemetry and the diagnosis
  (``glassbox report RUN``, ``make report RUN=...``).
- ``trace``: the documents of one step's batch, from the data order, the shards and the corpus's document
  shards (``glassbox trace RUN --step N``, ``make trace RUN=... STEP=N``; numpy and pyarrow).

Only the standard library and numpy at import time; matplotlib is imported by the report alone.
"""
