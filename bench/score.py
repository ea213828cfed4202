"""Benchmark: scoring throughput (docs/s) of the two quality models, alone and as the Spark stage.

    python bench/score.py [--data data/sample] [--min-docs 2000] [--width 2]

Reads the cleaned documents of a pipeline run (`make demo` makes data/sample). Record level: the
fastText classifier and the KenLM scorer over the English texts, repeated up to --min-docs, in one
process. Stage: jobs/score.py on the same cleaned/ on Spark local[width], twice (the first run warms
the JVM and workers); its docs/s includes the stage's fixed cost (percentiles, two Parquet writes).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pyarrow.dataset as ds  # noqa: E402

from pipeline.config import parse_config  # noqa: E402
from pipeline.score.perplexity import get_scorer  # noqa: E402
from pipeline.score.quality import get_classifier  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=REPO / "data" / "sample")
    ap.add_argument("--min-docs", type=int, default=2000)
    ap.add_argument("--width", type=int, default=2)
    args = ap.parse_args()
    cleaned = args.data / "cleaned"
    if not cleaned.exists():
        sys.exit(f"{cleaned} not found: run `make demo` (or pass --data of a pipeline run)")
    table = ds.dataset(str(cleaned), format="parquet").to_table(columns=["text", "lang"]).to_pylist()
    texts = [r["text"] for r in table if r["lang"] == "en"]
    texts = (texts * (args.min_docs // max(1, len(texts)) + 1))[: args.min_docs]
    cfg = parse_config({"sources": {"x": {"format": "text", "paths": [str(REPO / "README.md")]}}})

    classifier = get_classifier(cfg.score.fasttext_model)
    scorer = get_scorer(cfg.score.kenlm_dir, "en")
    t0 = time.perf_counter()
    classifier.predict_proba(texts)
    t1 = time.perf_counter()
    scorer.score_batch(texts)
    t2 = time.perf_counter()
    mb = sum(len(t.encode()) for t in texts) / 1e6

    os.environ["SPARK_MASTER"] = f"local[{args.width}]"
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("SPARK_CONF_DIR", str(REPO / "conf"))
    from jobs import score
    from pipeline.run.spark import get_spark

    spark = get_spark("glassbox-bench-score", {"spark.ui.enabled": "false"})
    work = REPO / "build" / "bench" / "score"
    work.mkdir(parents=True, exist_ok=True)
    if (work / "cleaned").exists():
        (work / "cleaned").unlink()
    (work / "cleaned").symlink_to(cleaned.resolve(), target_is_directory=True)
    stage = [score.run(spark, cfg, str(work)) for _ in range(2)][-1]
    spark.stop()

    result = {
        "docs": len(texts), "mb_text": round(mb, 2),
        "fasttext_docs_per_s_1core": round(len(texts) / (t1 - t0), 1),
        "kenlm_docs_per_s_1core": round(len(texts) / (t2 - t1), 1),
        "stage_docs": stage.records_in, "stage_wall_s": stage.wall_s,
        "stage_docs_per_s": round(stage.records_in / stage.wall_s, 1), "stage_width": args.width,
    }
    (REPO / "build" / "bench" / "score.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
