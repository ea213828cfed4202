"""``python -m train.diagnose RUN [--json] [--format F]``: findings about any trainer's loss curves (train/record/diagnose.py)."""
import sys

from train.record.diagnose import (DiagnoseConfig, Diagnosis, Finding, assess, assess_run, diagnose,  # noqa: F401
                                   format_table, main)
from train.record.load import load_metrics  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
