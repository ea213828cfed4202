"""``python -m train.evaluate perplexity|harness|compare|tally ...``: held-out perplexity per source, lm-eval tasks,
and a blind side-by-side of two models (train/handoff/evaluate.py)."""
import sys

from train.handoff.evaluate import main  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
