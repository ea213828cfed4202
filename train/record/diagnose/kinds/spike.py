"""spike: the loss (or the gradient norm) far above the accepted steps just before it.

The rule is the trainer's own (train/monitor/spike_rule.py), replayed over the curve with the trainer's
defaults; a Glassbox run's config.json settings (train.spike_*) replace them (``with_run_spike_settings``), so
the diagnosis calls exactly the steps spikes that the live monitor did (or would have, with on_spike: off). A
spike inside a divergence's sustained rise is part of that divergence and not reported on its own.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from train.monitor.spike_rule import BASELINE, MAD_TO_SIGMA, SpikeDetector
from train.record.diagnose.curves import Curves, runs
from train.record.diagnose.finding import Finding
from train.record.diagnose.kind import Facts, Kind
from train.record.diagnose.kinds.divergence import is_sustained_rise
from train.record.diagnose.settings import DiagnoseConfig, SpikeSettings
from train.record.load import finite


ADVICE = ("Likely a bad batch, a gradient blow-up or a learning-rate jump: look at the batch of that step "
          "(data_order locates it), the grad norm and the lr; if the loss does not come back, roll back to "
          "the checkpoint before the spike and skip or fix that data.")

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


def spike_detector(cfg: DiagnoseConfig) -> SpikeDetector:
    return SpikeDetector(window=cfg.spike_window, min_history=cfg.spike_min_history, loss_z=cfg.spike_z,
                         grad_norm_z=cfg.spike_grad_norm_z, min_rel=cfg.spike_min_rel)


def detect(c: Curves, cfg: DiagnoseConfig, facts: Facts) -> list[Finding]:
    """The spikes, less those inside a divergence's sustained rise (the rise outruns the baseline of the points
    before it)."""
    rises = [d for d in facts.found.get("divergence", []) if is_sustained_rise(d)]
    return [f for f in detect_spikes(c, cfg) if not any(d.step <= f.step <= d.end_step for d in rises)]


def detect_spikes(c: Curves, cfg: DiagnoseConfig) -> list[Finding]:
    """Replay the training rows through the live monitor's detector: the same decision on every step. A
    non-finite loss is the divergence finding's (kinds/divergence.py), so only finite points are replayed."""
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
    for a, b in runs(flagged, max_gap=2):
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
        out.append(Finding("spike", s0, int(steps[b]), sev, what, ev, ADVICE))
    return out


def _warmup_grad_norm_only(judged, rel, lrs, cfg: DiagnoseConfig) -> bool:
    """A stretch the gradient norm alone tripped while the learning rate was still rising, with the loss
    under spike_min_rel above its baseline: warm-up moves the gradient norm on healthy runs, so that is no
    spike unless the loss moves too."""
    lrs = [v for v in lrs if v is not None]
    rising = len(lrs) >= 2 and all(b > a for a, b in zip(lrs, lrs[1:]))
    grad_norm_only = all(j.reason.startswith("grad_norm z") for j in judged if j.spike)
    return rising and grad_norm_only and float(np.max(rel)) < cfg.spike_min_rel


def needs(c: Curves, cfg: DiagnoseConfig, facts: Facts) -> str | None:
    n = len(c.loss)
    return f"{n} training points; more than {cfg.spike_min_history} needed" if n <= cfg.spike_min_history else None


KIND = Kind("spike", detect, ADVICE, settings=(SpikeSettings,), needs=needs, after=("divergence",))
