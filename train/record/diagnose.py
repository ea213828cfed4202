"""Diagnosis of a run's loss curves: findings with the numbers behind them and what to do.

``diagnose(rows, vocab_size=None, cfg=DiagnoseConfig())`` takes ``metrics.jsonl`` rows (``load_metrics``)
and returns findings, each with ``kind``, ``step`` (where it starts), ``end_step``, ``severity``
(info | warning | critical), ``evidence`` (a dict of numbers), ``message`` and ``advice``. One small
detector per kind:

- ``spike``       loss far above the median of the points before it (robust z-score over a window);
- ``divergence``  a non-finite loss, or the smoothed loss sustained well above its running minimum;
- ``plateau``     a fast early drop, then a long flat stretch (above ``expected_floor`` when one is given);
- ``stalled``     a long flat stretch that is not a plateau: training loss, and validation loss where
                  there is some, not improving;
- ``overfitting`` validation loss rising from its minimum while training loss keeps falling;
- ``val_noisy``   validation loss fluctuating far more than the (smooth) training loss;
- ``low_initial_loss``  the first losses far below ln(vocabulary size), which an untrained model scores;
- ``memorization`` training loss far below validation and the gap growing, validation not rising (yet):
                  the model learns its training text by heart (repeated data), the early sign of overfitting;
- ``epochs_beyond_plan``  more tokens trained than the manifest planned, so its sources repeat more often
                  than the mixture decided (needs the run's manifest.json).

``assess(...)`` returns the findings and, beside them, the checks it could not judge and why (too few
validation points, no vocabulary size, no manifest): "no findings" then means no findings among what could
be judged, and the output says which checks those were.

Curves are judged in points (logged rows), not in step units, so gaps in the steps do not matter. Every
threshold is a field of ``DiagnoseConfig`` with its default and the reason for it; the CLI exposes the main
ones. Thresholds are set so that realistic healthy curves (power-law decay with noise, warmup then decay,
the end of a cosine schedule, noisy small-batch curves, runs of 20 to 5,000 steps) give no finding:
``tests/train/record/test_diagnose.py`` holds both sides.

    glassbox diagnose RUN [--json] [--format F] [--tags FIELD=TAG,...] [--vocab-size N] [--spike-z Z]
                                 [--floor NATS]

RUN is any trainer's record that train/record/formats.py reads: this project's run directory, a JSON-lines
file, a Hugging Face trainer_state.json (or its output directory), TensorBoard event files, a CSV.

Exit status: 0 with or without findings (a finding is not an error), 2 when there is nothing to read.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from dataclasses import dataclass, field

import numpy as np

from glassbox.schema import ConfigError, setting, validate
from train.monitor.spike_rule import BASELINE, MAD_TO_SIGMA, SpikeDetector
from train.record.formats import read_run
from train.record.load import RecordError, finish_rows, finite, load_metrics, num, split_rows

SEVERITIES = ("info", "warning", "critical")


@dataclass
class DiagnoseConfig:
    """Detector thresholds. Relative thresholds are shares of the loss level at that point."""
    # spike: the trainer's own rule (train/monitor/spike_rule.py), replayed over the curve, with the trainer's
    # defaults; a Glassbox run's config.json settings (train.spike_*) replace them, so the diagnosis calls
    # exactly the steps spikes that the live monitor did (or would have, with on_spike: off).
    spike_z: float = setting(6.0, ge=0)             # robust z of the loss above the accepted steps before it
    spike_grad_norm_z: float = setting(8.0, ge=0)   # the same for the gradient norm where the record has one; 0 = not
                                                    # used
    spike_window: int = setting(50, ge=2)           # accepted points whose step-to-step differences give the noise
                                                    # (MAD)
    spike_min_history: int = setting(20, ge=1)      # fewer accepted points before it: not judged (noise unknown)
    spike_min_rel: float = setting(0.1, ge=0)       # and 10% above the baseline: on a very smooth curve the noise is
                                                    # tiny
    spike_from_run: bool = True        # take a Glassbox run's own train.spike_* settings (off: the values here)
    spike_critical_rel: float = setting(0.5, gt=0)  # critical: a jump of 50% or more, or no recovery in the next
                                                    # points;
    spike_info_rel: float = setting(0.15, ge=0)     # info: one point under 15% that recovers at once (heavy-tailed
                                                    # batch noise does that now and then); else warning
    # divergence: a non-finite loss, or the smoothed loss sustained above its running minimum.
    divergence_rise: float = setting(0.10, gt=0)    # 10% above the lowest smoothed loss so far ...
    divergence_noise_k: float = setting(5.0, ge=0)  # ... and 5 noise sigmas of the smoothed curve (noisy small
                                                    # batches)
    divergence_min_frac: float = setting(0.05, gt=0, le=1)  # sustained for 5% of the run's points ...
    divergence_min_points: int = setting(5, ge=1)   # ... and at least this many (a spike that recovers is not one)
    # plateau / stalled: a stretch of at least flat_min_frac of the run that does not improve.
    flat_min_frac: float = setting(0.30, gt=0, le=1)  # a third of a run not improving is long; healthy power-law curves
                                                    # still lose several % over their last third
    flat_min_points: int = setting(8, ge=2)
    flat_tol: float = setting(0.01, ge=0)           # flat: |change| + flat_se_margin standard errors below 1% of the
    flat_se_margin: float = setting(1.0, ge=0)      # level (a noisy curve has to prove it is flat), and the
    flat_range: float = setting(0.03, ge=0)         # smoothed loss within 3% of the level across the stretch
    plateau_early_drop: float = setting(0.20, ge=0, le=1)  # plateau: the loss had already fallen 20% from its start ...
    plateau_max_start: float = setting(0.50, gt=0, le=1)  # ... and the flat stretch starts in the first half of the run
    expected_floor: float | None = setting(None, ge=0)# nats; flat within floor_gap of it = converged, not a finding
    floor_gap: float = setting(0.3, ge=0)
    # overfitting: validation rises from its minimum while training falls.
    overfit_min_rise: float = setting(0.02, ge=0)   # validation 2% above its minimum at the end ...
    overfit_noise_k: float = setting(3.0, ge=0)     # ... and 3 sigmas of its point-to-point noise
    overfit_min_points: int = setting(3, ge=1)      # validation points after the minimum
    overfit_rising_share: float = setting(0.6, ge=0, le=1)  # share of rising steps among the validations
                                                    # after the minimum
    overfit_train_drop: float = setting(0.01, ge=0) # training loss 1% lower at the end than at the validation minimum
    # val_noisy: validation noise (beyond the training trend) against training noise.
    val_noisy_ratio: float = setting(3.0, gt=0)     # validation sigma 3x the per-step training sigma ...
    val_noisy_min_rel: float = setting(0.01, ge=0)  # ... and 1% of the validation level (else a smooth curve's
                                                    # crumbs)
    val_noisy_warn_rel: float = setting(0.05, ge=0) # 5% of the level: a warning (it hides the 1% a data change moves)
    val_min_points: int = setting(6, ge=2)          # validations needed to judge val_noisy and overfitting
    # low_initial_loss: an untrained model scores about ln(vocab) (more with a wide initialisation).
    low_initial_gap_rel: float = setting(0.25, ge=0)  # the first losses 25% of ln(vocab) below it ...
    low_initial_gap_min: float = setting(1.0, ge=0) # ... and at least 1 nat below it
    low_initial_max_first_step: int = setting(10, ge=1)  # a record starting later has no initial loss to judge
    # memorization: the gap between validation and the training loss at the same steps, large and growing.
    memo_min_points: int = setting(3, ge=2)         # validations needed: a gap that opens by nats shows with a few
                                                    # points
    memo_gap_rel: float = setting(0.10, ge=0)       # at the end, training 10% of the validation loss below it ...
    memo_gap_min: float = setting(0.10, ge=0)       # ... and at least 0.1 nats (healthy single-pass runs: gap about
                                                    # 0)
    memo_growth_rel: float = setting(0.5, ge=0, le=1)  # growing: at least half of the end gap opened since its smallest
                                                    # point
    memo_rising_share: float = setting(0.6, ge=0, le=1)  # share of widening steps after that point
    memo_noise_k: float = setting(3.0, ge=0)        # and the growth 3 sigmas of the gap's point-to-point noise
    memo_warning_rel: float = setting(0.20, ge=0)   # severity: info below a 20% gap, warning up to 40%, critical
                                                    # beyond
    memo_critical_rel: float = setting(0.40, ge=0)
    # epochs_beyond_plan: tokens trained against the manifest's total_tokens.
    epochs_tol: float = setting(0.05, ge=0)         # more than 5% past the plan

    def check(self) -> str | None:
        if self.spike_info_rel > self.spike_critical_rel:
            return (f"spike_info_rel: {self.spike_info_rel:g} is above spike_critical_rel {self.spike_critical_rel:g}; "
                    "info is for the smaller jumps")
        if self.memo_warning_rel > self.memo_critical_rel:
            return (f"memo_warning_rel: {self.memo_warning_rel:g} is above memo_critical_rel "
                    f"{self.memo_critical_rel:g}; the warning band lies below the critical one")
        return None


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
                "message": self.message, "evidence": {k: _json_num(v) for k, v in self.evidence.items()},
                "advice": self.advice}


ADVICE = {
    "spike": "Likely a bad batch, a gradient blow-up or a learning-rate jump: look at the batch of that step "
             "(data_order locates it), the grad norm and the lr; if the loss does not come back, roll back to "
             "the checkpoint before the spike and skip or fix that data.",
    "divergence": "Lower the learning rate (or lengthen warmup, tighten grad clipping) and restore the last "
                  "checkpoint before the rise; a non-finite loss also calls for bf16/z-loss checks.",
    "plateau": "Learning rate likely too high (try it lower, or a longer warmup) or too little diversity in the "
               "data (check the mixture, duplication and repetition epochs).",
    "stalled": "Neither loss is improving: check the learning rate (too low, or decayed already), noise in the "
               "data, and whether the model has the capacity for more.",
    "overfitting": "Validation rises while training falls: more (or less repeated) data, more regularization "
                   "(weight decay, dropout), or stop earlier / keep the checkpoint at the validation minimum.",
    "val_noisy": "Validation is much noisier than training: the validation set is likely too small or "
                 "unbalanced across sources; raise eval.samples_per_source or check the per-source losses.",
    "low_initial_loss": "An untrained model should score about ln(vocabulary size): check for train/validation "
                        "leakage or heavy duplication (overlap between held-out and training documents), or "
                        "a wrong vocabulary size.",
    "memorization": "The model is learning its training text by heart: it sees the same tokens again and again. "
                    "Train on more data (or fewer passes over it: fewer steps, a smaller batch), deduplicate, "
                    "or keep the checkpoint where validation was best; validation will turn up next.",
    "epochs_beyond_plan": "The run trained past the manifest's token plan, so its sources repeat more often than "
                          "the mixture decided (max_epochs). Add data, stop at the planned step, or build a "
                          "manifest whose total_tokens covers this run (make mix with total_tokens).",
}


def _json_num(v):
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return v if math.isfinite(v) else str(v)
    if isinstance(v, np.integer):
        return int(v)
    return v


# ----------------------------------------------------------------------------------------------- helpers

def _robust_sigma(x: np.ndarray) -> float:
    """Standard deviation of Gaussian noise from the median absolute deviation (0 for < 2 points)."""
    if len(x) < 2:
        return 0.0
    return float(MAD_TO_SIGMA * np.median(np.abs(x - np.median(x))))


def _point_noise(y: np.ndarray) -> float:
    """Point-to-point noise sigma of a curve: robust sigma of second differences / sqrt 6 (a linear trend
    cancels, so a falling loss does not count as noise)."""
    if len(y) < 4:
        return 0.0
    return _robust_sigma(np.diff(y, 2)) / math.sqrt(6)


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


def _runs(mask: np.ndarray, max_gap: int = 0) -> list[tuple[int, int]]:
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


def _window_fits(y: np.ndarray, L: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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


@dataclass
class _Curves:
    steps: np.ndarray          # train steps with a finite loss
    loss: np.ndarray
    vsteps: np.ndarray         # val steps with a finite val_loss
    vloss: np.ndarray
    train: list[dict]
    val: list[dict]


def _prepare(rows: list[dict]) -> _Curves:
    # The last row per (kind, step) wins, sorted by step; rows without a kind mapped as the loader does
    # (train/record/load.py), so rows handed in directly (the trainer's own list) are read alike.
    clean, _ = finish_rows(rows)
    train, val = split_rows(clean)
    st = [(r["step"], finite(r.get("loss"))) for r in train]
    st = [(s, v) for s, v in st if v is not None]
    vs = [(r["step"], finite(r.get("val_loss"))) for r in val]
    vs = [(s, v) for s, v in vs if v is not None]
    return _Curves(np.array([s for s, _ in st], dtype=int), np.array([v for _, v in st], dtype=float),
                   np.array([s for s, _ in vs], dtype=int), np.array([v for _, v in vs], dtype=float),
                   train, val)


# --------------------------------------------------------------------------------------------- detectors

def detect_nonfinite(c: _Curves, cfg: DiagnoseConfig) -> list[Finding]:
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
                           ev, ADVICE["divergence"]))
    return out


def spike_detector(cfg: DiagnoseConfig) -> SpikeDetector:
    return SpikeDetector(window=cfg.spike_window, min_history=cfg.spike_min_history, loss_z=cfg.spike_z,
                         grad_norm_z=cfg.spike_grad_norm_z, min_rel=cfg.spike_min_rel)


def detect_spikes(c: _Curves, cfg: DiagnoseConfig) -> list[Finding]:
    """Replay the training rows through the live monitor's detector: the same decision on every step. A
    non-finite loss is the divergence finding's (detect_nonfinite), so only finite points are replayed."""
    y, steps, n = c.loss, c.steps, len(c.loss)
    if n <= cfg.spike_min_history:
        return []
    gn_by_step = {r["step"]: finite(r.get("grad_norm")) for r in c.train}
    lr_by_step = {r["step"]: finite(r.get("lr")) for r in c.train}
    det = spike_detector(cfg)
    judged = [det.judge(float(v), gn_by_step.get(int(s))) for s, v in zip(steps, y)]
    flagged = np.array([j.spike for j in judged])
    z = np.array([j.loss_z if j.loss_z is not None else -np.inf for j in judged])
    base = np.array([j.loss_baseline if j.loss_baseline is not None else np.nan for j in judged])
    noise = np.array([j.loss_noise if j.loss_noise is not None else np.nan for j in judged])
    with np.errstate(all="ignore"):
        rel = np.where(base > 0, y / np.where(base > 0, base, 1.0) - 1.0, 0.0)
    out = []
    for a, b in _runs(flagged, max_gap=2):
        peak = a + int(np.argmax(np.where(flagged[a:b + 1], np.nan_to_num(z[a:b + 1], neginf=-1e300), -np.inf)))
        lrs = [lr_by_step.get(int(s)) for s in steps[max(0, a - 1):b + 1]]
        if _warmup_grad_norm_only(judged[a:b + 1], rel[a:b + 1], lrs, cfg):
            continue
        ev = {"loss": y[peak], "rolling_median": base[peak], "noise_sigma": noise[peak],
              "mad": noise[peak] * math.sqrt(2.0) / MAD_TO_SIGMA, "z": z[peak], "jump_rel": rel[peak],
              "points": int(flagged[a:b + 1].sum())}
        if judged[peak].grad_norm_z is not None:
            ev["grad_norm_z"] = judged[peak].grad_norm_z
        s0 = int(steps[a])
        for key, by in (("lr", lr_by_step), ("grad_norm", gn_by_step)):
            if by.get(s0) is not None:
                ev[key] = by[s0]
                prev = [by.get(int(s)) for s in steps[max(0, a - cfg.spike_window):a]]
                prev = [v for v in prev if v is not None]
                if prev:
                    ev[key + "_median_before"] = float(np.median(prev))
        after = y[b + 1:b + 1 + BASELINE]
        ref = base[a] if np.isfinite(base[a]) else base[peak]
        recovered = len(after) > 0 and float(np.median(after)) <= ref * (1 + cfg.spike_min_rel)
        ev["recovered"] = int(recovered)
        if rel[peak] >= cfg.spike_critical_rel or not recovered:
            sev = "critical"
        elif rel[peak] < cfg.spike_info_rel and b == a:
            sev = "info"
        else:
            sev = "warning"
        at = int(steps[peak])
        if np.isfinite(z[peak]) and "loss z" in judged[peak].reason:
            what = (f"loss {y[peak]:.4g} at step {at} is {z[peak]:.1f} noise sigmas ({rel[peak]:+.0%}) above the "
                    f"median {base[peak]:.4g} of the accepted points just before")
        elif judged[peak].grad_norm_z is not None and gn_by_step.get(at) is not None:
            # the gradient norm tripped the rule, not the loss: say so rather than quote the loss's own z
            gn_before = [gn_by_step.get(int(s)) for s in steps[max(0, peak - cfg.spike_window):peak]]
            gn_before = [v for v in gn_before if v is not None]
            what = (f"gradient norm {gn_by_step[at]:.4g} at step {at} is {judged[peak].grad_norm_z:.1f} noise sigmas "
                    f"above its median {float(np.median(gn_before)) if gn_before else float('nan'):.4g} just before "
                    f"(loss {y[peak]:.4g}, {rel[peak]:+.0%} against its median)")
        else:
            what = f"step {at}: {judged[peak].reason}"
        out.append(Finding("spike", s0, int(steps[b]), sev, what, ev, ADVICE["spike"]))
    return out


