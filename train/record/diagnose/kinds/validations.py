"""What overfitting and val_noisy share: enough validation points to tell a trend from noise."""
from __future__ import annotations

from train.record.diagnose.curves import Curves
from train.record.diagnose.kind import Facts
from train.record.diagnose.settings import DiagnoseConfig, ValidationSettings


def too_few(nv: int, needed: int) -> str | None:
    """Why nv validation points cannot be judged when ``needed`` are (None when they can)."""
    if nv >= needed:
        return None
    return ((f"{nv} validation point{'s' * (nv != 1)}; {needed} needed" if nv else "no validation loss in the record")
            + "; evaluate more often (eval.every) or for longer")


def needs(c: Curves, cfg: DiagnoseConfig, facts: Facts) -> str | None:
    return too_few(len(c.vloss), cfg.val_min_points)
