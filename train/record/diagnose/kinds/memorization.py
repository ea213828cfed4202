"""memorization: training loss far below validation and the gap growing, validation not rising (yet): the
model learns its training text by heart (repeated data), the early sign of overfitting. Judged only where
overfitting is not found: validation rising says more than the gap does, so one finding, not two."""
from __future__ import annotations

import math

import numpy as np

from train.record.diagnose.curves import Curves, robust_sigma, train_trend_at, val_half_window
from train.record.diagnose.finding import Finding
from train.record.diagnose.kind import Facts, Kind
from train.record.diagnose.kinds.validations import too_few
from train.record.diagnose.settings import DiagnoseConfig, MemorizationSettings


ADVICE = ("The model is learning its training text by heart: it sees the same tokens again and again. "
          "Train on more data (or fewer passes over it: fewer steps, a smaller batch), deduplicate, "
          "or keep the checkpoint where validation was best; validation will turn up next.")


def detect(c: Curves, cfg: DiagnoseConfig, facts: Facts) -> list[Finding]:
    if facts.found.get("overfitting"):
        return []
    return detect_memorization(c, cfg)


def _hinge(x: np.ndarray, y: np.ndarray) -> int:
    """Index s of the best fit of y = c + b * max(0, x - x[s]) with b > 0: flat, then rising from s."""
    best, at = math.inf, 0
    for s in range(len(y) - 1):
        a = np.stack([np.ones_like(x), np.maximum(0.0, x - x[s])], axis=1)
        coef = np.linalg.lstsq(a, y, rcond=None)[0]
        sse = float(((a @ coef - y) ** 2).sum())
        if coef[1] > 0 and sse < best:
            best, at = sse, s
    return at


def detect_memorization(c: Curves, cfg: DiagnoseConfig) -> list[Finding]:
    """The generalization gap (validation minus the training loss around the same step), large at the end
    and opened mostly since its smallest point."""
    if len(c.vloss) < cfg.memo_min_points or len(c.loss) < 4:
        return []
    trend = train_trend_at(c, c.vsteps, val_half_window(c))
    ok = np.isfinite(trend)
    if ok.sum() < cfg.memo_min_points:
        return []
    v, vs, g = c.vloss[ok], c.vsteps[ok], c.vloss[ok] - trend[ok]
    end = float(np.mean(g[-2:])) if len(g) >= 4 else float(g[-1])
    v_end = float(np.mean(v[-2:])) if len(v) >= 4 else float(v[-1])
    start = _hinge(vs.astype(float), g)                    # where the gap began to open
    before = float(np.median(g[:start + 1]))
    growth = end - before
    widening = float(np.mean(np.diff(g[start:]) > 0)) if len(g) - start >= 2 else 0.0
    noise = robust_sigma(np.diff(g)) / math.sqrt(2) if len(g) >= 5 else 0.0
    rel = end / abs(v_end) if v_end else 0.0
    if not (end >= cfg.memo_gap_min and rel >= cfg.memo_gap_rel and growth >= cfg.memo_growth_rel * end
            and widening >= cfg.memo_rising_share and growth >= cfg.memo_noise_k * noise):
        return []
    sev = "critical" if rel >= cfg.memo_critical_rel else "warning" if rel >= cfg.memo_warning_rel else "info"
    ev = {"gap_end": end, "gap_end_rel": rel, "gap_before": before, "growth": growth, "widening_share": widening,
          "gap_noise_sigma": noise, "val_end": v_end, "train_end": v_end - end, "val_points": int(len(g))}
    return [Finding("memorization", int(vs[start]), int(vs[-1]), sev,
                    f"training loss is {end:.3g} nats ({rel:.0%}) below validation at the end and the gap grew by "
                    f"{growth:.3g} since step {int(vs[start])}: the model is memorizing its training data",
                    ev, ADVICE)]


def needs(c: Curves, cfg: DiagnoseConfig, facts: Facts) -> str | None:
    return too_few(len(c.vloss), cfg.memo_min_points)


KIND = Kind("memorization", detect, ADVICE, settings=(MemorizationSettings,), needs=needs, after=("overfitting",))
