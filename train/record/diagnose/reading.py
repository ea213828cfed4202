"""The reading: a few plain sentences of what the curves did, findings or not."""
from __future__ import annotations

import math

import numpy as np

from train.record.diagnose.curves import Curves, train_trend_at, val_half_window
from train.record.load import finite, num


def reading(c: Curves, manifest: dict | None) -> list[str]:
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
            tr = train_trend_at(c, c.vsteps[-1:], val_half_window(c))[0]
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
