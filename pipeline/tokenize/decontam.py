"""Benchmark decontamination: word n-gram overlap between documents and benchmark items.

Both sides go through the exact-dedup normalisation (NFKC, case-folded, punctuation and `_` dropped,
words split on whitespace), so "Janet’s ducks" and "janets ducks" differ but "Janet's ducks!" and
"janet s ducks" do not. A document is contaminated when it shares at least one n-gram (13 words by
default, as in GPT-3's decontamination) with a benchmark item; it is reported with the item it
shares the most n-grams with, and every other item it touches.

Each configured field of an item (e.g. HumanEval's `prompt` and `canonical_solution`) is indexed on
its own, so no n-gram spans two fields. A field text shorter than n words cannot yield an n-gram:
it is matched as a whole (its full normalised word sequence must appear in the document) when it
has at least `min_words` words, and skipped and counted otherwise (a 3-word answer such as
"return a b" would flag half of all code).

Plain Python plus the mapInArrow batch function; the index is built once per worker process.
"""
from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from pipeline.dedup.exact import exact_key_text
from pipeline.tokenize.settings import Benchmark, DecontamConfig

REASON = "contamination"
MAX_LISTED = 10_000  # matches listed one by one in the stats; beyond that, counts only


class BenchmarkError(ValueError):
    """A benchmark file that cannot serve as one (no item has the configured fields)."""


def words(text: str) -> list[str]:
    return exact_key_text(text).split()


@dataclass(frozen=True)
class Item:
    key: str                 # "<benchmark>:<id or line number>"
    texts: tuple[str, ...]   # the configured fields that are present


