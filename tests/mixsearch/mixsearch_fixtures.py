"""A tiny tokenized DATA folder (the layout `make tokenize` writes: tokenized/<source>/part-*.parquet, counts.json,
tokenizer.model) of real text, three sources cut from the bundled WikiText-2 validation split, and a tiny proxy
config: the mixture-search tests train real proxies on it in a few seconds each."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from train_fixtures import TEXT, paragraphs, train_tokenizer, write_shards

PROXY = """
model: {n_layers: 1, d_model: 32, n_heads: 2, ffn_hidden: 64, vocab_multiple: 64}
parallel: {tp: 1, pp: 1, dp: 1}
data: {seq_len: 32}
train: {micro_batch_size: 8, global_batch_size: 8, precision: fp32}
optimizer: {lr: 3.0e-3, min_lr: 3.0e-4}
schedule: {kind: cosine, warmup_steps: 2}
checkpoint: {every: 0, keep: 1}
log: {every: 50, sample_every: 0}
eval: {every: 0}
"""


def make_data(root: Path, sources=("alpha", "beta", "gamma")) -> dict:
    """{"data", "proxy", "heldout"}: the DATA folder, the proxy config and a held-out text file."""
    import sentencepiece as spm

    root = Path(root)
    paras = paragraphs(TEXT.read_text(encoding="utf-8"))
    train, held = paras[:900], paras[900:1000]
    tok_dir = root / "data" / "tokenized"
    tok = train_tokenizer(root / "tok", train, vocab_size=640, byte_fallback=True)
    tok_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(tok, tok_dir / "tokenizer.model")
    sp = spm.SentencePieceProcessor(model_file=str(tok_dir / "tokenizer.model"))
    groups = {s: train[i::len(sources)] for i, s in enumerate(sources)}
    # unequal sizes, so the natural mix is not uniform
    groups[sources[0]] = groups[sources[0]][: len(groups[sources[0]]) // 3]
    counts = {"sources": {}, "tokenizer": {}}
    for s, texts in groups.items():
        docs = [ids + [sp.eos_id()] for ids in sp.encode(texts)]
        shards = write_shards(tok_dir / s, s, docs, texts, n_shards=2)
        for sh in shards:
            sh["path"] = str(Path(sh["path"]).relative_to(tok_dir))
        counts["sources"][s] = {"documents": sum(x["documents"] for x in shards),
                                "tokens": sum(x["tokens"] for x in shards), "shards": shards}
    from glassbox.contracts import sha256_file

    counts["tokenizer"] = {"path": "tokenizer.model", "sha256": sha256_file(tok_dir / "tokenizer.model"),
                           "vocab_size": sp.get_piece_size(), "eos_id": sp.eos_id(), "bos_id": sp.bos_id(),
                           "pad_id": sp.pad_id(), "unk_id": sp.unk_id()}
    counts["tokenizer_sha256"] = counts["tokenizer"]["sha256"]
    counts["tokens"] = sum(v["tokens"] for v in counts["sources"].values())
    counts["documents"] = sum(v["documents"] for v in counts["sources"].values())
    (tok_dir / "counts.json").write_text(json.dumps(counts, indent=1))
    proxy = root / "proxy.yaml"
    proxy.write_text(PROXY)
    heldout = root / "heldout.txt"
    heldout.write_text("\n".join(held) + "\n")
    return {"data": root / "data", "proxy": proxy, "heldout": heldout}


def spec_text(name: str, files: dict, out: Path, n: int, domains=None, frozen=None, tokens: int = 2048,
              parallel: int = 2) -> str:
    spec = {"name": name, "data": str(files["data"]), "out": str(out),
            "swarm": {"n": n, "concentration": 4, "seed": 0},
            "proxy": {"config": str(files["proxy"]), "tokens": tokens, "parallel": parallel},
            "targets": {"wiki": {"paths": [str(files["heldout"])], "format": "text", "max_tokens": 2048}},
            "verify": {"seeds": [1, 2]}}
    if domains:
        spec["domains"] = list(domains)
    if frozen:
        spec["frozen"] = frozen
    return json.dumps(spec)
