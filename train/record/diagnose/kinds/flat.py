"""The flat stretch that plateau and stalled share: at least flat_min_frac of the run not improving.

Which kind a stretch is decides itself in plateau.py (after a fast early drop, early in the run) and
stalled.py (any other, validation not improving either).
"""
from __future__ import annotations

import math

import numpy as np

from train.record.diagnose.curves import Curves, rolling_median, runs, smooth_window
from train.record.diagnose.kind import Facts
from train.record.diagnose.settings import DiagnoseConfig, FlatSettings


def stretches(c: Curves, cfg: DiagnoseConfig) -> list[tuple[int, int, dict]]:
    """(first, last, evidence) of the flat stretches of the training loss, less those at the expected floor
    (converged)."""
    y, n = c.loss, len(c.loss)
    out = []
    initial = float(np.median(y[:3])) if n else float("nan")
    for a, b, level in _flat_stretches(y, cfg):
        if cfg.expected_floor is not None and level - cfg.expected_floor < cfg.floor_gap:
            continue                                          # flat at the floor: converged
        drop = (initial - level) / initial if initial > 0 else 0.0
        ev = {"level": level, "initial_loss": initial, "drop_before_rel": drop,
              "first_loss": float(np.median(y[a:a + 3])), "last_loss": float(np.median(y[max(a, b - 2):b + 1])),
              "points": b - a + 1, "share_of_run": (b - a + 1) / n}
        if cfg.expected_floor is not None:
            ev["expected_floor"] = cfg.expected_floor
        out.append((a, b, ev))
    return out


def _flat_stretches(y: np.ndarray, cfg: DiagnoseConfig) -> list[tuple[int, int, float]]:
    """(first, last, level) of stretches of at least flat_min_frac of the points that do not improve."""
    n = len(y)
    L = max(cfg.flat_min_points, math.ceil(cfg.flat_min_frac * n))
    if n < L or L < 4:
        return []
    change, se, mean = window_fits(y, L)
    s = rolling_median(y, smooth_window(n))
    win = np.lib.stride_tricks.sliding_window_view(s, L)
    spread = win.max(axis=1) - win.min(axis=1)
    level = np.abs(mean)
    flat = (np.abs(change) + cfg.flat_se_margin * se < cfg.flat_tol * level) & (spread < cfg.flat_range * level)
    spans: list[list[int]] = []
    for a, b in runs(flat):                 # windows flat from a..b cover a .. b+L-1; merge overlaps
        if spans and a <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], b + L - 1)
        else:
            spans.append([a, b + L - 1])
    out = []
    for a, last in spans:
        a = _knee(y, s, a, last, L, cfg.flat_tol / 2)
        out.append((a, last, float(np.median(y[a:last + 1]))))
    return out


def _knee(y: np.ndarray, s: np.ndarray, a: int, last: int, L: int, band_rel: float) -> int:
    """Where the flat stretch really starts. The first flat window can begin on the tail of the decline
    before it (or, with noise, a little after the start): take the first point within +-L/2 of it where the
    smoothed loss is within band_rel of the stretch's level."""
    level = float(np.median(y[a:last + 1]))
    lo, hi = max(0, a - L // 2), min(last, a + L // 2)
    inside = np.flatnonzero(np.abs(s[lo:hi + 1] - level) <= band_rel * abs(level))
    return lo + int(inside[0]) if len(inside) else a


def window_fits(y: np.ndarray, L: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every window y[i:i+L]: (change over the window from a line fit, its standard error, mean)."""
    n = len(y)
    t = np.arange(n, dtype=float)
    c = lambda a: np.concatenate([[0.0], np.cumsum(a)])            # noqa: E731
    S_y, S_yy, S_ty = c(y), c(y * y), c(t * y)
    i = np.arange(n - L + 1)
    sy = S_y[i + L] - S_y[i]
    syy = S_yy[i + L] - S_yy[i]
    sty = S_ty[i + L] - S_ty[i]
    tl = np.arange(L, dtype=float)                                # t relative to the window start
    st, stt = tl.sum(), (tl * tl).sum()
    sty_rel = sty - i * sy                                       # sum (t - i) y
    ct = stt - st * st / L
    cty = sty_rel - st * sy / L
    cyy = syy - sy * sy / L
    slope = cty / ct
    ssres = np.maximum(cyy - slope * cty, 0.0)
    se = np.sqrt(ssres / max(L - 2, 1) / ct)
    return slope * (L - 1), se * (L - 1), sy / L


def needs(c: Curves, cfg: DiagnoseConfig, facts: Facts) -> str | None:
    """Plateau and stalled need a stretch of flat_min_points (at least 4) to fit."""
    n = len(c.loss)
    least = max(cfg.flat_min_points, 4)
    return f"{n} training points; {least} needed" if n < least else None