def _warmup_grad_norm_only(judged, rel, lrs, cfg: DiagnoseConfig) -> bool:
    """A stretch the gradient norm alone tripped while the learning rate was still rising, with the loss
    under spike_min_rel above its baseline: warm-up moves the gradient norm on healthy runs, so that is no
    spike unless the loss moves too."""
    lrs = [v for v in lrs if v is not None]
    rising = len(lrs) >= 2 and all(b > a for a, b in zip(lrs, lrs[1:]))
    grad_norm_only = all(j.reason.startswith("grad_norm z") for j in judged if j.spike)
    return rising and grad_norm_only and float(np.max(rel)) < cfg.spike_min_rel


def detect_divergence(c: _Curves, cfg: DiagnoseConfig) -> list[Finding]:
    y, steps, n = c.loss, c.steps, len(c.loss)
    min_len = max(cfg.divergence_min_points, math.ceil(cfg.divergence_min_frac * n))
    if n < min_len + 3:
        return []
    k = smooth_window(n)
    s = rolling_median(y, k)
    sigma_s = 1.2533 * _point_noise(y) / math.sqrt(k)       # sigma of a median of k noisy points
    m = np.minimum.accumulate(s)
    thresh = np.maximum(cfg.divergence_rise * np.abs(m), cfg.divergence_noise_k * sigma_s)
    elevated = (s - m) > thresh
    out = []
    for a, b in _runs(elevated, max_gap=min_len):
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
                           + ("" if recovered else ", to the end of the record"), ev, ADVICE["divergence"]))
    return out


