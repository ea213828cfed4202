"""What overfitting and val_noisy share: enough validation points to tell a trend from noise."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from glassbox.schema import setting
from train.record.diagnose.curves import Curves
from train.record.diagnose.kind import Facts

if TYPE_CHECKING:
    from train.record.diagnose.registry import DiagnoseConfig


@dataclass
class ValidationSettings:
    val_min_points: int = setting(6, ge=2)          # validations needed to judge val_noisy and overfitting


def too_few(nv: int, needed: int) -> str | None:
    """Why nv validation points cannot be judged when ``needed`` are (None when they can)."""
    if nv >= needed:
        return None
    return ((f"{nv} validation point{'s' * (nv != 1)}; {needed} needed" if nv else "no validation loss in the record")
            + "; evaluate more often (eval.every) or for longer")


def needs(c: Curves, cfg: DiagnoseConfig, facts: Facts) -> str | None:
    return too_few(len(c.vloss), cfg.val_min_points)
