"""``python -m train.diagnose RUN_DIR [--json]``: findings about a run's loss curves (train/record/diagnose.py)."""
import sys

from train.record.diagnose import DiagnoseConfig, Finding, diagnose, format_table, main  # noqa: F401
from train.record.load import load_metrics  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