def _flat_stretches(y: np.ndarray, cfg: DiagnoseConfig) -> list[tuple[int, int, float]]:
    """(first, last, level) of stretches of at least flat_min_frac of the points that do not improve."""
    n = len(y)
    L = max(cfg.flat_min_points, math.ceil(cfg.flat_min_frac * n))
    if n < L or L < 4:
        return []
    change, se, mean = _window_fits(y, L)
    s = rolling_median(y, smooth_window(n))
    win = np.lib.stride_tricks.sliding_window_view(s, L)
    spread = win.max(axis=1) - win.min(axis=1)
    level = np.abs(mean)
    flat = (np.abs(change) + cfg.flat_se_margin * se < cfg.flat_tol * level) & (spread < cfg.flat_range * level)
    spans: list[list[int]] = []
    for a, b in _runs(flat):                 # windows flat from a..b cover a .. b+L-1; merge overlaps
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


def detect_flat(c: _Curves, cfg: DiagnoseConfig) -> list[Finding]:
    """plateau (after a fast early drop, early in the run) or stalled (any other flat stretch)."""
    y, steps, n = c.loss, c.steps, len(c.loss)
    out = []
    initial = float(np.median(y[:3])) if n else float("nan")
    for a, b, level in _flat_stretches(y, cfg):
        if cfg.expected_floor is not None and level - cfg.expected_floor < cfg.floor_gap:
            continue                                          # flat at the floor: converged
        drop = (initial - level) / initial if initial > 0 else 0.0
        ev = {"level": level, "initial_loss": initial, "drop_before_rel": drop,
              "first_loss": float(np.median(y[a:a + 3])), "last_loss": float(np.median(y[max(a, b - 2):b + 1])),
              "points": b - a + 1, "share_of_run": (b - a + 1) / n}
        change = ev["last_loss"] - ev["first_loss"]
        if cfg.expected_floor is not None:
            ev["expected_floor"] = cfg.expected_floor
        if drop >= cfg.plateau_early_drop and a <= cfg.plateau_max_start * n:
            out.append(Finding("plateau", int(steps[a]), int(steps[b]), "warning",
                               f"after falling {drop:.0%} from {initial:.4g}, the loss stays flat at about "
                               f"{level:.4g} for {b - a + 1} points ({ev['share_of_run']:.0%} of the run)",
                               ev, ADVICE["plateau"]))
            continue
        # stalled: validation must not be improving over the stretch either, where there is validation.
        vin = (c.vsteps >= steps[a]) & (c.vsteps <= steps[b])
        if vin.sum() >= 3:
            v = c.vloss[vin]
            vchange = float(np.median(v[-2:]) - np.median(v[:2]))
            ev["val_change"] = vchange
            if vchange < -max(cfg.flat_tol * abs(float(np.median(v))), 3 * _point_noise(v)):
                continue
        out.append(Finding("stalled", int(steps[a]), int(steps[b]), "warning",
                           f"the loss stays at about {level:.4g} (change {change:+.3g}) for {b - a + 1} points "
                           f"({ev['share_of_run']:.0%} of the run)"
                           + (" and validation does not improve either" if "val_change" in ev else ""),
                           ev, ADVICE["stalled"]))
    return out