def _open_lines(path: str) -> Iterator[str]:
    with open(path, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    opener = gzip.open if gz else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
        yield from fh


def read_benchmark(bench: Benchmark) -> tuple[list[Item], dict]:
    """Items of one benchmark (JSONL, plain or gzip) and counts of what could not be used."""
    items: list[Item] = []
    info = {"items": 0, "bad_lines": 0, "missing_fields": 0, "files": list(bench.files)}
    seen_keys: set[str] = set()
    for f in bench.files:
        prefix = bench.name if len(bench.files) == 1 else f"{bench.name}:{f.rsplit('/', 1)[-1]}"
        for lineno, line in enumerate(_open_lines(f), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                info["bad_lines"] += 1
                continue
            if not isinstance(obj, dict):
                info["bad_lines"] += 1
                continue
            texts = tuple(str(obj[k]) for k in bench.fields if obj.get(k) not in (None, ""))
            if not texts:
                info["missing_fields"] += 1
                continue
            ident = obj.get(bench.id_field) if bench.id_field else None
            key = f"{bench.name}:{ident}" if ident not in (None, "") else f"{prefix}:{lineno}"
            if key in seen_keys:  # an id used twice: keep both, told apart by line number
                key = f"{prefix}:{lineno}"
            seen_keys.add(key)
            items.append(Item(key, texts))
    info["items"] = len(items)
    if not items:
        raise BenchmarkError(
            f"decontaminate.benchmarks.{bench.name}.fields: no item of {', '.join(bench.files)} has any of "
            f"{bench.fields} ({info['bad_lines']} unreadable lines); name the fields that hold the text")
    return items, info


def load_benchmarks(cfg: DecontamConfig) -> tuple[list[Item], dict]:
    items: list[Item] = []
    info = {}
    for bench in cfg.benchmarks:
        got, info[bench.name] = read_benchmark(bench)
        items.extend(got)
    return items, info


def fingerprint(items: Iterable[Item], ngram: int, min_words: int) -> str:
    """Identifies an index, so a worker process builds each index once and rebuilds on change."""
    h = hashlib.sha256(f"{ngram}/{min_words}".encode())
    for it in items:
        h.update(json.dumps([it.key, it.texts]).encode("utf-8"))
    return h.hexdigest()


class NgramIndex:
    """n-gram -> items holding it, plus whole short texts by length."""

    def __init__(self, items: list[Item], ngram: int = 13, min_words: int = 8):
        self.n = ngram
        self.keys = [it.key for it in items]
        self.grams: dict[str, int | tuple[int, ...]] = {}
        self.whole: dict[int, dict[str, int | tuple[int, ...]]] = {}
        self.stats = Counter()
        for i, it in enumerate(items):
            bench = it.key.split(":", 1)[0]
            for text in it.texts:
                w = words(text)
                if len(w) >= ngram:
                    grams = {" ".join(w[j:j + ngram]) for j in range(len(w) - ngram + 1)}
                    for g in grams:
                        self._add(self.grams, g, i)
                    self.stats[f"{bench}.ngrams"] += len(grams)
                elif len(w) >= min_words:
                    self._add(self.whole.setdefault(len(w), {}), " ".join(w), i)
                    self.stats[f"{bench}.whole_texts"] += 1
                else:
                    self.stats[f"{bench}.skipped_short_texts"] += 1

    @staticmethod
    def _add(table: dict, key: str, i: int) -> None:
        # Most n-grams belong to one item: store an int, a tuple only when shared.
        have = table.get(key)
        if have is None:
            table[key] = i
        elif isinstance(have, int):
            if have != i:
                table[key] = (have, i)
        elif i not in have:
            table[key] = have + (i,)

    def match(self, text: str) -> list[tuple[str, int]]:
        """(item key, shared n-grams) for every item the text touches, most shared first."""
        w = words(text or "")
        hits: Counter = Counter()
        for size, table in [(self.n, self.grams)] + sorted(self.whole.items()):
            if not table or len(w) < size:
                continue
            for g in {" ".join(w[j:j + size]) for j in range(len(w) - size + 1)}:
                found = table.get(g)
                if found is None:
                    continue
                for i in (found,) if isinstance(found, int) else found:
                    hits[i] += 1
        return sorted(((self.keys[i], c) for i, c in hits.items()), key=lambda kc: (-kc[1], kc[0]))


_INDEXES: dict[str, NgramIndex] = {}


def get_index(fp: str, load_items: Callable[[], list[Item]], ngram: int, min_words: int) -> NgramIndex:
    """One index per worker process and fingerprint (Python workers are reused across tasks)."""
    if fp not in _INDEXES:
        _INDEXES.clear()
        _INDEXES[fp] = NgramIndex(load_items(), ngram, min_words)
    return _INDEXES[fp]


def decontam_partition(load_items: Callable[[], list[Item]], fp: str, cfg: DecontamConfig, input_schema):
    """mapInArrow function: documents in; the same rows plus `contamination` (matched item keys,
    best first; null when clean), `status`, `reason`, `detail` (the best-matching item) out."""
    import pyarrow as pa

    out_schema = pa.schema(list(input_schema) + [pa.field("contamination", pa.list_(pa.string())),
                                                 pa.field("status", pa.string()),
                                                 pa.field("reason", pa.string()),
                                                 pa.field("detail", pa.string())])

    def run(batches):
        index = get_index(fp, load_items, cfg.ngram, cfg.min_words) if fp else None
        for batch in batches:
            matches = [index.match(t) if index else [] for t in batch.column("text").to_pylist()]
            hit = [bool(m) for m in matches]
            drop = [h and cfg.remove for h in hit]
            yield pa.RecordBatch.from_arrays(batch.columns + [
                pa.array([[k for k, _ in m] if m else None for m in matches], pa.list_(pa.string())),
                pa.array(["rejected" if d else "kept" for d in drop], pa.string()),
                pa.array([REASON if d else None for d in drop], pa.string()),
                pa.array([m[0][0] if d else None for m, d in zip(matches, drop)], pa.string()),
            ], schema=out_schema)
    return run


def index_stats(items, dc) -> dict:
    """What the index holds per benchmark (n-grams, whole short texts, skipped short texts)."""
    return dict(sorted(NgramIndex(items, dc.ngram, dc.min_words).stats.items()))
