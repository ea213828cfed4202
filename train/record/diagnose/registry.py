"""Every kind of finding, in the order the not-judged notes name them, and the thresholds of them all.

Adding a kind: a new module in ``kinds/`` ending in ``KIND = Kind(...)`` (kind.py says what it holds), and one
line in ``KINDS`` below. Its settings dataclass becomes part of ``DiagnoseConfig`` by that line alone.
"""
from __future__ import annotations

from dataclasses import dataclass

from train.record.diagnose.kind import Kind
from train.record.diagnose.kinds import (divergence, epochs_beyond_plan, low_initial_loss, memorization, overfitting,
                                         plateau, spike, stalled, val_noisy)

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


def _settings_classes() -> list[type]:
    """Each kind's settings dataclasses once, in the order of KINDS."""
    out: list[type] = []
    for kind in KINDS:
        out += [s for s in kind.settings if s not in out]
    return out


# A dataclass collects fields from its last base first: reversed, the fields read in the order of KINDS.
@dataclass
class DiagnoseConfig(*reversed(_settings_classes())):
    """Detector thresholds, the fields of every kind's settings. Relative thresholds are shares of the loss level
    at that point."""

    def check(self) -> str | None:
        """Each kind's own rules between its fields (glassbox/schema.py calls this)."""
        for cls in _settings_classes():
            own = cls.__dict__.get("check")
            if own and (problem := own(self)):
                return problem
        return None


def by_name(name: str) -> Kind:
    return next(k for k in KINDS if k.name == name)
