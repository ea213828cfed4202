"""Rebuild the data of the offline lm-eval tasks from bundled text: ``python -m train.evaluation.tasks.build``.

Deterministic (seeded), so the committed JSONL files are what this writes. Source: the WikiText-2 validation
split bundled in quality_models/data/ (see NOTICE), detokenized (``@-@`` escapes, spaces before punctuation),
sentences with ``<unk>`` or quotes skipped.

- ``cloze.jsonl`` (40 items, multiple choice): the first 14 words of a sentence and four candidate
  continuations of six words: the sentence's own and the continuations at the same place of three sentences
  from other paragraphs, in a seeded order. Chance is 25 %; a model that learned English prose does better.
- ``wikitext.jsonl`` (20 passages): the clean sentences of a paragraph (at most 120 words) for rolling
  log-likelihood (word and byte perplexity, bits per byte), from paragraphs the cloze items do not use.
"""
from __future__ import annotations

import json
import random
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
TEXT = HERE.parents[2] / "quality_models" / "data" / "wikitext-2-valid.txt"
SEED = 2024
CONTEXT_WORDS, CONTINUATION_WORDS = 14, 6


def detokenize(line: str) -> str:
    s = line.strip()
    for a, b in ((" @-@ ", "-"), (" @,@ ", ","), (" @.@ ", "."), (" 's ", "'s "), (" n't", "n't"), (" ' ", "' "),
                 ("( ", "("), (" )", ")")):
        s = s.replace(a, b)
    s = re.sub(r" ([,.;:!?%])", r"\1", s)
    return re.sub(r"\s+", " ", s).strip()


def clean_sentences() -> list[list[str]]:
    """Per paragraph, its sentences without ``<unk>`` or quotes, detokenized."""
    out = []
    for line in TEXT.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("="):
            continue
        sents = [detokenize(s) for s in re.split(r"(?<= \.) ", line) if "<unk>" not in s and '"' not in s]
        sents = [s for s in sents if len(s.split()) >= 5]
        if sents:
            out.append(sents)
    return out


def build(n_cloze: int = 40, n_rolling: int = 20) -> tuple[list[dict], list[dict]]:
    rng = random.Random(SEED)
    paras = clean_sentences()
    rng.shuffle(paras)
    long = [i for i, p in enumerate(paras) if any(len(x.split()) >= CONTEXT_WORDS + CONTINUATION_WORDS for x in p)]
    cloze_paras = [next(x for x in paras[i] if len(x.split()) >= CONTEXT_WORDS + CONTINUATION_WORDS)
                   for i in long[:n_cloze * 4]]
    used = set(long[:n_cloze * 4])
    rolling = []
    for i, p in enumerate(paras):
        text = " ".join(p)
        if i not in used and 40 <= len(text.split()) and len(rolling) < n_rolling:
            rolling.append(" ".join(text.split()[:120]))
    cont = [" " + " ".join(p.split()[CONTEXT_WORDS:CONTEXT_WORDS + CONTINUATION_WORDS]) for p in cloze_paras]
    items = []
    for i in range(n_cloze):
        words = cloze_paras[i].split()
        others = rng.sample([j for j in range(len(cloze_paras)) if j != i and cont[j] != cont[i]], 3)
        choices = [cont[i]] + [cont[j] for j in others]
        order = list(range(4))
        rng.shuffle(order)
        items.append({"id": f"cloze-{i:02d}", "context": " ".join(words[:CONTEXT_WORDS]),
                      "choices": [choices[k] for k in order], "label": order.index(0)})
    docs = [{"id": f"wikitext-{i:02d}", "text": t} for i, t in enumerate(rolling)]
    return items, docs


def main() -> None:
    items, docs = build()
    for name, rows in (("cloze.jsonl", items), ("wikitext.jsonl", docs)):
        (HERE / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        print(f"{HERE / name}: {len(rows)} rows")


if __name__ == "__main__":
    main()