def _train_trend_at(c: _Curves, at_steps: np.ndarray, half: int) -> np.ndarray:
    """Training loss around each given step: median of the training points within +-half steps."""
    out = np.full(len(at_steps), np.nan)
    for j, s in enumerate(at_steps):
        lo, hi = np.searchsorted(c.steps, s - half), np.searchsorted(c.steps, s + half, side="right")
        if hi > lo:
            out[j] = np.median(c.loss[lo:hi])
    return out


def _val_half_window(c: _Curves) -> int:
    if len(c.vsteps) < 2:
        return 2
    return max(2, min(25, int(np.median(np.diff(c.vsteps))) // 2))


def detect_overfitting(c: _Curves, cfg: DiagnoseConfig) -> list[Finding]:
    v, vs = c.vloss, c.vsteps
    if len(v) < cfg.val_min_points or len(c.loss) < 4:
        return []
    sm = rolling_median(v, 3) if len(v) >= 7 else v
    i = int(np.argmin(sm))
    if len(v) - 1 - i < cfg.overfit_min_points:
        return []
    low = float(sm[i])
    tail = float(np.median(v[-3:]))
    rise = tail - low
    half = _val_half_window(c)
    gap = v - _train_trend_at(c, vs, half)                # smooth in healthy and in overfitting runs
    gap = gap[np.isfinite(gap)]
    noise = _robust_sigma(np.diff(gap)) / math.sqrt(2) if len(gap) >= 4 else _point_noise(v)
    rising = float(np.mean(np.diff(v[i:]) > 0))
    tr = _train_trend_at(c, np.array([vs[i], vs[-1]]), half)
    if not np.all(np.isfinite(tr)):
        return []
    train_drop = (tr[0] - tr[1]) / abs(tr[0]) if tr[0] else 0.0
    if (rise >= cfg.overfit_min_rise * abs(low) and rise >= cfg.overfit_noise_k * noise
            and rising >= cfg.overfit_rising_share and train_drop >= cfg.overfit_train_drop):
        ev = {"val_min": low, "val_min_step": int(vs[i]), "val_end": tail, "val_rise": rise,
              "val_rise_rel": rise / abs(low), "val_noise_sigma": noise, "rising_share": rising,
              "train_at_val_min": float(tr[0]), "train_end": float(tr[1]), "train_drop_rel": train_drop,
              "gap_end": tail - float(tr[1])}
        return [Finding("overfitting", int(vs[i]), int(vs[-1]), "warning",
                        f"validation loss rose {rise / abs(low):.1%} from its minimum {low:.4g} (step {int(vs[i])}) "
                        f"while training loss fell {train_drop:.1%}", ev, ADVICE["overfitting"])]
    return []


def detect_val_noisy(c: _Curves, cfg: DiagnoseConfig) -> list[Finding]:
    v, vs = c.vloss, c.vsteps
    if len(v) < cfg.val_min_points or len(c.loss) < 8:
        return []
    trend = _train_trend_at(c, vs, _val_half_window(c))
    ok = np.isfinite(trend)
    if ok.sum() < cfg.val_min_points:
        return []
    v, vs, d = v[ok], vs[ok], v[ok] - trend[ok]              # the generalization gap: smooth when healthy
    dd = np.diff(d)
    sigma_v = _robust_sigma(dd) / math.sqrt(2)
    sigma_t = _point_noise(c.loss)
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
    sigma_from = _robust_sigma(dd[start:]) / math.sqrt(2)
    if max(sigma_v, sigma_from) <= ref:
        return []
    ev = {"val_sigma": max(sigma_v, sigma_from), "train_step_sigma": sigma_t, "ratio": max(sigma_v, sigma_from) /
          sigma_t if sigma_t > 0 else float("inf"), "val_level": level, "threshold": ref, "val_points": len(v)}
    sev = "warning" if ev["val_sigma"] >= cfg.val_noisy_warn_rel * abs(level) else "info"
    return [Finding("val_noisy", int(vs[start]), int(vs[-1]), sev,
                    f"validation loss fluctuates by about {ev['val_sigma']:.3g} between evaluations, "
                    f"against {sigma_t:.3g} step to step for training", ev, ADVICE["val_noisy"])]


def detect_low_initial_loss(c: _Curves, cfg: DiagnoseConfig, vocab_size: int | None) -> list[Finding]:
    if not vocab_size or vocab_size < 2 or not len(c.loss):
        return []
    if c.steps[0] > cfg.low_initial_max_first_step:
        return []
    initial = float(np.max(c.loss[:3]))      # the highest of the first three: the early drop is fast
    ln_v = math.log(vocab_size)
    gap = max(cfg.low_initial_gap_min, cfg.low_initial_gap_rel * ln_v)
    if initial >= ln_v - gap:
        return []
    ev = {"initial_loss": initial, "ln_vocab": ln_v, "vocab_size": vocab_size, "gap": ln_v - initial,
          "threshold_gap": gap, "first_step": int(c.steps[0])}
    return [Finding("low_initial_loss", int(c.steps[0]), int(c.steps[min(2, len(c.steps) - 1)]),
                    "critical" if initial < 0.5 * ln_v else "warning",
                    f"initial loss {initial:.4g} is {ln_v - initial:.3g} nats below ln({vocab_size}) = {ln_v:.4g}",
                    ev, ADVICE["low_initial_loss"])]


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


def detect_memorization(c: _Curves, cfg: DiagnoseConfig) -> list[Finding]:
    """The generalization gap (validation minus the training loss around the same step), large at the end
    and opened mostly since its smallest point."""
    if len(c.vloss) < cfg.memo_min_points or len(c.loss) < 4:
        return []
    trend = _train_trend_at(c, c.vsteps, _val_half_window(c))
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
    noise = _robust_sigma(np.diff(g)) / math.sqrt(2) if len(g) >= 5 else 0.0
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
                    ev, ADVICE["memorization"])]


