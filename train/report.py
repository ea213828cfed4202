"""``python -m train.report RUN_DIR [--compare OTHER_RUN] [--out FILE]``: one self-contained HTML page of a run
(curves, telemetry, diagnosis; train/record/report.py). ``make report RUN=runs/<name> [COMPARE=runs/<other>]``."""
import sys

from train.record.report import build_report, main  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
