"""From documents to a classifier's examples: paragraph-sized chunks, de-duplicated, split into training and
held-out parts by whole works, classes balanced. Plain Python, deterministic for a seed.

Why chunks: the scorer reads whole documents (their first 20k characters), but the ranking should hold for a
paragraph as for a page, and one long book must not outweigh a hundred web pages. Why split by work: a held-out
paragraph of a book whose other paragraphs were trained on measures memory, not generalization; the group of
a document (``<parent>#pNN`` pieces of one work, a web page's URL) lands wholly on one side, chosen by a hash
of the seed and the group, so adding an input never moves another input's documents across the split. Why
balance per input: the larger class is downsampled evenly across its inputs (round robin), so seven kinds of
prose weigh alike however many documents each has.
"""
from __future__ import annotations

import hashlib
import random
import re
from collections import defaultdict
from dataclasses import dataclass, field

from pipeline.clean.words import segments
from pipeline.score.quality import preprocess
from quality_models.inputs import Doc, InputError

_SENTENCE_END = re.compile(r"(?<=[.!?。！？；;])\s*")


@dataclass(frozen=True)
class ChunkConfig:
    """Consecutive lines (sentences, for a long line) are joined until `min_words`, never past `max_words`
    (word-layer tokens: a Chinese word, an English word or a punctuation mark); a remainder under `min_tail`
    is dropped (a page's last menu line)."""
    min_words: int = 80
    max_words: int = 250
    min_tail: int = 25


@dataclass
class Example:
    text: str
    label: int            # 1 = hq, 0 = lq
    input: str
    group: str
    lang: str | None


@dataclass
class Dataset:
    train: list[Example]
    held_out: list[Example]          # every held-out chunk (the per-input tables read these)
    held_out_balanced: list[Example]  # the headline metrics read these: equal classes
    counts: dict = field(default_factory=dict)


def _count(text: str, lang: str | None) -> int:
    return len(segments(text, lang))


