"""Learning-rate schedules: a pure function of the step, so a resumed run needs no scheduler state.

``lr_at(step)`` is the rate used by the update that completes optimizer step ``step + 1``. Warmup rises
linearly from lr/warmup to lr; then

- ``cosine``: half a cosine from lr down to min_lr at the last planned step;
- ``linear``: a straight line from lr down to min_lr;
- ``wsd`` (warmup-stable-decay): lr held until the last ``decay_fraction`` of the steps, then linear to min_lr
  (a run can be extended from the stable phase and decayed later);
- ``constant``: lr after warmup.

Past the planned steps the rate stays at the end value (min_lr, or lr for constant).
"""
from __future__ import annotations

import math


def lr_at(step: int, *, kind: str, lr: float, min_lr: float, warmup_steps: int, total_steps: int,
          decay_fraction: float = 0.2) -> float:
    if warmup_steps and step < warmup_steps:
        return lr * (step + 1) / warmup_steps
    if kind == "constant":
        return lr
    if kind == "wsd":
        decay_start = max(warmup_steps, total_steps - int(round(decay_fraction * total_steps)))
        if step < decay_start:
            return lr
        span = max(1, total_steps - decay_start)
        return lr - (lr - min_lr) * min(1.0, (step - decay_start + 1) / span)
    span = max(1, total_steps - warmup_steps - 1)
    progress = min(1.0, (step - warmup_steps) / span)
    if kind == "linear":
        return lr - (lr - min_lr) * progress
    if kind == "cosine":
        return min_lr + (lr - min_lr) * 0.5 * (1.0 + math.cos(math.pi * progress))
    raise ValueError(f"unknown schedule kind {kind!r}")