def detect_epochs_beyond_plan(c: _Curves, cfg: DiagnoseConfig, manifest: dict | None) -> list[Finding]:
    """Tokens trained against the manifest's total_tokens; per source, the passes that makes over its tokens
    (realized share_<source> telemetry where logged, else the manifest's weight)."""
    if not manifest or not c.train:
        return []
    planned = num(manifest.get("total_tokens"))
    sources = manifest.get("sources") if isinstance(manifest.get("sources"), dict) else {}
    tok = [(r["step"], finite(r.get("tokens"))) for r in c.train]
    tok = [(st, t) for st, t in tok if t is not None]
    if not planned or not tok or tok[-1][1] <= planned * (1 + cfg.epochs_tol):
        return []
    trained = tok[-1][1]
    start = next(st for st, t in tok if t > planned)
    last_share = {}
    for r in c.train:
        for name in sources:
            if finite(r.get(f"share_{name}")) is not None:
                last_share[name] = finite(r.get(f"share_{name}"))
    max_epochs = finite(manifest.get("max_epochs"))
    ev: dict = {"planned_tokens": int(planned), "trained_tokens": int(trained), "ratio": trained / planned}
    if max_epochs is not None:
        ev["max_epochs"] = max_epochs
    worst, worst_name = 0.0, None
    for name, src in sorted(sources.items()):
        avail = num((src or {}).get("available_tokens"))
        share = last_share.get(name, num((src or {}).get("weight")))
        if not avail or share is None:
            continue
        ep = trained * share / avail
        ev[f"epochs_{name}"] = ep
        if num(src.get("epochs")) is not None:
            ev[f"planned_epochs_{name}"] = float(src["epochs"])
        if ep > worst:
            worst, worst_name = ep, name
    over_cap = max_epochs is not None and worst > max_epochs * (1 + cfg.epochs_tol)
    msg = (f"trained {trained:,.0f} tokens, {trained / planned:.2g}x the manifest's plan of {planned:,.0f} (step "
           f"{start} on)")
    if worst_name:
        msg += (f": {worst_name} is repeated {worst:.2g} times"
                + (f", past max_epochs {max_epochs:g}" if over_cap else ""))
    return [Finding("epochs_beyond_plan", int(start), int(c.train[-1]["step"]), "warning" if over_cap else "info",
                    msg, ev, ADVICE["epochs_beyond_plan"])]


