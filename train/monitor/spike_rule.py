"""The one rule that calls a training step a loss spike, used live by the trainer (train/monitor/spike.py, which
may skip the update or roll back) and afterwards by the diagnosis (train/record/diagnose/kinds/spike.py, which
replays a logged curve through the same detector), so the two agree on the same curve.

A step is judged against the *accepted* steps before it (a spike never enters its own baseline, nor any later
one): its loss, and its gradient norm before clipping, each get a robust z-score (value - baseline) / noise,
where the baseline is the median of the last ``BASELINE`` accepted values (it follows the trend of a falling
loss) and the noise is the MAD of the step-to-step differences over the last ``window`` accepted values,
x 1.4826 / sqrt 2 (the noise of one value; differencing removes the trend, which a MAD of the raw values would
count as noise: early in a run that hides a 70% jump). A spike is a z above ``loss_z`` (or ``grad_norm_z``)
that is also ``min_rel`` above the baseline (on a very smooth curve the noise is tiny), or any non-finite value.
Nothing is judged before ``min_history`` accepted steps. Only rises count. numpy only: the diagnosis runs
without torch.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

MAD_TO_SIGMA = 1.4826            # MAD x this = standard deviation for Gaussian noise
BASELINE = 7                     # accepted values whose median is the baseline


@dataclass
class Judgement:
    spike: bool
    loss: float
    grad_norm: float | None
    loss_z: float | None = None
    grad_norm_z: float | None = None
    reason: str = ""
    update_applied_by_deepspeed: bool = True     # False: DeepSpeed itself skipped (non-finite norm)
    loss_baseline: float | None = None           # the median the loss was compared with
    loss_noise: float | None = None              # the noise sigma that scaled its z

    def to_dict(self) -> dict:
        d = asdict(self)
        return {k: (v if not isinstance(v, float) or math.isfinite(v) else str(v)) for k, v in d.items()}


class SpikeDetector:
    def __init__(self, window: int = 50, min_history: int = 20, loss_z: float = 6.0, grad_norm_z: float = 8.0,
                 min_rel: float = 0.1):
        self.window, self.min_history = window, min_history
        self.loss_z, self.grad_norm_z, self.min_rel = loss_z, grad_norm_z, min_rel
        self.loss_hist: list[float] = []
        self.gn_hist: list[float] = []

    @classmethod
    def from_config(cls, t) -> "SpikeDetector":
        """From the trainer config's ``train`` section (or anything with its spike_* attributes)."""
        return cls(t.spike_window, t.spike_min_history, t.spike_loss_z, t.spike_grad_norm_z, t.spike_min_rel)

    def _score(self, x: float, hist: list[float]) -> tuple[float | None, bool, float, float]:
        """(robust z of x against hist, whether x is min_rel above the baseline, baseline, noise)."""
        if len(hist) < self.min_history:
            return None, False, math.nan, math.nan
        h = np.asarray(hist[-self.window:], dtype=np.float64)
        base = float(np.median(h[-BASELINE:]))
        d = np.diff(h)
        noise = MAD_TO_SIGMA * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2.0)
        noise = max(noise, 1e-12 * max(abs(base), 1.0))
        return (x - base) / noise, x > base * (1.0 + self.min_rel), base, noise

    def judge(self, loss: float, grad_norm: float | None) -> Judgement:
        j = Judgement(False, loss, grad_norm)
        if not math.isfinite(loss) or (grad_norm is not None and not math.isfinite(grad_norm)):
            j.spike, j.reason = True, "non-finite " + ("loss" if not math.isfinite(loss) else "gradient norm")
            return j
        j.loss_z, loss_over, base, noise = self._score(loss, self.loss_hist)
        if j.loss_z is not None:
            j.loss_baseline, j.loss_noise = base, noise
        gn_over = False
        if grad_norm is not None:
            j.grad_norm_z, gn_over, _, _ = self._score(grad_norm, self.gn_hist)
        why = []
        if self.loss_z and j.loss_z is not None and j.loss_z > self.loss_z and loss_over:
            why.append(f"loss z {j.loss_z:.1f} > {self.loss_z:g}")
        if self.grad_norm_z and j.grad_norm_z is not None and j.grad_norm_z > self.grad_norm_z and gn_over:
            why.append(f"grad_norm z {j.grad_norm_z:.1f} > {self.grad_norm_z:g}")
        if why:
            j.spike, j.reason = True, "; ".join(why)
            return j
        self.loss_hist = (self.loss_hist + [loss])[-self.window:]
        if grad_norm is not None:
            self.gn_hist = (self.gn_hist + [grad_norm])[-self.window:]
        return j

    def state(self) -> dict:
        return {"loss": list(self.loss_hist), "grad_norm": list(self.gn_hist)}

    def load(self, state: dict | None) -> None:
        state = state or {}
        self.loss_hist = [float(x) for x in state.get("loss", [])][-self.window:]
        self.gn_hist = [float(x) for x in state.get("grad_norm", [])][-self.window:]
