"""plateau: a fast early drop, then a long flat stretch (above ``expected_floor`` when one is given)."""
from __future__ import annotations

from train.record.diagnose.curves import Curves
from train.record.diagnose.finding import Finding
from train.record.diagnose.kind import Facts, Kind
from train.record.diagnose.kinds import flat
from train.record.diagnose.settings import DiagnoseConfig, PlateauSettings


ADVICE = ("Learning rate likely too high (try it lower, or a longer warmup) or too little diversity in the "
          "data (check the mixture, duplication and repetition epochs).")


def is_plateau(a: int, ev: dict, n: int, cfg: DiagnoseConfig) -> bool:
    """A flat stretch from point a of n after the loss had fallen plateau_early_drop, early in the run."""
    return ev["drop_before_rel"] >= cfg.plateau_early_drop and a <= cfg.plateau_max_start * n


def detect(c: Curves, cfg: DiagnoseConfig, facts: Facts) -> list[Finding]:
    out, n = [], len(c.loss)
    for a, b, ev in flat.stretches(c, cfg):
        if is_plateau(a, ev, n, cfg):
            out.append(Finding("plateau", int(c.steps[a]), int(c.steps[b]), "warning",
                               f"after falling {ev['drop_before_rel']:.0%} from {ev['initial_loss']:.4g}, the loss "
                               f"stays flat at about {ev['level']:.4g} for {b - a + 1} points "
                               f"({ev['share_of_run']:.0%} of the run)", ev, ADVICE))
    return out


KIND = Kind("plateau", detect, ADVICE, settings=(flat.FlatSettings, PlateauSettings), needs=flat.needs)
