"""Benchmark and proof of near dedup: planted near-duplicates with exact ground truth, at 1x/2x/4x size.

    python bench/near_dedup.py [--base 1000] [--width 2]

The corpus is cut from real text (the bundled WikiText-2 validation split): windows of normalized words
become originals; some get one copy with a known number of word edits (substitutions or deletions at
1-30 % of the words), some get 2-3 copies that only add a short tail, the rest stay alone. Ground truth
is the exact Jaccard of the same shingles the pipeline uses: a pair is a duplicate iff J >= threshold.
Predicted pairs are all pairs inside one output component (`minhash_cluster`). Pairs across families are
checked exactly as well, so precision is exact; recall counts the within-family pairs (windows of
distinct text do not reach J 0.8 with each other).

Prints JSON and writes build/bench/near_dedup.json: wall time of mark_near_duplicates at each size
(Spark local[width], warmed up), t2/t1 and t4/t1, precision/recall with and without verification.
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipeline.dedup.exact import exact_key_text  # noqa: E402
from pipeline.dedup.minhash import jaccard, shingles  # noqa: E402

TEXT = REPO / "quality_models" / "data" / "wikitext-2-valid.txt"
EDIT_RATES = (0.01, 0.02, 0.03, 0.04, 0.05, 0.075, 0.1, 0.2, 0.3)


def _doc_id(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _edit(words: list[str], rate: float, vocab: list[str], rng: random.Random) -> list[str]:
    """max(1, round(rate * len)) edits at distinct positions, each a substitution or a deletion."""
    k = max(1, round(rate * len(words)))
    positions = set(rng.sample(range(len(words)), k))
    out = []
    for i, w in enumerate(words):
        if i not in positions:
            out.append(w)
        elif rng.random() < 0.5:
            out.append(rng.choice(vocab))
    return out


def planted_corpus(n_docs: int, seed: int = 0, window: int = 80, source: str = "wiki",
                   passes: int = 1) -> tuple[list[dict], dict]:
    """(docs, family) for about n_docs documents: docs are dicts id, source, text, family, rate;
    family maps id -> family number. `passes` > 1 cuts the text again at shifted offsets (a quarter
    window and more apart) for bigger corpora: such windows overlap, but stay below Jaccard 0.6."""
    words = exact_key_text(TEXT.read_text(encoding="utf-8")).split()
    vocab = sorted(set(words))
    offsets = [0, window // 2, window // 4, 3 * window // 4][:passes]
    windows = [words[i:i + window] for off in offsets for i in range(off, len(words) - window + 1, window)]
    rng = random.Random(seed)
    rng.shuffle(windows)
    docs: list[dict] = []
    seen: set[str] = set()

    def add(ws: list[str], fam: int, rate: float | None):
        text = " ".join(ws)
        i = _doc_id(text)
        if i not in seen:
            seen.add(i)
            docs.append({"id": i, "source": source, "text": text, "family": fam, "rate": rate})

    for fam, ws in enumerate(windows):
        if len(docs) >= n_docs:
            break
        add(ws, fam, None)
        kind = rng.random()
        if kind < 0.5:
            rate = rng.choice(EDIT_RATES)
            add(_edit(ws, rate, vocab, rng), fam, rate)
        elif kind < 0.7:
            for _ in range(rng.choice((2, 3))):
                add(ws + [rng.choice(vocab), rng.choice(vocab)], fam, 0.0)
    if len(docs) < n_docs:
        raise ValueError(f"not enough text for {n_docs} documents (got {len(docs)})")
    return docs[:n_docs], {d["id"]: d["family"] for d in docs[:n_docs]}


def truth_pairs(docs: list[dict], ngram: int, threshold: float) -> tuple[set, dict]:
    """Pairs (a, b), a < b, inside one family with exact Jaccard >= threshold; and the shingle sets."""
    sets = {d["id"]: shingles(d["text"], ngram) for d in docs}
    by_family: dict[int, list[str]] = {}
    for d in docs:
        by_family.setdefault(d["family"], []).append(d["id"])
    truth = set()
    for ids in by_family.values():
        for a, b in itertools.combinations(sorted(ids), 2):
            if jaccard(sets[a], sets[b]) >= threshold:
                truth.add((a, b))
    return truth, sets


def score(rows: list[dict], truth: set, sets: dict, family: dict, threshold: float) -> dict:
    """Pair precision/recall of the output's components against the exact ground truth."""
    clusters: dict[str, list[str]] = {}
    for r in rows:
        if r["minhash_cluster"] is not None:
            clusters.setdefault(r["minhash_cluster"], []).append(r["id"])
    predicted = {p for ids in clusters.values() for p in itertools.combinations(sorted(ids), 2)}
    # a predicted pair across families is checked exactly too: then precision is exact
    extra = {p for p in predicted if family[p[0]] != family[p[1]] and jaccard(sets[p[0]], sets[p[1]]) >= threshold}
    gold = truth | extra
    tp = len(predicted & gold)
    return {"predicted_pairs": len(predicted), "true_pairs": len(gold), "true_positives": tp,
            "precision": round(tp / len(predicted), 4) if predicted else 1.0,
            "recall": round(tp / len(gold), 4) if gold else 1.0}


