"""Documents made of real sentences of one language, for calibration and for measuring what the clean stage
keeps: the same builder serves `python -m pipeline.clean.calibrate` (reference prose) and bench/languages.py
(held-out prose and planted spam), so both see documents of the same shapes.

A document is `sentences_per_doc` consecutive-in-a-shuffle sentences in one of three layouts, in turn:
one paragraph, one sentence per line, or paragraphs of two to four sentences separated by blank lines.
Sentences of Chinese and Japanese are joined without a space, as they are written.
"""
from __future__ import annotations

import random

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
