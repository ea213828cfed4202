"""Semantic dedup on CPU: speed and quality of the static model (distilled from all-MiniLM-L6-v2 with
model2vec, the default) against MiniLM itself, and the whole Spark step.

    python bench/semantic_dedup.py [--docs 2000] [--width 2]

- Speed: documents/s of each embedder on one core (torch and the tokenizer held to one thread), on
  200-word windows of the bundled WikiText-2 text (about 1,300 characters: MiniLM reads its full 256
  tokens, as it would on web pages). Target for the static model: >= 300 documents/s per core.
- Quality: the Clough-Stevenson plagiarism corpus (../shared/data/dedup/clough_stevenson, human
  labels): for every answer, the cosine similarity to its task's original; ROC AUC of light and heavy
  revisions (positives) against independently written answers (negatives). Target: the static
  model's AUC within 0.05 of MiniLM's.
- The Spark step (embeddings, k-means, greedy keep) with the static model, documents/s.

Prints JSON and writes build/bench/semantic_dedup.json.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TEXT = REPO / "quality_models" / "data" / "wikitext-2-valid.txt"
CLOUGH = REPO.parent / "shared" / "data" / "dedup" / "clough_stevenson"


def documents(n: int, window: int = 200) -> list[str]:
    words = TEXT.read_text(encoding="utf-8").split()
    docs = [" ".join(words[i:i + window]) for i in range(0, len(words) - window + 1, window)]
    while len(docs) < n:  # more than the text holds: windows at shifted offsets
        shift = window // 2 ** (1 + len(docs) // 1000)
        docs += [" ".join(words[i:i + window]) for i in range(shift, len(words) - window + 1, window)]
    return docs[:n]


def _embedder(model: str):
    from pipeline.dedup.semantic import Embedder, StaticEmbedder

    return StaticEmbedder() if model == "static" else Embedder()


def embed_rate(texts: list[str], model: str) -> dict:
    """Documents/s of one embedder on one core (process CPU time is reported beside the wall)."""
    emb = _embedder(model)
    emb.embed(texts[:8])  # load the model and warm the kernels outside the clock
    t0, c0 = time.perf_counter(), time.process_time()
    emb.embed(texts)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"model": model, "docs": len(texts), "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "docs_per_s": round(len(texts) / wall, 1), "docs_per_cpu_s": round(len(texts) / cpu, 1)}


def roc_auc(pos: list[float], neg: list[float]) -> float:
    """P(a positive scores above a negative), ties counting one half."""
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def clough_auc(model: str) -> dict:
    import numpy as np

    meta = list(csv.DictReader(open(CLOUGH / "file_information.csv", encoding="utf-8")))
    files = [m["File"] for m in meta]
    texts = [(CLOUGH / "files" / f).read_text(encoding="latin-1") for f in files]
    vecs = dict(zip(files, _embedder(model).embed(texts)))
    orig = {m["Task"]: m["File"] for m in meta if m["Category"] == "orig"}
    sims = {c: [] for c in ("cut", "light", "heavy", "non")}
    for m in meta:
        if m["Category"] in sims:
            sims[m["Category"]].append(float(np.dot(vecs[m["File"]], vecs[orig[m["Task"]]])))
    pos = sims["light"] + sims["heavy"]
    return {"model": model, "auc_revised_vs_non": round(roc_auc(pos, sims["non"]), 4),
            "positives": len(pos), "negatives": len(sims["non"]),
            "mean_cosine": {c: round(float(np.mean(v)), 4) for c, v in sims.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=2000, help="documents for the static model and the Spark step")
    ap.add_argument("--minilm-docs", type=int, default=100, help="documents for MiniLM (slow)")
    ap.add_argument("--width", type=int, default=2)
    ap.add_argument("--out", type=Path, default=REPO / "build" / "bench" / "semantic_dedup.json")
    args = ap.parse_args()
    # one core each: torch, the tokenizers and BLAS
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "RAYON_NUM_THREADS"):
        os.environ[var] = "1"
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    import torch

    torch.set_num_threads(1)
    from pipeline.dedup.static_model import ensure_static_model

    t0 = time.perf_counter()
    path = ensure_static_model()
    texts = documents(args.docs)
    result = {"docs": len(texts), "cpus": os.cpu_count(), "load_avg_start": os.getloadavg(),
              "static_model": str(path), "static_model_ready_s": round(time.perf_counter() - t0, 1),
              "speed_one_core": [embed_rate(texts, "static"), embed_rate(texts[: args.minilm_docs], "minilm")]}
    if CLOUGH.exists():
        q = [clough_auc("static"), clough_auc("minilm")]
        result["quality_clough_stevenson"] = q
        result["auc_gap"] = round(q[1]["auc_revised_vs_non"] - q[0]["auc_revised_vs_non"], 4)
    else:
        result["quality_clough_stevenson"] = f"skipped: {CLOUGH} not found"
    s, m = result["speed_one_core"]
    result["static_speedup_vs_minilm"] = round(s["docs_per_s"] / m["docs_per_s"], 1)

    os.environ["SPARK_MASTER"] = f"local[{args.width}]"
    os.environ.setdefault("SPARK_CONF_DIR", str(REPO / "conf"))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pipeline.dedup.semantic import SemanticDedupConfig, mark_semantic_duplicates
    from pipeline.run.spark import get_spark

    spark = get_spark("glassbox-bench-semantic", {"spark.ui.enabled": "false",
                                                  "spark.sql.shuffle.partitions": str(2 * args.width)})
    rows = [(hashlib.sha256(t.encode()).hexdigest()[:32], "wiki", t) for t in texts]
    df = spark.createDataFrame(rows, "id string, source string, text string").localCheckpoint(eager=True)
    t0 = time.perf_counter()
    out, info = mark_semantic_duplicates(spark, df, SemanticDedupConfig(enabled=True))
    kept = out.where("status = 'kept'").count()
    wall = time.perf_counter() - t0
    spark.stop()
    result["spark_step_static"] = {"width": args.width, "wall_s": round(wall, 2),
                                   "docs_per_s": round(len(rows) / wall, 1), "kept": kept, "info": info}
    result["load_avg_end"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