def run_once(spark, docs: list[dict], cfg, partitions: int = 4):
    from pipeline.dedup.near import mark_near_duplicates

    df = spark.createDataFrame([{k: d[k] for k in ("id", "source", "text")} for d in docs],
                               "id string, source string, text string").repartition(partitions)
    df = df.localCheckpoint(eager=True)  # time the dedup, not createDataFrame
    t0 = time.perf_counter()
    out, info = mark_near_duplicates(spark, df, cfg)
    rows = [r.asDict() for r in out.select("id", "status", "duplicate_of", "minhash_cluster").collect()]
    return rows, info, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=int, default=2000, help="documents at 1x (at most about 4000)")
    ap.add_argument("--width", type=int, default=2)
    ap.add_argument("--out", type=Path, default=REPO / "build" / "bench" / "near_dedup.json")
    args = ap.parse_args()
    os.environ["SPARK_MASTER"] = f"local[{args.width}]"
    os.environ.setdefault("SPARK_CONF_DIR", str(REPO / "conf"))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pipeline.dedup.near import NearDedupConfig
    from pipeline.run.spark import get_spark

    spark = get_spark("glassbox-bench-near-dedup", {"spark.ui.enabled": "false",
                                                    "spark.sql.shuffle.partitions": str(2 * args.width)})
    cfg = NearDedupConfig()
    largest, family = planted_corpus(4 * args.base, passes=4)
    run_once(spark, largest[: args.base // 4], cfg)  # warm-up: JVM, Python workers, code paths
    result = {"config": vars(cfg), "width": args.width, "sizes": {}}
    for mult in (1, 2, 4):
        docs = largest[: mult * args.base]
        truth, sets = truth_pairs(docs, cfg.ngram, cfg.threshold)
        rows, info, wall = run_once(spark, docs, cfg)
        entry = {"docs": len(docs), "wall_s": round(wall, 2), "info": info,
                 "verified": score(rows, truth, sets, family, cfg.threshold)}
        if mult == 1:
            raw_rows, raw_info, raw_wall = run_once(spark, docs, NearDedupConfig(verify=False))
            entry["unverified"] = {**score(raw_rows, truth, sets, family, cfg.threshold),
                                   "wall_s": round(raw_wall, 2), "info": raw_info}
        result["sizes"][f"{mult}x"] = entry
    t1 = result["sizes"]["1x"]["wall_s"]
    result["t2_over_t1"] = round(result["sizes"]["2x"]["wall_s"] / t1, 2)
    result["t4_over_t1"] = round(result["sizes"]["4x"]["wall_s"] / t1, 2)
    spark.stop()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
