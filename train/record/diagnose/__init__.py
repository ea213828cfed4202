"""Diagnosis of a run's loss curves: findings with the numbers behind them and what to do.

``diagnose(rows, vocab_size=None, cfg=DiagnoseConfig())`` takes ``metrics.jsonl`` rows (``load_metrics``)
and returns findings, each with ``kind``, ``step`` (where it starts), ``end_step``, ``severity``
(info | warning | critical), ``evidence`` (a dict of numbers), ``message`` and ``advice``. One module per kind
in ``kinds/``, listed in ``registry.py``:

- ``spike``       loss far above the median of the points before it (robust z-score over a window);
- ``divergence``  a non-finite loss, or the smoothed loss sustained well above its running minimum;
- ``plateau``     a fast early drop, then a long flat stretch (above ``expected_floor`` when one is given);
- ``stalled``     a long flat stretch that is not a plateau: training loss, and validation loss where
                  there is some, not improving;
- ``overfitting`` validation loss rising from its minimum while training loss keeps falling;
- ``val_noisy``   validation loss fluctuating far more than the (smooth) training loss;
- ``low_initial_loss``  the first losses far below ln(vocabulary size), which an untrained model scores;
- ``memorization`` training loss far below validation and the gap growing, validation not rising (yet):
                  the model learns its training text by heart (repeated data), the early sign of overfitting;
- ``epochs_beyond_plan``  more tokens trained than the manifest planned, so its sources repeat more often
                  than the mixture decided (needs the run's manifest.json).

``assess(...)`` returns the findings and, beside them, the checks it could not judge and why (too few
validation points, no vocabulary size, no manifest): "no findings" then means no findings among what could
be judged, and the output says which checks those were.

Curves are judged in points (logged rows), not in step units, so gaps in the steps do not matter. Every
threshold is a field of ``DiagnoseConfig`` with its default and the reason for it, declared beside its rule;
the CLI exposes the main ones. Thresholds are set so that realistic healthy curves (power-law decay with
noise, warmup then decay, the end of a cosine schedule, noisy small-batch curves, runs of 20 to 5,000 steps)
give no finding: ``tests/train/record/diagnose/`` holds both sides, a test file per kind.

    glassbox diagnose RUN [--json] [--format F] [--tags FIELD=TAG,...] [--vocab-size N] [--spike-z Z]
                                 [--floor NATS]

RUN is any trainer's record that train/record/formats.py reads: this project's run directory, a JSON-lines
file, a Hugging Face trainer_state.json (or its output directory), TensorBoard event files, a CSV.

Exit status: 0 with or without findings (a finding is not an error), 2 when there is nothing to read.
"""
from train.record.diagnose.assess import Diagnosis, assess, assess_run, diagnose
from train.record.diagnose.cli import add_reader_args, format_not_judged, format_table, main
from train.record.diagnose.curves import rolling_median, smooth_window
from train.record.diagnose.finding import SEVERITIES, Finding
from train.record.diagnose.kinds.spike import RUN_SPIKE_SETTINGS, with_run_spike_settings
from train.record.diagnose.registry import KINDS
from train.record.diagnose.settings import DiagnoseConfig
from train.record.load import load_metrics

__all__ = ["DiagnoseConfig", "Diagnosis", "Finding", "KINDS", "RUN_SPIKE_SETTINGS", "SEVERITIES", "add_reader_args",
           "assess", "assess_run", "diagnose", "format_not_judged", "format_table", "load_metrics", "main",
           "rolling_median", "smooth_window", "with_run_spike_settings"]
