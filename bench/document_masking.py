"""What intra-document attention costs a CPU training step: the same model, data and batch with
``model.document_masking`` on and off, forward + backward + AdamW, alternating rounds in one process.

The rows are real packed rows (documents of 20 to 400 tokens, geometric lengths as in web text, each ending
with the end-of-document id). On a CPU the mask is SDPA's boolean block-diagonal causal mask [B, 1, T, T],
built once per block; without it SDPA runs its causal kernel. The bench prints the median step time of each
and the ratio.

    .venv/bin/python bench/document_masking.py [--seq 512] [--batch 8] [--d-model 256] [--layers 4]
                                               [--steps 12] [--rounds 3] [--threads 2]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from train.model.transformer import Llama, ModelConfig  # noqa: E402

EOS = 3


def packed_rows(batch: int, seq: int, vocab: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    rows = []
    for _ in range(batch):
        ids = []
        while len(ids) < seq + 1:
            n = int(min(400, 20 + torch.empty(1).exponential_(1 / 120, generator=g).item()))
            doc = torch.randint(4, vocab, (n,), generator=g).tolist()
            ids += doc[:-1] + [EOS]
        rows.append(ids[:seq + 1])
    return torch.tensor(rows)


def time_steps(model: Llama, rows: torch.Tensor, steps: int) -> list[float]:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    out = []
    for _ in range(steps):
        t = time.perf_counter()
        _, loss = model(rows[:, :-1], rows[:, 1:])
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        out.append(time.perf_counter() - t)
    return out[2:]                        # warm-up


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=8000)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    rows = packed_rows(a.batch, a.seq, a.vocab)
    docs = int((rows[:, :-1] == EOS).sum()) + a.batch
    times: dict[bool, list[float]] = {False: [], True: []}
    for r in range(a.rounds):
        for masking in (False, True) if r % 2 == 0 else (True, False):
            torch.manual_seed(0)
            cfg = ModelConfig(vocab_size=a.vocab, n_layers=a.layers, d_model=a.d_model, n_heads=a.d_model // 64,
                              ffn_hidden=a.d_model * 8 // 3 // 64 * 64, max_seq_len=a.seq, eos_id=EOS,
                              document_masking=masking)
            times[masking] += time_steps(Llama(cfg), rows, a.steps)
    off, on = statistics.median(times[False]), statistics.median(times[True])
    print(f"{a.layers} layers x {a.d_model}, {a.batch} x {a.seq} tokens per step ({docs} documents), "
          f"{a.threads} threads, {a.rounds} rounds of {a.steps - 2} timed steps")
    print(f"causal (no mask)        {off * 1000:8.1f} ms per step")
    print(f"document masking        {on * 1000:8.1f} ms per step   ({on / off:.3f} x, "
          f"{(on - off) * 1000:+.1f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
