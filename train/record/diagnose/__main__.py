"""``python -m train.record.diagnose RUN`` (the same as ``glassbox diagnose RUN``)."""
import sys

from train.record.diagnose.cli import main

sys.exit(main())