def _pieces(line: str, lang: str | None, max_words: int) -> list[tuple[str, int]]:
    """A line as (piece, tokens) no longer than max_words: whole if short, else its sentences, a sentence
    longer than that cut by characters."""
    n = _count(line, lang)
    if n <= max_words:
        return [(line, n)]
    out = []
    for sent in filter(None, _SENTENCE_END.split(line)):
        k = _count(sent, lang)
        if k <= max_words:
            out.append((sent, k))
            continue
        step = max(1, len(sent) * max_words // k)
        for i in range(0, len(sent), step):
            part = sent[i:i + step]
            out.append((part, _count(part, lang)))
    return out


def chunks(text: str, lang: str | None, cfg: ChunkConfig = ChunkConfig()) -> list[str]:
    """Paragraph-sized pieces of one document, lines joined with a newline (as the scorer sees them)."""
    out: list[str] = []
    buf: list[str] = []
    size = 0
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        for piece, n in _pieces(line, lang, cfg.max_words):
            if buf and size + n > cfg.max_words:
                if size >= cfg.min_tail:
                    out.append("\n".join(buf))
                buf, size = [], 0
            buf.append(piece)
            size += n
            if size >= cfg.min_words:
                out.append("\n".join(buf))
                buf, size = [], 0
    if buf and size >= cfg.min_tail:
        out.append("\n".join(buf))
    return out


def held_out(group: str, seed: int, fraction: float) -> bool:
    """Whether a split unit is held out: a hash of seed and group, so the same unit is always on one side."""
    h = hashlib.sha1(f"{seed}:{group}".encode("utf-8")).digest()
    return int.from_bytes(h[:8], "big") / 2**64 < fraction


def examples(docs: list[Doc], label: int, cfg: ChunkConfig, seen: set[str]) -> list[Example]:
    """The chunks of every document, each once: a chunk whose preprocessed text was already seen (in any
    input, either class: boilerplate repeated across pages) is dropped."""
    out = []
    for d in docs:
        for k, text in enumerate(chunks(d.text, d.lang, cfg)):
            key = preprocess(text, d.lang)
            if not key or key in seen:
                continue
            seen.add(key)
            group = d.group if d.group is not None else f"{d.file}#{k}"
            out.append(Example(text, label, d.input, group, d.lang))
    return out


def balance(pos: list[Example], neg: list[Example], rng: random.Random,
            oversample: bool = False, weights: dict[str, float] | None = None) -> tuple[list[Example], list[Example]]:
    """Both classes cut to the smaller one's size, the larger sampled round robin over its inputs (each input
    shuffled), so every input contributes alike until it runs out; or, with `oversample`, the smaller class
    repeated up to the larger one's size (every example as often as the others, give or take one)."""
    if oversample:
        n = max(len(pos), len(neg))
        return _repeat(pos, n, rng), _repeat(neg, n, rng)
    n = min(len(pos), len(neg))
    return _even(pos, n, rng, weights), _even(neg, n, rng, weights)


def _repeat(items: list[Example], n: int, rng: random.Random) -> list[Example]:
    if len(items) >= n:
        return list(items)
    out = items * (n // len(items))
    rest = items[:]
    rng.shuffle(rest)
    return out + rest[: n - len(out)]


def _even(items: list[Example], n: int, rng: random.Random, weights: dict[str, float] | None = None) -> list[Example]:
    """n of the items, round robin over their inputs (each shuffled); an input of weight w (the input option
    `weight=`, default 1) gives w chunks a round, fractions carried over."""
    if len(items) <= n:
        return list(items)
    by_input: dict[str, list[Example]] = defaultdict(list)
    for e in items:
        by_input[e.input].append(e)
    queues = []
    for name in sorted(by_input):
        q = by_input[name][:]
        rng.shuffle(q)
        queues.append((q, (weights or {}).get(name, 1.0)))
    credit = [0.0] * len(queues)
    out: list[Example] = []
    while len(out) < n:
        for i, (q, w) in enumerate(queues):
            credit[i] += w
            while q and credit[i] >= 1 and len(out) < n:
                out.append(q.pop())
                credit[i] -= 1
            if not q:
                credit[i] = 0.0
    return out


def build(pos_docs: list[Doc], neg_docs: list[Doc], seed: int, holdout: float,
          cfg: ChunkConfig = ChunkConfig(), oversample: bool = False,
          weights: dict[str, float] | None = None) -> Dataset:
    """Chunk, de-duplicate, split by group, balance: the same documents and seed give the same data set."""
    seen: set[str] = set()
    pos = examples(pos_docs, 1, cfg, seen)
    neg = examples(neg_docs, 0, cfg, seen)
    if not pos or not neg:
        raise InputError(f"need examples of both classes, got {len(pos)} positive and {len(neg)} negative "
                         "chunks: check the inputs (and their lang and source filters)")
    split = {True: ([], []), False: ([], [])}
    for cls, items in ((0, pos), (1, neg)):
        for e in items:
            split[held_out(e.group, seed, holdout)][cls].append(e)
    rng = random.Random(seed)
    (train_pos, train_neg), (test_pos, test_neg) = split[False], split[True]
    if not train_pos or not train_neg:
        raise InputError("every chunk of one class fell into the held-out part: give more documents or a "
                         "smaller --holdout")
    bal_pos, bal_neg = balance(train_pos, train_neg, rng, oversample, weights)
    train = bal_pos + bal_neg
    rng.shuffle(train)
    hb_pos, hb_neg = balance(test_pos, test_neg, rng)
    counts = {"positive_chunks": len(pos), "negative_chunks": len(neg),
              "train_per_class": len(bal_pos), "held_out_positive": len(test_pos),
              "held_out_negative": len(test_neg), "held_out_balanced_per_class": len(hb_pos),
              "groups_held_out": len({e.group for e in test_pos + test_neg}),
              "groups_trained": len({e.group for e in train_pos + train_neg})}
    return Dataset(train, test_pos + test_neg, hb_pos + hb_neg, counts)
