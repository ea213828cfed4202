"""stalled: a long flat stretch that is not a plateau: training loss, and validation loss where there is some,
not improving."""
from __future__ import annotations

import numpy as np

from train.record.diagnose.curves import Curves, point_noise
from train.record.diagnose.finding import Finding
from train.record.diagnose.kind import Facts, Kind
from train.record.diagnose.kinds import flat
from train.record.diagnose.kinds.plateau import is_plateau
from train.record.diagnose.settings import DiagnoseConfig

ADVICE = ("Neither loss is improving: check the learning rate (too low, or decayed already), noise in the "
          "data, and whether the model has the capacity for more.")


def detect(c: Curves, cfg: DiagnoseConfig, facts: Facts) -> list[Finding]:
    out, n, steps = [], len(c.loss), c.steps
    for a, b, ev in flat.stretches(c, cfg):
        if is_plateau(a, ev, n, cfg):
            continue
        change = ev["last_loss"] - ev["first_loss"]
        # validation must not be improving over the stretch either, where there is validation.
        vin = (c.vsteps >= steps[a]) & (c.vsteps <= steps[b])
        if vin.sum() >= 3:
            v = c.vloss[vin]
            vchange = float(np.median(v[-2:]) - np.median(v[:2]))
            ev["val_change"] = vchange
            if vchange < -max(cfg.flat_tol * abs(float(np.median(v))), 3 * point_noise(v)):
                continue
        out.append(Finding("stalled", int(steps[a]), int(steps[b]), "warning",
                           f"the loss stays at about {ev['level']:.4g} (change {change:+.3g}) for {b - a + 1} points "
                           f"({ev['share_of_run']:.0%} of the run)"
                           + (" and validation does not improve either" if "val_change" in ev else ""),
                           ev, ADVICE))
    return out


KIND = Kind("stalled", detect, ADVICE, settings=(flat.FlatSettings,), needs=flat.needs)
