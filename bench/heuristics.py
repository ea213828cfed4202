"""Benchmark: the clean stage's heuristic signals (pipeline.clean.heuristics.compute_signals), per document and
against document size.

    python bench/heuristics.py

Prints µs per document on real text (Common Crawl documents and WikiText-2 windows from ../shared/data) and
the cost per character of one 500 K-character text against one 5 K-character text: a ratio near 1 means the
signals grow linearly with the text; a pathological regex or quadratic line handling shows as a ratio of 10
or more. Timed here, not in the tests, because wall-clock limits fail on a loaded machine.
"""
from __future__ import annotations

import gzip
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipeline.clean.heuristics import compute_signals  # noqa: E402

DATA = REPO.parent / "shared" / "data"


def real_texts() -> list[tuple[str, str]]:
    docs = []
    web = DATA / "text" / "web" / "dolma-cc-documents-000.json.gz"
    wiki = DATA / "text" / "reference" / "wikitext-2-valid.txt"
    if web.is_file():
        with gzip.open(web, "rt", encoding="utf-8") as f:
            docs += [("dolma-cc", json.loads(line)["text"]) for line in f]
    if wiki.is_file():
        paras = [p.strip() for p in wiki.read_text(encoding="utf-8").splitlines() if len(p.strip()) > 200]
        cur: list[str] = []
        for p in paras:
            cur.append(p)
            if sum(map(len, cur)) > 5000:
                docs.append(("wikitext", "\n\n".join(cur)))
                cur = []
    return docs


def best_of(fn, text: str, rounds: int = 5) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn(text)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    docs = real_texts()
    if not docs:
        sys.exit(f"no reference text under {DATA}")
    for source in sorted({s for s, _ in docs}):
        texts = [t for s, t in docs if s == source]
        t0 = time.perf_counter()
        for _ in range(3):
            for t in texts:
                compute_signals(t)
        us = (time.perf_counter() - t0) / (3 * len(texts)) * 1e6
        kb = sum(map(len, texts)) / len(texts) / 1000
        print(f"compute_signals {source}: {us:.0f} µs/doc, mean {kb:.1f} K chars")
    small = docs[0][1][:5000]
    big = (" ".join(t for _, t in docs) * 4)[:500_000]
    t_small, t_big = best_of(compute_signals, small), best_of(compute_signals, big)
    ratio = (t_big / len(big)) / (t_small / len(small))
    print(f"5 K chars: {t_small * 1e3:.2f} ms, 500 K chars: {t_big * 1e3:.1f} ms; "
          f"cost per char, big / small: {ratio:.2f} (linear ~1; superlinear >= 10)")


if __name__ == "__main__":
    main()
