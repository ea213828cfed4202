"""Bench and proof of incremental dedup (`dedup.against`): a new crawl B deduplicated against a corpus A
already built costs what B costs, and decides B as a full run over A and B would.

    python bench/incremental_dedup.py [--sizes 1000,3000] [--old-per-new 10] [--repeat 3] [--paths local]

For each n: a planted corpus of (k + 1) n documents (bench/dedup_scale.py's generator: edited copies,
pasted tails, truncations, case and punctuation copies, template families) is split at random into A
(about k n) and B (about n), so near-duplicate families run across A and B and inside B; 1 % of B are
records of A fetched again (the same id and text). Then, on one warm Spark session (local[width]):
- A's dedup stage (jobs/dedup.py) builds A and its index (DATA/dedup_index);
- incremental: B's dedup stage with `dedup.against: [A]`;
- full: the dedup stage over A and B together from scratch.
Walls are the stage's own (stats/dedup.json wall_s), `--repeat` times each, median and spread.

"The same decisions on B": A is fixed, so an old document always wins. The full run is given that rule
in its own terms: A's documents carry quality_ft 1.0 (above every B score) and ids that sort before B's
(exact dedup keeps the smallest id), so its keep rule ranks A first too. B's re-fetched records are left
out of the full run's input (in a real full run the extract stage keeps one copy; one id, one row).
precision: of the B documents the incremental run removes, the share the full run removes;
recall: of the B documents the full run removes, the share the incremental run removes; pairs: the share
of the full run's removed B documents whose duplicate_of is the same in both (`agreement` says when they
differ and why).

Prints a table and writes build/bench/incremental_dedup.json.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.dedup_scale import planted_corpus  # noqa: E402


def crawls(n_new: int, old_per_new: int = 10, seed: int = 0, refetched: float = 0.01) -> tuple[list[dict], list[dict]]:
    """(A, B): about old_per_new * n_new and n_new documents (id, source, text, quality_ft, family) cut from
    one planted corpus at random; A's ids start with "a", B's with "b"; `refetched` of B are records of A
    again (A's id and text, B's own quality)."""
    docs = planted_corpus(n_new * (old_per_new + 1), seed=seed)
    rng = random.Random(seed)
    old, new = [], []
    for d in docs:
        if rng.random() < 1 / (old_per_new + 1):
            new.append({**d, "id": "b" + d["id"]})
        else:
            old.append({**d, "id": "a" + d["id"], "quality_ft": 1.0})
    for d in rng.sample(old, max(1, int(refetched * len(new)))):
        new.append({**d, "quality_ft": round(rng.random(), 4)})
    return old, new


def write_scored(docs: list[dict], data: Path, files: int = 2) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if data.exists():
        shutil.rmtree(data)
    (data / "scored").mkdir(parents=True)
    chunk = -(-len(docs) // files)
    for i in range(files):
        part = docs[i * chunk:(i + 1) * chunk]
        pq.write_table(pa.table({"id": [d["id"] for d in part], "source": [d["source"] for d in part],
                                 "text": [d["text"] for d in part],
                                 "quality_ft": pa.array([d["quality_ft"] for d in part], pa.float64())}),
                       data / "scored" / f"part-{i:05d}.parquet", compression="zstd")


def decisions(data: Path) -> dict[str, tuple[str, str]]:
    """Removed id -> (reason, duplicate_of)."""
    import pyarrow.parquet as pq

    rows = pq.read_table(data / "rejected" / "stage=dedup", columns=["id", "reason", "duplicate_of"]).to_pylist()
    return {r["id"]: (r["reason"], r["duplicate_of"]) for r in rows}


def agreement(inc: dict, full: dict, new_ids: set[str]) -> dict:
    """The decisions on the new crawl's documents, incremental against full. `pairs_other`: removed by both,
    but for different documents; of those, `other_named_by_full_removed` are where the full run names a
    document it removed itself (an exact copy of an old document that the old corpus's own dedup dropped
    for another one: the index holds only what the old corpus kept, so the incremental run names that)."""
    a = {i for i in inc if i in new_ids}
    b = {i for i in full if i in new_ids}
    both = a & b
    other = [i for i in both if inc[i][1] != full[i][1]]
    return {"removed_incremental": len(a), "removed_full": len(b), "both": len(both),
            "precision": round(len(both) / len(a), 4) if a else 1.0,
            "recall": round(len(both) / len(b), 4) if b else 1.0,
            "pairs": round((len(both) - len(other)) / len(b), 4) if b else 1.0,
            "pairs_other": len(other), "other_named_by_full_removed": sum(full[i][1] in full for i in other)}


def config(against: list[str], local_max_bytes: int):
    from pipeline.config import parse_config

    return parse_config({"sources": {"web": {"format": "jsonl", "paths": [str(REPO / "examples" / "sample" / "jsonl" / "*")]}},
                         "dedup": {"shards": 2, "against": against, "local_max_bytes": local_max_bytes}})


def timed(spark, cfg, data: Path) -> tuple[float, dict]:
    from jobs import dedup

    stats = dedup.run(spark, cfg, str(data))
    return stats.wall_s, stats.extra


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,3000", help="documents of the new crawl B (A is old-per-new times as many)")
    ap.add_argument("--old-per-new", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--paths", default="local", help="local, distributed or both (the dedup stage's two paths)")
    ap.add_argument("--width", type=int, default=2)
    ap.add_argument("--work", type=Path, default=REPO / "build" / "bench" / "incremental_dedup")
    ap.add_argument("--out", type=Path, default=REPO / "build" / "bench" / "incremental_dedup.json")
    args = ap.parse_args()
    os.environ["SPARK_MASTER"] = f"local[{args.width}]"
    os.environ.setdefault("SPARK_CONF_DIR", str(REPO / "conf"))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pipeline.run.spark import get_spark

    spark = get_spark("glassbox-bench-incremental-dedup", {"spark.ui.enabled": "false",
                                                           "spark.sql.shuffle.partitions": str(2 * args.width)})
    paths = ["local", "distributed"] if args.paths == "both" else [args.paths]
    result: dict = {"width": args.width, "old_per_new": args.old_per_new, "repeat": args.repeat,
                    "load_avg_start": os.getloadavg(), "sizes": {}}
    warm = True
    for n in [int(s) for s in args.sizes.split(",")]:
        old, new = crawls(n, args.old_per_new, seed=n)
        root = args.work / f"n{n}"
        new_ids = {d["id"] for d in new}
        refetched = {d["id"] for d in new if d["id"].startswith("a")}
        write_scored(old, root / "A")
        write_scored(new, root / "B")
        write_scored(old + [d for d in new if d["id"] not in refetched], root / "full")
        entry = {"old_docs": len(old), "new_docs": len(new), "refetched": len(refetched)}
        for path in paths:
            limit = (1 << 30) if path == "local" else 0
            if warm:  # JVM, Python workers and code paths, on a small copy
                write_scored(new[: 200], root / "warm")
                timed(spark, config([], limit), root / "warm")
                warm = False
            a_wall, _ = timed(spark, config([], limit), root / "A")
            inc_walls, full_walls = [], []
            for _ in range(args.repeat):
                wall, extra = timed(spark, config([str(root / "A")], limit), root / "B")
                assert extra["path"] == path, extra
                inc_walls.append(wall)
                wall, _ = timed(spark, config([], limit), root / "full")
                full_walls.append(wall)
            inc, full = decisions(root / "B"), decisions(root / "full")
            again = sum(1 for i in refetched if inc.get(i, ("",))[0] == "repeated_record")
            e = {"build_old_s": a_wall, "incremental_s": inc_walls, "full_s": full_walls,
                 "incremental_median_s": statistics.median(inc_walls), "full_median_s": statistics.median(full_walls),
                 "refetched_rejected_as_repeated_record": again,
                 "agreement_on_new": agreement(inc, full, new_ids - refetched)}
            e["ratio"] = round(e["incremental_median_s"] / e["full_median_s"], 3)
            ratios = [i / f for i, f in zip(inc_walls, full_walls)]
            e["ratio_spread"] = [round(min(ratios), 3), round(max(ratios), 3)]
            entry[path] = e
            ag = e["agreement_on_new"]
            print(f"A {len(old):>6}  B {len(new):>5}  {path:<11} incremental {e['incremental_median_s']:>6.1f}s  "
                  f"full {e['full_median_s']:>6.1f}s  ratio {e['ratio']:.3f} {e['ratio_spread']}  "
                  f"P {ag['precision']:.4f} R {ag['recall']:.4f} pairs {ag['pairs']:.4f}  "
                  f"(removed {ag['removed_incremental']}/{ag['removed_full']}, re-fetched {again}/{len(refetched)})",
                  flush=True)
        result["sizes"][str(n)] = entry
    result["load_avg_end"] = os.getloadavg()
    spark.stop()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "sizes"}))


if __name__ == "__main__":
    main()
