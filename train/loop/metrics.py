"""``metrics.jsonl`` and the console line: the one place a run's numbers are written.

One JSON object per optimizer step (``kind: "train"``: step, tokens, loss, lr, grad_norm, tokens_per_s,
mfu, ...) and one per validation (``kind: "val"``: step, tokens, val_loss, val_loss_<source>). Other
modules hand a dict of extra fields to ``train``/``val``; adding a field means adding it to that dict.
Every row is flushed as it is written, so a run killed at any moment leaves whole lines. On resume the
rows past the checkpoint's step are moved to ``metrics.discarded.jsonl`` (kept for audit): the steps
will be trained again and ``metrics.jsonl`` keeps one row per step.

MFU = achieved model FLOPs per second / (peak FLOPs per device x devices), with model FLOPs from
``ModelConfig.flops_per_token`` and the peak from the table below (dense tensor-core figures from the
vendors' data sheets) or ``log.peak_tflops``; null where the peak is unknown (CPUs).
"""
from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

from glassbox.contracts import metrics_row_kinds

# Dense (no sparsity) peak TFLOP/s per device: bf16 tensor cores, and tf32 for fp32 training. Matched in
# order against torch.cuda.get_device_name() (e.g. "NVIDIA H100 80GB HBM3"); unlisted GPUs: log.peak_tflops.
PEAK_TFLOPS = [
    (r"H200", {"bf16": 989.0, "fp32": 494.7}),
    (r"H100.*PCIe", {"bf16": 756.0, "fp32": 378.0}),
    (r"H100", {"bf16": 989.0, "fp32": 494.7}),
    (r"A100", {"bf16": 312.0, "fp32": 156.0}),
    (r"L40S", {"bf16": 362.0, "fp32": 183.0}),
    (r"\bL4\b", {"bf16": 121.0, "fp32": 60.0}),
]


def device_peak_flops(precision: str, override_tflops: float | None = None) -> float | None:
    """Peak FLOP/s of one device of this process, or None when unknown (CPU, unlisted GPU)."""
    if override_tflops:
        return override_tflops * 1e12
    try:
        import torch
        if not torch.cuda.is_available():
            return None
        name = torch.cuda.get_device_name()
    except Exception:
        return None
    for pattern, peaks in PEAK_TFLOPS:
        if re.search(pattern, name):
            return peaks[precision] * 1e12
    return None


def _fmt_duration(s: float) -> str:
    if not math.isfinite(s):
        return "?"
    s = int(s)
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{sec:02d}s"


