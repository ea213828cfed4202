"""Held-out evaluation: each domain's text, tokenized once with the ablation's fixed tokenizer, scored by
per-token loss (mean cross entropy in nats over every predicted token) under each proxy's final weights.

One tokenizer for every variant makes the numbers comparable; the documents are concatenated with the end-of-
document id between them (as the trainer packs them) and cut into windows of seq_len + 1 tokens, so every
token but each window's first is predicted once. The proxy is read from its run's newest complete checkpoint
through the exporter's merge (any tp x pp layout), on the CPU.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import math

import numpy as np


def read_documents(paths: list[str], fmt: str, text_field: str) -> list[str]:
    docs = []
    for p in paths:
        opener = gzip.open if p.endswith(".gz") else open
        with opener(p, "rt", encoding="utf-8") as fh:
            for line in fh:
                if fmt == "jsonl":
                    if line.strip():
                        text = json.loads(line).get(text_field)
                        if text:
                            docs.append(text)
                elif line.strip():
                    docs.append(line.strip())
    return docs


def windows(docs: list[str], tokenizer: str, seq_len: int, max_tokens: int) -> np.ndarray:
    """[n, seq_len + 1] token windows of the domain, at most about `max_tokens` predicted tokens."""
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=tokenizer)
    stream: list[int] = []
    need = (max_tokens // seq_len + 1) * seq_len + 1
    for ids in sp.encode(docs):
        stream += ids + [sp.eos_id()]
        if len(stream) >= need:
            break
    n = (len(stream) - 1) // seq_len
    if n < 1:
        raise ValueError(f"fewer than {seq_len + 1} tokens of held-out text")
    arr = np.asarray(stream[: n * seq_len + 1], dtype=np.int64)
    return np.stack([arr[i * seq_len: i * seq_len + seq_len + 1] for i in range(n)])


def domain_digest(win: np.ndarray) -> str:
    return hashlib.sha256(win.tobytes()).hexdigest()[:16]


def domain_bytes(domains: dict[str, np.ndarray], tokenizer: str) -> dict[str, int]:
    """{domain: UTF-8 bytes its predicted tokens decode to} (train/tokenizer/token_bytes.py: byte pieces 1,
    the end-of-document id 0)."""
    import sentencepiece as spm

    from train.tokenizer.token_bytes import token_bytes

    table = token_bytes(tokenizer, spm.SentencePieceProcessor(model_file=tokenizer).eos_id())
    return {k: int(table[w[:, 1:]].sum()) for k, w in domains.items()}


SMALL_PROXY_PARAMS = 50_000_000


def proxy_losses(run: str, domains: dict[str, np.ndarray], batch: int = 16,
                 n_bytes: dict[str, int] | None = None) -> tuple[int, dict[str, dict]]:
    """(checkpoint step, {domain: {"loss", "tokens"[, "bytes", "bpb"]}}, parameters) of a finished proxy; given
    each domain's bytes (``domain_bytes``), also bits per byte: the summed nats over ln 2 x the bytes."""
    import torch

    from train.export import weights

    ckpt = weights.find_checkpoint(run)
    cfg = ckpt.model_cfg
    model = weights.load_reference_model(cfg, weights.merge_checkpoint(ckpt))
    # A small proxy's matmuls are shorter than what its threads cost to meet, the more so on a busy machine:
    # the 0.24M-parameter demo proxy scored 256 windows in 2.3 s on one thread against 3.9-5.2 s on two (2 cores,
    # load 3). Larger models keep torch's threads.
    threads = torch.get_num_threads()
    if cfg.num_params() < SMALL_PROXY_PARAMS:
        torch.set_num_threads(1)
    try:
        return ckpt.step, _losses(model, cfg, domains, batch, n_bytes), cfg.num_params()
    finally:
        torch.set_num_threads(threads)


def _losses(model, cfg, domains: dict[str, np.ndarray], batch: int, n_bytes: dict[str, int] | None) -> dict:
    import torch
    import torch.nn.functional as F

    out = {}
    with torch.no_grad():
        for name, win in domains.items():
            total, count = 0.0, 0
            for i in range(0, len(win), batch):
                x = torch.from_numpy(win[i:i + batch, :-1])
                y = torch.from_numpy(win[i:i + batch, 1:])
                logits = model(x)[0][..., :cfg.vocab_size].float()
                total += float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="sum"))
                count += y.numel()
            out[name] = {"loss": total / count, "tokens": count}
            if n_bytes and n_bytes.get(name):
                out[name].update(bytes=n_bytes[name], bpb=total / (math.log(2) * n_bytes[name]))
    return out
