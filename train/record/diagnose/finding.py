"""A finding: one pattern in a run's curves, where it starts and ends, how bad, the numbers behind it and what
to do about it."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

SEVERITIES = ("info", "warning", "critical")


@dataclass
class Finding:
    kind: str
    step: int
    end_step: int
    severity: str
    message: str
    evidence: dict = field(default_factory=dict)
    advice: str = ""

    def to_dict(self) -> dict:
        return {"kind": self.kind, "step": self.step, "end_step": self.end_step, "severity": self.severity,
                "message": self.message, "evidence": {k: json_num(v) for k, v in self.evidence.items()},
                "advice": self.advice}


def json_num(v):
    """A number as JSON holds it: numpy scalars as Python's, non-finite floats as strings."""
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return v if math.isfinite(v) else str(v)
    if isinstance(v, np.integer):
        return int(v)
    return v
