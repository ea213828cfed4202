"""Watching a run while it trains (rank-side helpers of ``train/pretrain.py``).

- ``telemetry``: what the data of a step was (document lengths, in-batch duplicates, realized mixture
  shares), decoded samples of what the model saw, and the optional TensorBoard copy of every scalar;
- ``leakage``: held-out validation documents whose tokens also occur among the training documents;
- ``spike``: loss / gradient-norm spike detection agreed by every rank, skipping the update, and the record
  of what a rollback skipped.

Everything is computed from the data order (``train/data/sample_index.py``), which is deterministic: the
whole global batch of a step is known on any rank without communication, whatever the parallel layout.
"""
