"""`make clean-dedup`: extract → clean → score → exact dedup as one Spark application.

Each stage reads the previous stage's Parquet, so any of them can also be rerun alone
(jobs/extract.py, jobs/clean.py, jobs/score.py, jobs/dedup.py with the same --config and --data).
"""
from __future__ import annotations

import time

from jobs import clean, dedup, extract, score
from jobs.common import parse_args
from pipeline.spark import get_spark


def main(argv=None) -> None:
    cfg, data = parse_args(__doc__, argv)
    t0 = time.time()
    spark = get_spark("glassbox-clean-dedup", cfg.spark)
    stats = [stage.run(spark, cfg, data) for stage in (extract, clean, score, dedup)]
    first, last = stats[0], stats[-1]
    print(f"\nclean-dedup: {cfg.path} -> {data}  ({time.time() - t0:.1f}s on {spark.sparkContext.master})")
    for s in stats:
        print("  " + s.summary())
    for d in stats[2].extra.get("distributions", []):
        if d["source"] == "*" and (d["quality_ft"] or d["perplexity"]):
            q, p = d["quality_ft"] or {}, d["perplexity"] or {}
            print(f"  score [{d['lang']}] {d['documents']} docs: quality_ft median {q.get('p50', float('nan')):.3f}, "
                  f"perplexity median {p.get('p50', float('nan')):.0f} (buckets in stats/score.json)")
    print(f"  kept {last.records_out} of {first.records_in} input records "
          f"({last.bytes_out / 1e6:.2f} MB of text); documents in {data}/dedup, "
          f"dropped ones with their reasons in {data}/rejected, counts in {data}/stats")


if __name__ == "__main__":
    main()
