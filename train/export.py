"""``python -m train.export RUN_DIR [--out DIR] [--step N]``: a run's checkpoint as a Hugging Face model directory,
checked against the training model (train/handoff/export.py)."""
import sys

from train.handoff.export import check, export, main  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