@dataclass
class Diagnosis:
    """Findings, the checks that could not be judged on this record (``{"check", "reason"}``), and the
    reading: a few plain sentences of what the curves did, findings or not."""
    findings: list[Finding]
    not_judged: list[dict] = field(default_factory=list)
    reading: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"findings": [f.to_dict() for f in self.findings], "not_judged": list(self.not_judged),
                "reading": list(self.reading)}


def _reading(c: _Curves, manifest: dict | None) -> list[str]:
    """What the curves did, in numbers: training and validation from start to end, where validation was
    lowest, the gap at the end, and the tokens trained against the manifest's plan."""
    out = []
    n, nv = len(c.loss), len(c.vloss)
    if n >= 2:
        k = max(1, min(5, n // 10))
        out.append(f"training loss {np.median(c.loss[:k]):.3f} -> {np.median(c.loss[-k:]):.3f} over steps "
                   f"{int(c.steps[0])}-{int(c.steps[-1])}")
    if nv >= 2:
        i = int(np.argmin(c.vloss))
        trend = ("still falling at the last evaluation" if i == nv - 1 else
                 f"lowest {c.vloss[i]:.3f} at step {int(c.vsteps[i])}, {c.vloss[-1] - c.vloss[i]:+.3f} since")
        out.append(f"validation loss {c.vloss[0]:.3f} -> {c.vloss[-1]:.3f} over {nv} evaluations "
                   f"(steps {int(c.vsteps[0])}-{int(c.vsteps[-1])}): {trend}")
        if n >= 4:
            tr = _train_trend_at(c, c.vsteps[-1:], _val_half_window(c))[0]
            if math.isfinite(tr):
                gap = float(c.vloss[-1] - tr)
                out.append(f"validation minus training at the end: {gap:+.3f} nats ({gap / abs(c.vloss[-1]):+.0%})")
    elif nv == 1:
        out.append(f"one validation: {c.vloss[0]:.3f} at step {int(c.vsteps[0])}")
    planned = num((manifest or {}).get("total_tokens"))
    tok = [t for r in c.train if (t := finite(r.get("tokens"))) is not None]
    if planned and tok:
        sources = (manifest or {}).get("sources") or {}
        passes = []
        for name, src in sorted(sources.items()):
            avail, w = num((src or {}).get("available_tokens")), num((src or {}).get("weight"))
            if avail and w is not None:
                passes.append(f"{name} {tok[-1] * w / avail:.2f}")
        out.append(f"tokens trained {tok[-1]:,.0f} = {tok[-1] / planned:.2f}x the manifest's plan of {planned:,.0f}"
                   + (f"; passes over each source's tokens: {', '.join(passes)}" if passes else ""))
    return out


def _not_judged(c: _Curves, cfg: DiagnoseConfig, vocab_size: int | None, manifest: dict | None) -> list[dict]:
    out: list[dict] = []

    def note(checks: str, reason: str) -> None:
        out.append({"check": checks, "reason": reason})

    n, nv = len(c.loss), len(c.vloss)
    if n <= cfg.spike_min_history:
        note("spike", f"{n} training points; more than {cfg.spike_min_history} needed")
    if n < max(cfg.divergence_min_points, math.ceil(cfg.divergence_min_frac * n)) + 3:
        note("divergence (sustained rise)", f"{n} training points; "
             f"{max(cfg.divergence_min_points, math.ceil(cfg.divergence_min_frac * n)) + 3} needed")
    if n < max(cfg.flat_min_points, 4):
        note("plateau, stalled", f"{n} training points; {max(cfg.flat_min_points, 4)} needed")
    more = "; evaluate more often (eval.every) or for longer"
    if nv < cfg.val_min_points:
        note("overfitting, val_noisy", (f"{nv} validation point{'s' * (nv != 1)}; {cfg.val_min_points} needed" if nv
                                        else "no validation loss in the record") + more)
    if nv < cfg.memo_min_points:
        note("memorization", (f"{nv} validation point{'s' * (nv != 1)}; {cfg.memo_min_points} needed" if nv
                              else "no validation loss in the record") + more)
    if not vocab_size:
        note("low_initial_loss", "vocabulary size unknown (no config.json with vocab_size); pass --vocab-size")
    elif n and c.steps[0] > cfg.low_initial_max_first_step:
        note("low_initial_loss", f"the record starts at step {int(c.steps[0])}: no initial loss to judge")
    if not manifest:
        note("epochs_beyond_plan", "no manifest in the record (a Glassbox run directory holds manifest.json)")
    elif not any(finite(r.get("tokens")) is not None for r in c.train):
        note("epochs_beyond_plan", "no token counts in the training rows")
    return out


def assess(rows: list[dict], vocab_size: int | None = None, cfg: DiagnoseConfig | None = None,
           manifest: dict | None = None) -> Diagnosis:
    """Findings about metrics rows (any kinds, any order; the last row per step wins), by step, and the
    checks that could not be judged on them."""
    cfg = cfg or DiagnoseConfig()
    c = _prepare(rows)
    findings = detect_nonfinite(c, cfg)
    findings += detect_spikes(c, cfg)
    div = detect_divergence(c, cfg)
    # A spike inside a divergence is part of it (the rise outruns the baseline of the points before).
    findings = [f for f in findings if not (f.kind == "spike" and any(d.step <= f.step <= d.end_step for d in div))]
    findings += div
    findings += detect_flat(c, cfg)
    over = detect_overfitting(c, cfg)
    findings += over
    if not over:                       # validation rising says more than the gap does: one finding, not two
        findings += detect_memorization(c, cfg)
    findings += detect_val_noisy(c, cfg)
    findings += detect_low_initial_loss(c, cfg, vocab_size)
    findings += detect_epochs_beyond_plan(c, cfg, manifest)
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    findings = sorted(findings, key=lambda f: (f.step, -rank[f.severity], f.kind))
    return Diagnosis(findings, _not_judged(c, cfg, vocab_size, manifest), _reading(c, manifest))


def diagnose(rows: list[dict], vocab_size: int | None = None, cfg: DiagnoseConfig | None = None,
             manifest: dict | None = None) -> list[Finding]:
    """Findings about metrics rows (any kinds, any order; the last row per step wins), by step."""
    return assess(rows, vocab_size, cfg, manifest).findings


# train.spike_* of the trainer config -> the DiagnoseConfig field replaying it
RUN_SPIKE_SETTINGS = {"spike_loss_z": "spike_z", "spike_grad_norm_z": "spike_grad_norm_z",
                      "spike_window": "spike_window", "spike_min_history": "spike_min_history",
                      "spike_min_rel": "spike_min_rel"}


def with_run_spike_settings(cfg: DiagnoseConfig, train: dict | None) -> DiagnoseConfig:
    """The run's own spike rule (the ``train`` section of its plan), so the diagnosis judges as its monitor did."""
    if not cfg.spike_from_run or not isinstance(train, dict):
        return cfg
    given = {ours: train[theirs] for theirs, ours in RUN_SPIKE_SETTINGS.items()
             if isinstance(train.get(theirs), (int, float)) and not isinstance(train.get(theirs), bool)}
    return dataclasses.replace(cfg, **given)


def assess_run(rec, vocab_size: int | None = None, cfg: DiagnoseConfig | None = None) -> Diagnosis:
    """``assess`` on a read record (load.RunRecord): its rows, vocabulary, manifest and spike settings."""
    cfg = with_run_spike_settings(cfg or DiagnoseConfig(), rec.plan.section("train") if rec.plan else None)
    return assess(rec.rows, vocab_size=vocab_size or rec.vocab_size, cfg=cfg, manifest=rec.manifest)


# --------------------------------------------------------------------------------------------------- CLI

def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}" if math.isfinite(v) else str(v)
    return str(v)


def format_not_judged(not_judged: list[dict]) -> str:
    return "\n".join(f"not judged: {n['check']}: {n['reason']}" for n in not_judged)


def format_table(findings: list[Finding], not_judged: list[dict] | None = None) -> str:
    tail = ("\n" + format_not_judged(not_judged)) if not_judged else ""
    if not findings:
        return ("no findings among the checks that could be judged" if not_judged else "no findings") + tail
    head = ("severity", "kind", "steps", "what")
    body = [(f.severity, f.kind, f"{f.step}-{f.end_step}" if f.end_step != f.step else str(f.step), f.message)
            for f in findings]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(3)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head[:3], widths)) + "  " + head[3]]
    for f, r in zip(findings, body):
        lines.append("  ".join(x.ljust(w) for x, w in zip(r[:3], widths)) + "  " + r[3])
        pad = " " * (sum(widths) + 6)
        lines.append(pad + "evidence: " + ", ".join(f"{k}={_fmt(v)}" for k, v in f.evidence.items()))
        lines.append(pad + "advice: " + f.advice)
    return "\n".join(lines) + tail


