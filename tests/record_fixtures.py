"""Synthetic training records for the diagnosis and report tests: realistic healthy curves and ones with a
pattern injected at a known step (``inject_<kind>(n, seed) -> (rows, step)``), one per kind of finding.

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


# ------------------------------------------------------------------ patterns injected at a known step

def noisy_run(n, seed, sigma=0.01):
    """(noise-free loss, lr, loss with batch noise) of a healthy run of n steps, 5% of them warm-up."""
    base, lr = trend(n, warmup=n // 20)
    return base, lr, noisy(base, sigma, seed)


def inject_spike(n, seed):
    base, lr, y = noisy_run(n, seed)
    t0 = int(0.6 * n)
    y[t0] *= 1.6                      # a bad batch, and half a recovery the step after
    y[t0 + 1] *= 1.2
    return rows_from(y, lr, seed=seed), t0 + 1


def inject_divergence(n, seed):
    base, lr, y = noisy_run(n, seed)
    t0 = int(0.5 * n)
    t = np.arange(n)
    y = y + np.where(t >= t0, 0.8 * base[t0] * np.clip(t - t0, 0, None) / (n - t0), 0.0)
    return rows_from(y, lr, seed=seed), t0 + 1


def inject_nan(n, seed):
    base, lr, y = noisy_run(n, seed)
    t0 = int(0.7 * n)
    y[t0:] = np.nan
    return rows_from(y, lr, seed=seed), t0 + 1


def inject_plateau(n, seed):
    base, lr = trend(n, kind="constant", tau=n / 200, alpha=0.6)
    t0 = int(0.2 * n)
    b = base.copy()
    b[t0:] = base[t0]
    return rows_from(noisy(b, 0.01, seed), lr, val=b + 0.05, val_every=max(1, n // 25), seed=seed), t0 + 1


def inject_overfitting(n, seed):
    base, lr, y = noisy_run(n, seed)
    t0 = int(0.5 * n)
    t = np.arange(n)
    val = np.where(t < t0, base, base[t0] + 0.3 * (t - t0) / (n - t0)) + 0.05 \
        + 0.002 * np.random.default_rng(seed).standard_normal(n)
    return rows_from(y, lr, val=val, val_every=max(1, n // 40), seed=seed), t0 + 1


def inject_val_noisy(n, seed):
    base, lr, y = noisy_run(n, seed)
    t0 = int(0.3 * n)
    t = np.arange(n)
    val = base + 0.05 + np.where(t >= t0, 0.06 * base * np.random.default_rng(seed + 3).standard_normal(n), 0.0)
    return rows_from(y, lr, val=val, val_every=max(1, n // 40), seed=seed), t0 + 1


def inject_low_initial_loss(n, seed):
    base, lr = trend(n, warmup=n // 20, start=5.0, floor=1.0)      # starts 5.4 nats below ln(32000)
    return rows_from(noisy(base, 0.01, seed), lr, seed=seed), 1


def inject_stalled_late(n, seed):
    base, lr = trend(n, warmup=n // 20, kind="constant")
    t0 = int(0.6 * n)
    b = base.copy()
    b[t0:] = base[t0]
    return rows_from(noisy(b, 0.01, seed), lr, val=b + 0.05, val_every=max(1, n // 25), seed=seed), t0 + 1


def inject_stalled_from_start(n, seed):
    b = np.full(n, LN_V + 0.2)                                    # learning nothing at all
    return rows_from(noisy(b, 0.01, seed), lr_schedule(n, "constant"), val=b + 0.01,
                     val_every=max(1, n // 25), seed=seed), 1


def inject_memorization(n, seed):
    """Training keeps falling faster than validation from t0 (the same text seen again and again); validation
    still falls a little, so it is not overfitting yet."""
    base, lr, y = noisy_run(n, seed)
    t0 = int(0.4 * n)
    t = np.arange(n)
    y = y * (1 - 0.3 * np.clip((t - t0) / (n - t0), 0, 1))
    val = base + 0.05 + 0.002 * np.random.default_rng(seed).standard_normal(n)
    return rows_from(y, lr, val=val, val_every=max(1, n // 40), seed=seed), t0 + 1


def assert_found_near(kind: str, rows: list[dict], t0: int, n: int) -> None:
    """The diagnosis finds ``kind`` within 5% of the run (2 steps at least) of step t0, with its numbers, its
    advice, and nothing else about these curves."""
    from train.record.diagnose import diagnose

    findings = diagnose(rows, vocab_size=VOCAB)
    hits = [f for f in findings if f.kind == kind]
    assert hits, f"{kind} not found; got {[f.to_dict() for f in findings]}"
    best = min(hits, key=lambda f: abs(f.step - t0))
    assert abs(best.step - t0) <= max(2, 0.05 * n), (t0, best.to_dict())
    assert best.end_step >= best.step
    assert best.severity in ("info", "warning", "critical")
    assert best.advice and best.message
    assert best.evidence and all(isinstance(v, (int, float)) for v in best.evidence.values())
    assert {f.kind for f in findings} == {kind}, [f.to_dict() for f in findings]
