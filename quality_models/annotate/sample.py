"""Which documents are graded: N of a corpus's documents, stratified by (source, lang).

A grader's budget is spent where the corpus is: each stratum gets its proportional share of N (largest
remainders), but every non-empty stratum gets at least one document while N allows, so a small source or
language is never left without a label. Within a stratum the order is a hash of the seed and the document's id
(or text), not the files' order: the same corpus and seed give the same sample, and a larger N extends a smaller
one's sample of each stratum rather than drawing another.
"""
from __future__ import annotations

import hashlib
from collections import Counter, defaultdict

from quality_models.inputs import Doc

Stratum = tuple[str, str]


def stratum(doc: Doc) -> Stratum:
    return (doc.source or "unknown", doc.lang or "unknown")


def key(doc: Doc) -> str:
    """A document's id in the label file: its own id, else a hash of its text."""
    return doc.id or "sha256:" + hashlib.sha256(doc.text.encode("utf-8")).hexdigest()[:24]


def _rank(seed: int, doc_key: str) -> str:
    return hashlib.sha256(f"{seed}\0{doc_key}".encode("utf-8")).hexdigest()


def select(docs: list[Doc], langs: list[str], sources: list[str], skipped: Counter) -> list[Doc]:
    """The documents of the --lang and --source values asked for (all when none), each id once."""
    out, seen = [], set()
    for d in docs:
        if langs and d.lang not in langs:
            skipped[f"lang is not {'/'.join(langs)}"] += 1
        elif sources and d.source not in sources:
            skipped[f"source is not {'/'.join(sources)}"] += 1
        elif key(d) in seen:
            skipped["repeated id"] += 1
        else:
            seen.add(key(d))
            out.append(d)
    return out


def allocate(sizes: dict[Stratum, int], n: int) -> dict[Stratum, int]:
    """How many documents each stratum gives: proportional to its size, at least one each while N allows,
    never more than it holds, summing to min(N, all documents)."""
    total = sum(sizes.values())
    n = min(n, total)
    strata = sorted(s for s, size in sizes.items() if size > 0)
    if n <= 0 or not strata:
        return {s: 0 for s in sizes}
    if n < len(strata):                     # too few for one each: the largest strata (ties: by name)
        chosen = sorted(strata, key=lambda s: (-sizes[s], s))[:n]
        return {s: int(s in chosen) for s in sizes}
    quota = {s: n * sizes[s] / total for s in strata}
    alloc = {s: min(sizes[s], max(1, int(quota[s]))) for s in strata}
    while sum(alloc.values()) > n:         # the minimum of one pushed past N: take from the most over quota
        over = [s for s in strata if alloc[s] > 1]
        alloc[max(over, key=lambda s: (alloc[s] - quota[s], s))] -= 1
    while sum(alloc.values()) < n:         # largest remainders first, among strata with documents to spare
        room = [s for s in strata if alloc[s] < sizes[s]]
        alloc[max(room, key=lambda s: (quota[s] - alloc[s], sizes[s], s))] += 1
    return {s: alloc.get(s, 0) for s in sizes}


def stratified(docs: list[Doc], n: int, seed: int) -> list[Doc]:
    """N documents (all of them when fewer), allocated by ``allocate`` and drawn by the seed's hash order; the
    result is in that hash order too, so a run stopped early has graded every stratum about evenly."""
    by: dict[Stratum, list[Doc]] = defaultdict(list)
    for d in docs:
        by[stratum(d)].append(d)
    for s in by:
        by[s].sort(key=lambda d: _rank(seed, key(d)))
    alloc = allocate({s: len(v) for s, v in by.items()}, n)
    picked = [d for s, v in by.items() for d in v[:alloc[s]]]
    return sorted(picked, key=lambda d: _rank(seed, key(d)))
