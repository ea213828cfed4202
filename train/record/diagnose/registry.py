"""Every kind of finding, in the order the not-judged notes name them.

Adding a kind: a new module in ``kinds/`` ending in ``KIND = Kind(...)`` (kind.py says what it holds), and one
line in ``KINDS`` below; its thresholds, if any, go in ``settings.py`` (a dataclass there, in ``SETTINGS``), which
``DiagnoseConfig`` inherits. ``DiagnoseConfig`` is defined there, not here, so the kinds import it without
importing the registry that imports them.
"""
from __future__ import annotations

from train.record.diagnose.kind import Kind
from train.record.diagnose.kinds import (divergence, epochs_beyond_plan, low_initial_loss, memorization, overfitting,
                                         plateau, spike, stalled, val_noisy)
from train.record.diagnose.settings import DiagnoseConfig

KINDS: tuple[Kind, ...] = (
    spike.KIND,
    divergence.KIND,
    plateau.KIND,
    stalled.KIND,
    overfitting.KIND,
    val_noisy.KIND,
    memorization.KIND,
    low_initial_loss.KIND,
    epochs_beyond_plan.KIND,
)


def by_name(name: str) -> Kind:
    return next(k for k in KINDS if k.name == name)
