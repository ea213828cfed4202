"""Synthetic training records for the diagnosis and report tests: realistic healthy curves and ones with a
pattern injected at a known step.

The loss model: progress is the cumulative learning rate S(t) (so warmup starts slowly and a decayed
schedule slows down), loss = floor + b (1 + S/tau)^-alpha + c lr(t)/lr_max (the last term is the noise
floor that annealing removes: the drop at the end of a cosine schedule), times (1 + sigma eps) batch noise.
Validation follows the noise-free training curve plus a small generalization gap.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

VOCAB = 32000
LN_V = math.log(VOCAB)


def lr_schedule(n: int, kind: str = "cosine", warmup: int = 0, lr: float = 3e-4, min_lr: float = 3e-5) -> np.ndarray:
    t = np.arange(1, n + 1, dtype=float)
    out = np.empty(n)
    for i, s in enumerate(t):
        if warmup and s <= warmup:
            out[i] = lr * s / warmup
        elif kind == "constant":
            out[i] = lr
        else:
            p = (s - warmup) / max(1, n - warmup)
            out[i] = min_lr + (lr - min_lr) * 0.5 * (1 + math.cos(math.pi * min(p, 1.0)))
    return out


def trend(n: int, *, kind: str = "cosine", warmup: int = 0, start: float = LN_V + 0.3, floor: float = 2.0,
          tau: float | None = None, alpha: float = 0.45, anneal: float = 0.25) -> tuple[np.ndarray, np.ndarray]:
    """(noise-free loss, lr) of a healthy run of n steps."""
    lr = lr_schedule(n, kind, warmup)
    S = np.concatenate([[0.0], np.cumsum(lr / lr.max())[:-1]])   # the loss of step t is taken before its update
    tau = tau if tau is not None else max(1.0, n / 150)
    b = start - floor - anneal
    loss = floor + b * (1 + S / tau) ** -alpha + anneal * lr / lr.max()
    return loss, lr


def noisy(loss: np.ndarray, sigma: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return loss * (1 + sigma * rng.standard_normal(len(loss)))


def rows_from(loss: np.ndarray, lr: np.ndarray, *, val: np.ndarray | None = None, val_every: int = 0,
              tokens_per_step: int = 4096, grad_norm: np.ndarray | None = None, seed: int = 0,
              sources: tuple[str, ...] = (), extra: dict[str, np.ndarray] | None = None) -> list[dict]:
    """metrics.jsonl rows as train/loop/metrics.py writes them; val rows every val_every steps (and the last)."""
    n = len(loss)
    rng = np.random.default_rng(seed + 1)
    # Gradient norms fall from ~2.3 to 0.3 with 5% log-normal noise; the trainer's spike rule judges them too
    # (train/monitor/spike_rule.py), so a healthy fixture must not carry the 2-3x jumps of a real blow-up.
    gn = grad_norm if grad_norm is not None else (0.3 + 2.0 * np.exp(-np.arange(n) / max(1, n / 20))) \
        * np.exp(0.05 * rng.standard_normal(n))
    rows = []
    for i in range(n):
        step = i + 1
        r = {"kind": "train", "step": step, "tokens": step * tokens_per_step, "loss": float(loss[i]),
             "lr": float(lr[i]), "grad_norm": float(gn[i]), "tokens_per_s": 52000.0 + 800 * rng.standard_normal(),
             "mfu": None, "step_s": tokens_per_step / 52000.0, "time": 1.7e9 + step, "samples_consumed": step * 16}
        for k, arr in (extra or {}).items():
            r[k] = float(arr[i])
        rows.append(r)
        if val is not None and val_every and (step % val_every == 0 or step == n):
            v = {"kind": "val", "step": step, "tokens": step * tokens_per_step, "val_loss": float(val[i])}
            for j, s in enumerate(sources):
                v[f"val_loss_{s}"] = float(val[i] * (1 + 0.08 * (j - (len(sources) - 1) / 2)))
            v["time"] = 1.7e9 + step + 0.5
            rows.append(v)
    return rows


def healthy(n: int, *, sigma: float = 0.01, seed: int = 0, val_every: int = 0, val_sigma: float = 0.002,
            **kw) -> tuple[list[dict], np.ndarray]:
    """(rows, noise-free loss) of a healthy run."""
    base, lr = trend(n, **kw)
    val = base + 0.05 + val_sigma * base * np.random.default_rng(seed + 7).standard_normal(n)
    return rows_from(noisy(base, sigma, seed), lr, val=val, val_every=val_every, seed=seed), base


def write_run(run: Path, rows: list[dict], *, vocab_size: int | None = VOCAB, torn: bool = False) -> Path:
    """A run directory holding metrics.jsonl (and a minimal config.json when vocab_size is given)."""
    run.mkdir(parents=True, exist_ok=True)
    with open(run / "metrics.jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
        if torn:
            f.write('{"kind": "train", "step": 99999, "loss": 3.')
    if vocab_size:
        (run / "config.json").write_text(json.dumps({
            "config": {"model": {"n_layers": 2, "d_model": 64, "n_heads": 2, "vocab_size": None}},
            "model": {"vocab_size": vocab_size, "n_layers": 2, "d_model": 64, "n_heads": 2, "n_kv_heads": 2,
                      "ffn_hidden": 192, "max_seq_len": 64, "vocab_multiple": 64},
            "seq_len": 64, "vocab_size": vocab_size, "tokens_per_step": 4096}))
    return run
