"""low_initial_loss: the first losses far below ln(vocabulary size), which an untrained model scores (more with
a wide initialisation): leakage, heavy duplication or a wrong vocabulary size."""
from __future__ import annotations

import math

import numpy as np

from train.record.diagnose.curves import Curves
from train.record.diagnose.finding import Finding
from train.record.diagnose.kind import Facts, Kind
from train.record.diagnose.settings import DiagnoseConfig, LowInitialLossSettings


ADVICE = ("An untrained model should score about ln(vocabulary size): check for train/validation "
          "leakage or heavy duplication (overlap between held-out and training documents), or "
          "a wrong vocabulary size.")


def detect(c: Curves, cfg: DiagnoseConfig, facts: Facts) -> list[Finding]:
    vocab_size = facts.vocab_size
    if not vocab_size or vocab_size < 2 or not len(c.loss):
        return []
    if c.steps[0] > cfg.low_initial_max_first_step:
        return []
    initial = float(np.max(c.loss[:3]))      # the highest of the first three: the early drop is fast
    ln_v = math.log(vocab_size)
    gap = max(cfg.low_initial_gap_min, cfg.low_initial_gap_rel * ln_v)
    if initial >= ln_v - gap:
        return []
    ev = {"initial_loss": initial, "ln_vocab": ln_v, "vocab_size": vocab_size, "gap": ln_v - initial,
          "threshold_gap": gap, "first_step": int(c.steps[0])}
    return [Finding("low_initial_loss", int(c.steps[0]), int(c.steps[min(2, len(c.steps) - 1)]),
                    "critical" if initial < 0.5 * ln_v else "warning",
                    f"initial loss {initial:.4g} is {ln_v - initial:.3g} nats below ln({vocab_size}) = {ln_v:.4g}",
                    ev, ADVICE)]


def needs(c: Curves, cfg: DiagnoseConfig, facts: Facts) -> str | None:
    if not facts.vocab_size:
        return "vocabulary size unknown (no config.json with vocab_size); pass --vocab-size"
    if len(c.loss) and c.steps[0] > cfg.low_initial_max_first_step:
        return f"the record starts at step {int(c.steps[0])}: no initial loss to judge"
    return None


KIND = Kind("low_initial_loss", detect, ADVICE, settings=(LowInitialLossSettings,), needs=needs)