def add_reader_args(ap: argparse.ArgumentParser) -> None:
    """--format and --tags, shared with glassbox report."""
    from train.record.formats import FORMATS

    ap.add_argument("--format", default="auto", choices=FORMATS,
                    help="how to read RUN (default: decided from the path; train/record/formats.py)")
    ap.add_argument("--tags", default=None, metavar="FIELD=TAG,...",
                    help="TensorBoard: which scalar tag is which field, e.g. loss=train/loss,val_loss=eval/loss "
                         "(fields: loss, val_loss, lr, grad_norm, tokens, val_loss_<source>)")


def parse_args(argv=None) -> argparse.Namespace:
    d = DiagnoseConfig()
    ap = argparse.ArgumentParser(prog="glassbox diagnose", description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="a run directory (or its metrics.jsonl), a JSON-lines or CSV file, a Hugging Face "
                                "trainer_state.json or output directory, or TensorBoard event files")
    ap.add_argument("--json", action="store_true", help="print {findings, not_judged, reading} as JSON")
    add_reader_args(ap)
    ap.add_argument("--vocab-size", type=int, default=None,
                    help="vocabulary size for low_initial_loss (default: the run's config.json)")
    ap.add_argument("--spike-z", type=float, default=None,
                    help=f"robust z of a loss spike (default: the run's train.spike_loss_z, else {d.spike_z})")
    ap.add_argument("--spike-window", type=int, default=None,
                    help=f"accepted points that set the noise (default: the run's train.spike_window, "
                         f"else {d.spike_window})")
    ap.add_argument("--divergence-rise", type=float, default=d.divergence_rise,
                    help=f"relative rise above the running minimum (default {d.divergence_rise})")
    ap.add_argument("--flat-frac", type=float, default=d.flat_min_frac,
                    help=f"share of the run a plateau/stall must last (default {d.flat_min_frac})")
    ap.add_argument("--flat-tol", type=float, default=d.flat_tol,
                    help=f"relative change under which a stretch is flat (default {d.flat_tol})")
    ap.add_argument("--floor", type=float, default=None,
                    help="expected loss floor in nats: flat stretches within 0.3 of it are not findings")
    ap.add_argument("--val-noisy-ratio", type=float, default=d.val_noisy_ratio,
                    help=f"validation/training noise ratio for val_noisy (default {d.val_noisy_ratio})")
    return ap.parse_args(argv)