class MetricsLog:
    def __init__(self, run_dir: Path, *, stop_step: int, log_every: int, flops_per_token: float,
                 peak_flops_per_device: float | None, devices: int, enabled: bool = True, sinks=()):
        self.path = Path(run_dir) / "metrics.jsonl"
        self.stop_step, self.log_every = stop_step, log_every
        self.flops_per_token, self.devices = flops_per_token, devices
        self.peak = peak_flops_per_device
        self.enabled = enabled
        self.sinks = list(sinks)                        # e.g. TensorBoard: each gets every row written
        self._window: list[tuple[float, int]] = []      # (seconds, tokens) of steps since the last line
        self._recent: list[float] = []                  # step seconds, for the ETA

    def truncate_after(self, step: int) -> int:
        """Keep rows with step <= ``step``; move the others to metrics.discarded.jsonl. Returns how many."""
        if not self.enabled or not self.path.is_file():
            return 0
        keep, drop = [], []
        for line in self.path.read_text().splitlines():
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:           # a torn last line from a killed run
                drop.append(line)
                continue
            (keep if row.get("step", 0) <= step else drop).append(line)
        if drop:
            with open(self.path.with_name("metrics.discarded.jsonl"), "a") as f:
                f.write("".join(x + "\n" for x in drop))
        tmp = self.path.with_name(".metrics.jsonl.tmp")
        tmp.write_text("".join(x + "\n" for x in keep))
        tmp.replace(self.path)
        return len(drop)

    def _write(self, row: dict) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps(row) + "\n")
        for sink in self.sinks:
            sink.write(row)

    def mfu(self, tokens_per_s: float) -> float | None:
        if not self.peak:
            return None
        return tokens_per_s * self.flops_per_token / (self.peak * self.devices)

    def train(self, *, step: int, tokens: int, loss: float, lr: float, grad_norm: float | None,
              step_tokens: int, seconds: float, **extra) -> dict:
        tps = step_tokens / seconds if seconds > 0 else None
        row = {"kind": "train", "step": step, "tokens": tokens, "loss": loss, "lr": lr, "grad_norm": grad_norm,
               "tokens_per_s": tps, "mfu": self.mfu(tps) if tps else None, "step_s": seconds,
               "time": time.time(), **extra}
        if not self.enabled:
            return row
        self._write(row)
        self._window.append((seconds, step_tokens))
        self._recent = (self._recent + [seconds])[-50:]
        if step % self.log_every == 0 or step == self.stop_step:
            secs = sum(s for s, _ in self._window)
            toks = sum(t for _, t in self._window)
            tps_w = toks / secs if secs else float("nan")
            mfu = self.mfu(tps_w)
            eta = (self.stop_step - step) * (sum(self._recent) / len(self._recent))
            gn = f"{grad_norm:.3f}" if grad_norm is not None else "-"
            print(f"step {step:>6}/{self.stop_step} | loss {loss:.4f} | lr {lr:.2e} | grad_norm {gn} | "
                  f"{tps_w:,.0f} tok/s | mfu {f'{mfu:.1%}' if mfu is not None else '-'} | "
                  f"tokens {tokens:,} | eta {_fmt_duration(eta)}", flush=True)
            self._window = []
        return row

    def val(self, *, step: int, tokens: int, val_loss: float, per_source: dict[str, float],
            bpb: dict[str, float] | None = None) -> dict:
        """A validation row: ``val_loss`` (nats per token) and, given ``bpb`` ({source: bits per byte, and
        "__overall__"}), ``val_bpb`` and ``val_bpb_<source>``, the figures that compare across sources."""
        row = {"kind": "val", "step": step, "tokens": tokens, "val_loss": val_loss,
               **{f"val_loss_{k}": v for k, v in per_source.items()}}
        if bpb:
            row["val_bpb"] = bpb["__overall__"]
            row.update({f"val_bpb_{k}": v for k, v in bpb.items() if k != "__overall__"})
        row["time"] = time.time()
        if self.enabled:
            self._write(row)
            parts = " ".join(f"{k} {v:.4f}" for k, v in per_source.items())
            if bpb:
                parts += " | bpb " + " ".join(f"{k} {v:.3f}" for k, v in bpb.items() if k != "__overall__")
            print(f"step {step:>6}/{self.stop_step} | val_loss {val_loss:.4f} | {parts}", flush=True)
        return row


class DeferredRows:
    """Training rows of metrics.jsonl, read from the device only when written: at once when ``every_step``
    (default: on CPU), otherwise on log steps, before validation and checkpoints, and before a spike is
    handled, all pending rows together, their ``seconds`` the interval's wall time shared out (the per-step
    timer sees only kernel launches when nothing waits for the device)."""

    def __init__(self, metrics: MetricsLog, every_step: bool | None, log_every: int, stop: int):
        self.metrics, self.log_every, self.stop = metrics, log_every, stop
        if every_step is None:
            import torch

            every_step = not torch.cuda.is_available()
        self.every_step = every_step
        self.pending: list[dict] = []
        self.restart_interval()

    def restart_interval(self) -> None:
        self.interval_start = time.perf_counter()

    def add(self, **row) -> None:
        self.pending.append(row)
        if self.every_step or row["step"] % self.log_every == 0 or row["step"] == self.stop:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        rows = [{k: _number(v) for k, v in row.items()} for row in self.pending]   # reads: waits for the device
        if not self.every_step:
            share = (time.perf_counter() - self.interval_start) / len(rows)
            for row in rows:
                row["seconds"] = share
        for row in rows:
            self.metrics.train(**row)
        self.pending = []
        self.restart_interval()


def _number(value):
    """A tensor's value as a Python float; anything else unchanged."""
    return float(value) if hasattr(value, "item") else value


def read_metrics(run_dir: str | Path, kind: str | None = "train") -> list[dict]:
    """Rows of a run's metrics.jsonl (of one kind, or all with kind=None)."""
    rows = []
    for line in (Path(run_dir) / "metrics.jsonl").read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            if kind is None or kind in metrics_row_kinds(row):
                rows.append(row)
    return rows
