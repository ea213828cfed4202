"""Random-token shards and a manifest to the trainer's contract, for throughput runs where the text does
not matter (bench/gpu_throughput.sh). Documents of 256 to 4096 random ids, each ending with the eos id; the
special ids are the project's (glassbox.contracts) and the tokenizer entry points at a placeholder file (the trainer never loads the tokenizer).

    .venv/bin/python bench/synthetic_manifest.py --out build/bench/gpu/data --vocab 32000 --tokens 50000000
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from glassbox.contracts import (BOS_ID, EOS_ID, PAD_ID, UNK_ID, manifest_content_hash,  # noqa: E402
                                sha256_file)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--tokens", type=float, default=5e7)
    ap.add_argument("--seq-len", type=int, default=2048)
    ap.add_argument("--shards", type=int, default=4)
    args = ap.parse_args()
    root = Path(args.out)
    man = root / "manifests" / "synthetic.json"
    if man.is_file():
        print(f"{man} exists")
        return
    rng = np.random.default_rng(0)
    (root / "tokenized" / "synthetic").mkdir(parents=True, exist_ok=True)
    tok = root / "tokenized" / "tokenizer.placeholder"
    tok.write_text("synthetic: random token ids, no tokenizer\n")
    per_shard = int(args.tokens) // args.shards
    shards = []
    for k in range(args.shards):
        lens = []
        while sum(lens) < per_shard:
            lens.append(int(rng.integers(256, 4097)))
        flat = rng.integers(max(BOS_ID, EOS_ID, PAD_ID, UNK_ID) + 1, args.vocab, size=sum(lens), dtype=np.int32)
        offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
        flat[offsets[1:] - 1] = EOS_ID
        tokens = pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat))
        path = root / "tokenized" / "synthetic" / f"part-{k:05d}.parquet"
        pq.write_table(pa.table({"id": [f"syn-{k}-{i}" for i in range(len(lens))],
                                 "source": ["synthetic"] * len(lens), "tokens": tokens,
                                 "n_tokens": pa.array(lens, pa.int32())}), path)
        shards.append({"path": f"../tokenized/synthetic/part-{k:05d}.parquet", "sha256": sha256_file(path),
                       "documents": len(lens), "tokens": int(sum(lens))})
    total = sum(s["tokens"] for s in shards)
    docs = sum(s["documents"] for s in shards)
    m = {"name": "synthetic", "seed": 0, "max_seq_len": args.seq_len, "total_tokens": total, "max_epochs": 1.0,
         "tokenizer_sha256": sha256_file(tok),
         "tokenizer": {"path": "../tokenized/tokenizer.placeholder", "sha256": sha256_file(tok), "vocab_size": args.vocab,
                       "eos_id": EOS_ID, "bos_id": BOS_ID, "pad_id": PAD_ID, "unk_id": UNK_ID},
         "warnings": ["synthetic random tokens"],
         "sources": {"synthetic": {"weight": 1.0, "requested_weight": 1.0, "available_tokens": total,
                                   "available_documents": docs, "target_tokens": total, "epochs": 1.0,
                                   "capped": False, "shards": shards}}}
    m["content_hash"] = manifest_content_hash(m)
    man.parent.mkdir(parents=True, exist_ok=True)
    man.write_text(json.dumps(m, indent=1, sort_keys=True))
    print(man)


if __name__ == "__main__":
    main()
