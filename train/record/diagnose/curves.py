"""The curves every kind judges, prepared once from the metrics rows, and the numeric helpers they share.

Curves are judged in points (logged rows), not in step units, so gaps in the steps do not matter.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from train.monitor.spike_rule import MAD_TO_SIGMA
from train.record.load import finish_rows, finite, split_rows


@dataclass
class Curves:
    steps: np.ndarray          # train steps with a finite loss
    loss: np.ndarray
    vsteps: np.ndarray         # val steps with a finite val_loss
    vloss: np.ndarray
    train: list[dict]
    val: list[dict]


def prepare(rows: list[dict]) -> Curves:
    """The training and validation curves of metrics rows (any kinds, any order)."""
    # The last row per (kind, step) wins, sorted by step; rows without a kind mapped as the loader does
    # (train/record/load.py), so rows handed in directly (the trainer's own list) are read alike.
    clean, _ = finish_rows(rows)
    train, val = split_rows(clean)
    st = [(r["step"], finite(r.get("loss"))) for r in train]
    st = [(s, v) for s, v in st if v is not None]
    vs = [(r["step"], finite(r.get("val_loss"))) for r in val]
    vs = [(s, v) for s, v in vs if v is not None]
    return Curves(np.array([s for s, _ in st], dtype=int), np.array([v for _, v in st], dtype=float),
                  np.array([s for s, _ in vs], dtype=int), np.array([v for _, v in vs], dtype=float),
                  train, val)


def robust_sigma(x: np.ndarray) -> float:
    """Standard deviation of Gaussian noise from the median absolute deviation (0 for < 2 points)."""
    if len(x) < 2:
        return 0.0
    return float(MAD_TO_SIGMA * np.median(np.abs(x - np.median(x))))


def point_noise(y: np.ndarray) -> float:
    """Point-to-point noise sigma of a curve: robust sigma of second differences / sqrt 6 (a linear trend
    cancels, so a falling loss does not count as noise)."""
    if len(y) < 4:
        return 0.0
    return robust_sigma(np.diff(y, 2)) / math.sqrt(6)


def smooth_window(n: int) -> int:
    """Odd window of the centered rolling median: 1/25 of the points, between 3 and 51."""
    k = max(3, min(51, n // 25))
    return k if k % 2 else k + 1


def rolling_median(y: np.ndarray, k: int) -> np.ndarray:
    """Centered rolling median with the window shrinking at the edges."""
    n, h = len(y), k // 2
    if n == 0 or k <= 1:
        return y.copy()
    pad = np.concatenate([np.full(h, np.nan), y, np.full(h, np.nan)])
    win = np.lib.stride_tricks.sliding_window_view(pad, k)
    return np.nanmedian(win, axis=1)


def runs(mask: np.ndarray, max_gap: int = 0) -> list[tuple[int, int]]:
    """(first, last) index of the runs of True, merging runs separated by at most max_gap False."""
    idx = np.flatnonzero(mask)
    if not len(idx):
        return []
    out = [[int(idx[0]), int(idx[0])]]
    for i in idx[1:]:
        if i - out[-1][1] - 1 <= max_gap:
            out[-1][1] = int(i)
        else:
            out.append([int(i), int(i)])
    return [(a, b) for a, b in out]


def train_trend_at(c: Curves, at_steps: np.ndarray, half: int) -> np.ndarray:
    """Training loss around each given step: median of the training points within +-half steps."""
    out = np.full(len(at_steps), np.nan)
    for j, s in enumerate(at_steps):
        lo, hi = np.searchsorted(c.steps, s - half), np.searchsorted(c.steps, s + half, side="right")
        if hi > lo:
            out[j] = np.median(c.loss[lo:hi])
    return out


def val_half_window(c: Curves) -> int:
    """Half the usual distance between validations, in steps (2 to 25): the training points around one."""
    if len(c.vsteps) < 2:
        return 2
    return max(2, min(25, int(np.median(np.diff(c.vsteps))) // 2))
