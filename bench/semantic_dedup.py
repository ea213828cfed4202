"""Throughput of semantic dedup on CPU: the all-MiniLM-L6-v2 embedding pass alone (plain Python, one
process) and the whole Spark step (embeddings, k-means, greedy keep) on the same documents.

    python bench/semantic_dedup.py [--docs 400] [--width 2]

Documents are 200-word windows of the bundled WikiText-2 text (about 1,300 characters, so the model
reads its full 256 tokens, as it would on web pages). Prints JSON and writes
build/bench/semantic_dedup.json: docs/s of the embedder at max_chars 2000 and 500, and docs/s of
the Spark step with its own embedding figure.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TEXT = REPO / "quality_models" / "data" / "wikitext-2-valid.txt"


def documents(n: int, window: int = 200) -> list[str]:
    words = TEXT.read_text(encoding="utf-8").split()
    docs = [" ".join(words[i:i + window]) for i in range(0, len(words) - window + 1, window)]
    if len(docs) < n:
        raise ValueError(f"only {len(docs)} windows of {window} words in {TEXT}")
    return docs[:n]


def embed_rate(texts: list[str], max_chars: int) -> dict:
    from pipeline.dedup.semantic import Embedder

    emb = Embedder(max_chars=max_chars)
    emb.embed(texts[:8])  # load the model and warm the kernels outside the clock
    t0 = time.perf_counter()
    emb.embed(texts)
    wall = time.perf_counter() - t0
    return {"max_chars": max_chars, "docs": len(texts), "wall_s": round(wall, 2),
            "docs_per_s": round(len(texts) / wall, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=400)
    ap.add_argument("--width", type=int, default=2)
    ap.add_argument("--out", type=Path, default=REPO / "build" / "bench" / "semantic_dedup.json")
    args = ap.parse_args()
    texts = documents(args.docs)
    result = {"docs": len(texts), "threads": os.cpu_count(),
              "embedder": [embed_rate(texts[:100], 2000), embed_rate(texts[:100], 500)]}

    os.environ["SPARK_MASTER"] = f"local[{args.width}]"
    os.environ.setdefault("SPARK_CONF_DIR", str(REPO / "conf"))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pipeline.dedup.semantic import SemanticDedupConfig, mark_semantic_duplicates
    from pipeline.spark import get_spark

    spark = get_spark("glassbox-bench-semantic", {"spark.ui.enabled": "false",
                                                  "spark.sql.shuffle.partitions": str(2 * args.width)})
    rows = [(hashlib.sha256(t.encode()).hexdigest()[:32], "wiki", t) for t in texts]
    df = spark.createDataFrame(rows, "id string, source string, text string").localCheckpoint(eager=True)
    t0 = time.perf_counter()
    out, info = mark_semantic_duplicates(spark, df, SemanticDedupConfig(enabled=True))
    kept = out.where("status = 'kept'").count()
    wall = time.perf_counter() - t0
    spark.stop()
    result["spark_step"] = {"width": args.width, "wall_s": round(wall, 2), "docs_per_s": round(len(rows) / wall, 2),
                            "kept": kept, "info": info}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
