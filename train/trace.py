"""``python -m train.trace RUN_DIR --step N [--json]``: the documents of a step's batch (train/record/trace.py)."""
import sys

from train.record.trace import TraceError, data_step_of, format_trace, main, trace  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