def config_from_args(a: argparse.Namespace) -> DiagnoseConfig:
    d = DiagnoseConfig()
    spike = {} if a.spike_z is None and a.spike_window is None else {
        "spike_from_run": False, "spike_z": d.spike_z if a.spike_z is None else a.spike_z,
        "spike_window": d.spike_window if a.spike_window is None else a.spike_window}
    return validate(DiagnoseConfig(**spike, divergence_rise=a.divergence_rise,
                                   flat_min_frac=a.flat_frac, flat_tol=a.flat_tol, expected_floor=a.floor,
                                   val_noisy_ratio=a.val_noisy_ratio))


def describe(rec, vocab: int | None) -> str:
    """One line: what was read."""
    from train.record.formats import FORMAT_NAMES

    train, val = rec.train_rows, rec.val_rows
    return (f"{rec.path if rec.format == 'glassbox' else rec.name} ({FORMAT_NAMES.get(rec.format, rec.format)}): "
            f"{len(train)} training rows (steps {train[0]['step'] if train else '-'}-"
            f"{train[-1]['step'] if train else '-'}), {len(val)} validation rows, vocabulary "
            f"{vocab if vocab else 'unknown (low_initial_loss not checked; pass --vocab-size)'}"
            + (f"; {rec.skipped_lines} unreadable lines skipped" if rec.skipped_lines else "")
            + "".join(f"; {n}" for n in rec.notes))


def main(argv=None) -> int:
    a = parse_args(argv)
    try:
        from train.record.formats import parse_tags

        rec = read_run(a.run, a.format, parse_tags(a.tags))
    except RecordError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    vocab = a.vocab_size or rec.vocab_size
    try:
        cfg = config_from_args(a)
    except ConfigError as e:  # a flag out of its range, named by its setting (--flat-frac: flat_min_frac)
        print(f"error: {e}", file=sys.stderr)
        return 2
    result = assess_run(rec, vocab_size=vocab, cfg=cfg)
    if a.json:
        print(json.dumps(result.to_dict(), indent=1))
        return 0
    print(describe(rec, vocab))
    print("".join(f"reading: {line}\n" for line in result.reading) + format_table(result.findings, result.not_judged))
    return 0


__all__ = ["DiagnoseConfig", "Diagnosis", "Finding", "assess", "assess_run", "diagnose", "load_metrics",
           "format_table", "main"]

if __name__ == "__main__":
    sys.exit(main())
