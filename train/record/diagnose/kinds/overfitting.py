"""overfitting: validation loss rising from its minimum while training loss keeps falling."""
from __future__ import annotations

import math

import numpy as np

from train.record.diagnose.curves import (Curves, point_noise, robust_sigma, rolling_median, train_trend_at,
                                          val_half_window)
from train.record.diagnose.finding import Finding
from train.record.diagnose.kind import Facts, Kind
from train.record.diagnose.kinds import validations
from train.record.diagnose.settings import DiagnoseConfig, OverfittingSettings


ADVICE = ("Validation rises while training falls: more (or less repeated) data, more regularization "
          "(weight decay, dropout), or stop earlier / keep the checkpoint at the validation minimum.")


def detect(c: Curves, cfg: DiagnoseConfig, facts: Facts) -> list[Finding]:
    v, vs = c.vloss, c.vsteps
    if len(v) < cfg.val_min_points or len(c.loss) < 4:
        return []
    sm = rolling_median(v, 3) if len(v) >= 7 else v
    i = int(np.argmin(sm))
    if len(v) - 1 - i < cfg.overfit_min_points:
        return []
    low = float(sm[i])
    tail = float(np.median(v[-3:]))
    rise = tail - low
    half = val_half_window(c)
    gap = v - train_trend_at(c, vs, half)                # smooth in healthy and in overfitting runs
    gap = gap[np.isfinite(gap)]
    noise = robust_sigma(np.diff(gap)) / math.sqrt(2) if len(gap) >= 4 else point_noise(v)
    rising = float(np.mean(np.diff(v[i:]) > 0))
    tr = train_trend_at(c, np.array([vs[i], vs[-1]]), half)
    if not np.all(np.isfinite(tr)):
        return []
    train_drop = (tr[0] - tr[1]) / abs(tr[0]) if tr[0] else 0.0
    if (rise >= cfg.overfit_min_rise * abs(low) and rise >= cfg.overfit_noise_k * noise
            and rising >= cfg.overfit_rising_share and train_drop >= cfg.overfit_train_drop):
        ev = {"val_min": low, "val_min_step": int(vs[i]), "val_end": tail, "val_rise": rise,
              "val_rise_rel": rise / abs(low), "val_noise_sigma": noise, "rising_share": rising,
              "train_at_val_min": float(tr[0]), "train_end": float(tr[1]), "train_drop_rel": train_drop,
              "gap_end": tail - float(tr[1])}
        return [Finding("overfitting", int(vs[i]), int(vs[-1]), "warning",
                        f"validation loss rose {rise / abs(low):.1%} from its minimum {low:.4g} (step {int(vs[i])}) "
                        f"while training loss fell {train_drop:.1%}", ev, ADVICE)]
    return []


KIND = Kind("overfitting", detect, ADVICE, settings=(validations.ValidationSettings, OverfittingSettings),
            needs=validations.needs)
