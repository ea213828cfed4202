"""Reference documents of one language, for calibration and for measuring what the clean stage keeps.

Two kinds of reference: whole documents of real prose by kind (a textbook section, a law, an abstract:
`prose_documents`, split into a calibration half and a held-out half by parent work), and, for languages
without such a set, documents made of real sentences. The same builders serve `python -m
pipeline.clean.calibrate` and the benches (bench/languages.py, bench/chinese_prose.py), so both see
documents of the same shapes.

The split is made here and only here, for every calibration (the language table, pipeline/clean/calibrate.py;
the content-safety thresholds, pipeline/clean/safety_calibrate.py) and everything that measures them (the
benches, tests/pipeline/clean): prose by `half_of` (a hash of the parent work), sentence files by
`sentence_lines` (even-numbered lines calibrate, odd-numbered ones are held out). So "held out" means held out
from all of them.

A sentence document is `sentences_per_doc` consecutive-in-a-shuffle sentences in one of three layouts, in turn:
one paragraph, one sentence per line, or paragraphs of two to four sentences separated by blank lines.
Sentences of Chinese and Japanese are joined without a space, as they are written.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import random
from pathlib import Path

LAYOUTS = ("paragraph", "lines", "paragraphs")
_NO_SPACE = {"zh", "ja", "yue", "wuu"}  # sentences follow each other without a space


def joiner(lang: str) -> str:
    return "" if lang in _NO_SPACE else " "


def layout(sentences: list[str], lang: str, kind: str, rng: random.Random) -> str:
    """One document of `sentences` in layout `kind`."""
    j = joiner(lang)
    if kind == "paragraph":
        return j.join(sentences)
    if kind == "lines":
        return "\n".join(sentences)
    paras, i = [], 0
    while i < len(sentences):
        k = rng.randint(2, 4)
        paras.append(j.join(sentences[i:i + k]))
        i += k
    return "\n\n".join(paras)


def documents(sentences: list[str], lang: str, n_docs: int, sentences_per_doc: int = 10,
              seed: int = 0) -> list[str]:
    """`n_docs` documents drawn from `sentences` (each sentence used about equally often), layouts in turn."""
    rng = random.Random(f"{seed}/{lang}")
    pool = [s.strip() for s in sentences if s.strip()]
    if not pool:
        return []
    order: list[str] = []
    docs = []
    for d in range(n_docs):
        if len(order) < sentences_per_doc:
            more = pool[:]
            rng.shuffle(more)
            order.extend(more)
        take, order = order[:sentences_per_doc], order[sentences_per_doc:]
        docs.append(layout(take, lang, LAYOUTS[d % len(LAYOUTS)], rng))
    return docs


# --- whole documents: reference prose by language and kind -------------------------------------------------
# `<root>/<lang>/<kind>/*.jsonl.gz`, one {"id", "text", ...} a line (../shared/data/prose). Pieces of one work
# share a parent (`<parent>#pNN`) and always fall in the same half, so a book or a law is either read by the
# calibration or kept for measuring it, never both.
HALVES = ("calibration", "held_out")


def parent_of(doc_id: str) -> str:
    return doc_id.split("#", 1)[0]


def half_of(doc_id: str) -> str:
    """The half a document belongs to, by a hash of its parent work (salted: not the hash the set's own
    split used, which would put every document here in one half)."""
    digest = hashlib.sha1(f"glassbox-calibration:{parent_of(doc_id)}".encode("utf-8")).digest()
    return HALVES[digest[0] & 1]


def sentence_lines(lines: list[str], half: str) -> list[str]:
    """The lines of a one-sentence-a-line reference file in one half: the even-numbered ones (0, 2, ...) are
    read by the calibrations, the odd-numbered ones are held out."""
    if half not in HALVES:
        raise ValueError(f"half must be one of {HALVES}, got {half!r}")
    return lines[HALVES.index(half)::2]


def prose_documents(root: Path, lang: str, half: str | None = "calibration") -> dict[str, list[dict]]:
    """kind -> documents ({"id", "text"}) of one language's reference prose, in one half (None: both)."""
    out: dict[str, list[dict]] = {}
    for f in sorted((root / lang).glob("*/*.jsonl.gz")):
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            docs = [json.loads(line) for line in fh if line.strip()]
        keep = [{"id": d["id"], "text": d["text"]} for d in docs if half is None or half_of(d["id"]) == half]
        out.setdefault(f.parent.name, []).extend(keep)
    return {kind: docs for kind, docs in out.items() if docs}
