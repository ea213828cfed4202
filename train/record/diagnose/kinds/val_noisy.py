"""val_noisy: validation loss fluctuating far more than the (smooth) training loss, from where the noise
starts."""
from __future__ import annotations

import math

import numpy as np

from train.record.diagnose.curves import Curves, point_noise, robust_sigma, train_trend_at, val_half_window
from train.record.diagnose.finding import Finding
from train.record.diagnose.kind import Facts, Kind
from train.record.diagnose.kinds import validations
from train.record.diagnose.settings import DiagnoseConfig, ValNoisySettings


ADVICE = ("Validation is much noisier than training: the validation set is likely too small or "
          "unbalanced across sources; raise eval.samples_per_source or check the per-source losses.")


def detect(c: Curves, cfg: DiagnoseConfig, facts: Facts) -> list[Finding]:
    v, vs = c.vloss, c.vsteps
    if len(v) < cfg.val_min_points or len(c.loss) < 8:
        return []
    trend = train_trend_at(c, vs, val_half_window(c))
    ok = np.isfinite(trend)
    if ok.sum() < cfg.val_min_points:
        return []
    v, vs, d = v[ok], vs[ok], v[ok] - trend[ok]              # the generalization gap: smooth when healthy
    dd = np.diff(d)
    sigma_v = robust_sigma(dd) / math.sqrt(2)
    sigma_t = point_noise(c.loss)
    level = float(np.median(v))
    ref = max(cfg.val_noisy_ratio * sigma_t, cfg.val_noisy_min_rel * abs(level))
    # Where it starts: the change point of the jumps' variance (two-segment Gaussian likelihood, each
    # segment at least 2 jumps); jumps clipped at 10 x the threshold so one outlier does not decide it.
    last_start = len(dd) - (cfg.val_min_points - 1)
    if last_start < 0:
        return []
    sq = np.minimum(dd * dd, (10 * ref) ** 2) + (1e-3 * ref) ** 2

    def ll(x: np.ndarray) -> float:
        return -0.5 * len(x) * math.log(x.mean()) if len(x) else 0.0

    cands = [0] + list(range(2, last_start + 1))
    scores = [ll(sq[:j]) + ll(sq[j:]) if j == 0 or sq[j:].mean() > sq[:j].mean() else -math.inf for j in cands]
    start = cands[int(np.argmax(scores))]
    if np.mean(np.abs(dd[start:]) > ref) < 0.5:
        return []
    sigma_from = robust_sigma(dd[start:]) / math.sqrt(2)
    if max(sigma_v, sigma_from) <= ref:
        return []
    ev = {"val_sigma": max(sigma_v, sigma_from), "train_step_sigma": sigma_t, "ratio": max(sigma_v, sigma_from) /
          sigma_t if sigma_t > 0 else float("inf"), "val_level": level, "threshold": ref, "val_points": len(v)}
    sev = "warning" if ev["val_sigma"] >= cfg.val_noisy_warn_rel * abs(level) else "info"
    return [Finding("val_noisy", int(vs[start]), int(vs[-1]), sev,
                    f"validation loss fluctuates by about {ev['val_sigma']:.3g} between evaluations, "
                    f"against {sigma_t:.3g} step to step for training", ev, ADVICE)]


KIND = Kind("val_noisy", detect, ADVICE, settings=(validations.ValidationSettings, ValNoisySettings),
            needs=validations.needs)
