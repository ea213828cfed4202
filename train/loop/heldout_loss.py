"""The loss per source on a run's held-out validation documents, measured again outside the trainer: the
export checks its merged weights with it (train/export/export.py), a GGUF file is compared with its export
(train/export/gguf.py), and `glassbox evaluate perplexity` reports it (train/evaluation/heldout.py)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from glassbox.contracts import metrics_row_kinds


@torch.no_grad()
def heldout_losses(logits_fn, order, vocab_size: int, batch_size: int = 8, byte_table=None) -> dict[str, dict]:
    """Per source: mean cross entropy over the held-out sequences' target tokens; given ``byte_table`` (the
    bytes of every id, train/tokenizer/token_bytes.py) also the targets' UTF-8 bytes and bits per byte."""
    out = {}
    for s in order.val_sources:
        total, tokens, n_bytes = 0.0, 0, 0
        for start in range(0, order.val_samples, batch_size):
            seqs = np.stack([order.val_sample(s, v) for v in range(start, min(order.val_samples, start + batch_size))])
            x = torch.from_numpy(seqs[:, :-1]).long()
            y = torch.from_numpy(seqs[:, 1:]).long()
            logits = logits_fn(x)[..., :vocab_size].float()
            total += float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="sum"))
            tokens += y.numel()
            if byte_table is not None:
                n_bytes += int(byte_table[seqs[:, 1:]].sum())
        loss = total / tokens
        out[order.names[s]] = {"loss": loss, "perplexity": math.exp(loss), "tokens": tokens,
                               "sequences": order.val_samples}
        if byte_table is not None:
            out[order.names[s]].update(bytes=n_bytes, bpb=total / (math.log(2) * n_bytes) if n_bytes else math.nan)
    return out


def combine(per_source: dict[str, dict], order) -> tuple[dict, dict]:
    """(overall weighted by the planned mix share, as the trainer's val_loss; token-weighted mean)."""
    w = {order.names[s]: order.planned[s] for s in order.val_sources}
    if not sum(w.values()):
        w = {k: 1 for k in w}
    loss = sum(per_source[k]["loss"] * w[k] for k in per_source) / sum(w.values())
    total = sum(v["tokens"] for v in per_source.values())
    tok_loss = sum(v["loss"] * v["tokens"] for v in per_source.values()) / total
    overall = {"loss": loss, "perplexity": math.exp(loss), "weights": {k: w[k] / sum(w.values()) for k in w},
               "weighting": "planned share of the training mix (the trainer's val_loss)"}
    if all("bpb" in v for v in per_source.values()):
        overall["bpb"] = sum(per_source[k]["bpb"] * w[k] for k in per_source) / sum(w.values())
    return overall, {"loss": tok_loss, "perplexity": math.exp(tok_loss), "tokens": total}


def logged_val(run: Path, step: int) -> dict | None:
    """The run's own validation row at ``step`` (the last one written), if any."""
    p = Path(run) / "metrics.jsonl"
    if not p.is_file():
        return None
    row = None
    for line in p.read_text(errors="replace").splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if isinstance(r, dict) and "val" in metrics_row_kinds(r) and r.get("step") == step:
            row = r
    if row is None:
        return None
    return {k: v for k, v in row.items() if k in ("val_loss", "val_bpb") or k.startswith(("val_loss_", "val_bpb_"))}
