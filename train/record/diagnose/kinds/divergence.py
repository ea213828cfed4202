"""divergence: a non-finite loss (or validation loss), or the smoothed loss sustained well above its running
minimum (a spike that recovers is not one)."""
from __future__ import annotations

import math

import numpy as np

from train.record.diagnose.curves import Curves, point_noise, rolling_median, runs, smooth_window
from train.record.diagnose.finding import Finding
from train.record.diagnose.kind import Facts, Kind
from train.record.diagnose.settings import DiagnoseConfig, DivergenceSettings
from train.record.load import finite, num


ADVICE = ("Lower the learning rate (or lengthen warmup, tighten grad clipping) and restore the last "
          "checkpoint before the rise; a non-finite loss also calls for bf16/z-loss checks.")


def detect(c: Curves, cfg: DiagnoseConfig, facts: Facts) -> list[Finding]:
    return detect_nonfinite(c, cfg) + detect_divergence(c, cfg)


def is_sustained_rise(f: Finding) -> bool:
    """A divergence finding of the sustained rise (detect_divergence), not of a non-finite loss."""
    return f.kind == "divergence" and "elevated_points" in f.evidence


def detect_nonfinite(c: Curves, cfg: DiagnoseConfig) -> list[Finding]:
    """A NaN or infinite loss (or validation loss): critical from its first step to the end of the record."""
    out = []
    for name, rows, key in (("loss", c.train, "loss"), ("val_loss", c.val, "val_loss")):
        bad = [r["step"] for r in rows if (v := num(r.get(key))) is not None and not math.isfinite(v)]
        if not bad:
            continue
        before = [finite(r.get(key)) for r in rows if r["step"] < bad[0]]
        before = [v for v in before if v is not None]
        ev = {"first_nonfinite_step": bad[0], "nonfinite_rows": len(bad), "rows": len(rows)}
        if before:
            ev["last_finite_" + name] = before[-1]
        out.append(Finding("divergence", bad[0], rows[-1]["step"], "critical",
                           f"{name} is not finite from step {bad[0]} ({len(bad)} of {len(rows)} rows)",
                           ev, ADVICE))
    return out


def _min_points(n: int, cfg: DiagnoseConfig) -> int:
    """How long a rise must last: divergence_min_frac of the run, at least divergence_min_points."""
    return max(cfg.divergence_min_points, math.ceil(cfg.divergence_min_frac * n))


def detect_divergence(c: Curves, cfg: DiagnoseConfig) -> list[Finding]:
    """The smoothed loss above its running minimum by divergence_rise and divergence_noise_k sigmas, for
    long enough."""
    y, steps, n = c.loss, c.steps, len(c.loss)
    min_len = _min_points(n, cfg)
    if n < min_len + 3:
        return []
    k = smooth_window(n)
    s = rolling_median(y, k)
    sigma_s = 1.2533 * point_noise(y) / math.sqrt(k)       # sigma of a median of k noisy points
    m = np.minimum.accumulate(s)
    thresh = np.maximum(cfg.divergence_rise * np.abs(m), cfg.divergence_noise_k * sigma_s)
    elevated = (s - m) > thresh
    out = []
    for a, b in runs(elevated, max_gap=min_len):
        if b - a + 1 < min_len:
            continue
        onset = int(np.flatnonzero(s[:a + 1] == m[a])[-1])    # where the running minimum was reached
        peak = a + int(np.argmax(s[a:b + 1]))
        ev = {"min_loss": m[a], "min_step": int(steps[onset]), "peak_smoothed_loss": s[peak],
              "peak_step": int(steps[peak]), "rise_rel": s[peak] / m[a] - 1.0 if m[a] > 0 else float("nan"),
              "elevated_points": b - a + 1, "smoothing_window": k, "noise_sigma": sigma_s * math.sqrt(k) / 1.2533,
              "end_loss": s[-1]}
        recovered = b < n - 1
        out.append(Finding("divergence", int(steps[onset]), int(steps[b]), "critical" if not recovered else "warning",
                           f"loss rose from {m[a]:.4g} (step {int(steps[onset])}) to {s[peak]:.4g} "
                           f"({ev['rise_rel']:+.0%}) and stayed up for {b - a + 1} points"
                           + ("" if recovered else ", to the end of the record"), ev, ADVICE))
    return out


def needs(c: Curves, cfg: DiagnoseConfig, facts: Facts) -> str | None:
    """A non-finite loss is always judged; the sustained rise needs a few points beyond its minimum length."""
    n = len(c.loss)
    return f"{n} training points; {_min_points(n, cfg) + 3} needed" if n < _min_points(n, cfg) + 3 else None


KIND = Kind("divergence", detect, ADVICE, settings=(DivergenceSettings,), needs=needs,
            check="divergence (sustained rise)")
