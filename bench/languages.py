"""Benchmark: the clean stage and near dedup on every language of a sentence set, as a new user would try them.

From real sentences in many languages (`../shared/data/langid/lingua/sentences/<lang>.txt`, one a line) it
builds, per language:
- clean prose: documents of 10 sentences in three layouts (pipeline/clean/reference_docs.py);
- spam variants: one sentence repeated as lines, a block of three sentences repeated five times, and a
  navigation menu of two-word lines (from `word-pairs/<lang>.txt` when present);
- planted near-duplicates (zh, ja, th by default): a clean document with 3 % of its characters replaced
  and two of its sentences swapped.

It runs the clean stage's record-level function (`pipeline.clean.stage.clean_batch`, the real language
identifier, `clean.languages: null`) and the dedup stage's near-duplicate finder on clean documents plus
their planted copies, and prints kept / rejected-by-reason per language, spam rejection, near-dup
precision and recall, and the clean stage's throughput on English and on Chinese (bytes per second).

Only the odd-numbered lines (2nd, 4th, ...) of each file are used: `python -m pipeline.clean.calibrate` reads the
even-numbered ones, so nothing reported here was calibrated on.

    python bench/languages.py [--sentences DIR] [--docs 10] [--out build/bench/languages.json]
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipeline.clean import reference_docs  # noqa: E402
from pipeline.clean.stage import clean_batch  # noqa: E402
from pipeline.clean.langid import get_identifier  # noqa: E402
from pipeline.clean.settings import CleanConfig  # noqa: E402

DEFAULT_DIR = REPO.parent / "shared" / "data" / "langid" / "lingua" / "sentences"
FOCUS = ("en", "zh", "ja", "ko", "th", "ru", "de", "fr", "es", "ar", "hi", "vi")


def held_out(path: Path) -> list[str]:
    """The odd-numbered lines: the calibrations read the even-numbered ones (reference_docs.sentence_lines)."""
    lines = reference_docs.sentence_lines(path.read_text(encoding="utf-8").splitlines(), "held_out")
    return [s for s in lines if s.strip()]


def spam_documents(sentences: list[str], pairs: list[str], lang: str, rng: random.Random) -> dict[str, str]:
    j = reference_docs.joiner(lang)
    one = rng.choice(sentences)
    block = rng.sample(sentences, 3)
    menu_items = pairs or [" ".join(s.split()[:2]) for s in sentences if s.split()]
    menu = rng.sample(menu_items, min(24, len(menu_items)))
    return {
        "repeated_line": "\n".join([one] * 12),
        "repeated_block": "\n\n".join([j.join(block)] * 5),
        "nav_menu": "\n".join(menu),
    }


def perturb(text: str, share: float, rng: random.Random, lang: str) -> str:
    """`share` of the characters (not spaces or newlines) replaced by other characters of the same text,
    then two sentences (lines, or parts cut at sentence marks) swapped."""
    chars = list(text)
    where = [i for i, c in enumerate(chars) if not c.isspace()]
    pool = [chars[i] for i in where]
    for i in rng.sample(where, max(1, round(share * len(where)))):
        chars[i] = rng.choice(pool)
    out = "".join(chars)
    parts = out.split("\n") if "\n" in out else out.split(reference_docs.joiner(lang) or "。")
    if len(parts) > 3:
        a, b = rng.sample(range(len(parts)), 2)
        parts[a], parts[b] = parts[b], parts[a]
        out = ("\n" if "\n" in out else (reference_docs.joiner(lang) or "。")).join(parts)
    return out


def run_clean(docs: list[str], cfg: CleanConfig, ident) -> list[dict]:
    return clean_batch(docs, ident, cfg)


def near_dedup(texts: list[str], ids: list[str]) -> set[str]:
    """Ids the dedup stage's near-duplicate step removes (the local path's functions, default settings)."""
    import numpy as np

    from pipeline.dedup.sketch import sketch_arrays
    from pipeline.dedup.local import near_decisions
    from pipeline.dedup.settings import NearDedupConfig
    cfg = NearDedupConfig()
    fp = sketch_arrays(texts, cfg.ngram, cfg.num_perm, cfg.bands, cfg.rows, cfg.seed, cfg.char_ngram)
    n = len(ids)
    decided, _ = near_decisions(ids, [None] * n, np.ones(n, bool), np.zeros(n, np.int64), fp, cfg)
    return {x for x, (_, dup) in decided.items() if dup is not None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--docs", type=int, default=10, help="clean documents per language")
    ap.add_argument("--spam", type=int, default=3, help="documents of each spam kind per language")
    ap.add_argument("--near-langs", default="zh,ja,th")
    ap.add_argument("--near-docs", type=int, default=40, help="planted near-duplicate pairs per language")
    ap.add_argument("--out", type=Path, default=REPO / "build" / "bench" / "languages.json")
    args = ap.parse_args(argv)
    if not args.sentences.is_dir():
        print(f"no sentence set at {args.sentences} (pass --sentences DIR with <lang>.txt files)")
        return 2
    ident = get_identifier()
    cfg = CleanConfig(languages=None)
    pairs_dir = args.sentences.parent / "word-pairs"
    per_lang: dict[str, dict] = {}
    spam: dict[str, dict[str, int]] = defaultdict(lambda: {"n": 0, "rejected": 0})
    reasons_all: Counter = Counter()
    timing = {}
    for path in sorted(args.sentences.glob("*.txt")):
        lang = path.stem
        sents = held_out(path)
        docs = reference_docs.documents(sents, lang, args.docs, seed=1)
        rows = run_clean(docs, cfg, ident)
        reasons = Counter(r["reason"] for r in rows if r["reason"])
        reasons_all.update(reasons)
        kept = sum(1 for r in rows if not r["reason"])
        pairs_file = pairs_dir / path.name
        pairs = held_out(pairs_file) if pairs_file.exists() else []
        rng = random.Random(f"spam/{lang}")
        spam_kept = []
        for _ in range(args.spam):
            spam_docs = spam_documents(sents, pairs, lang, rng)
            for kind, r in zip(spam_docs, run_clean(list(spam_docs.values()), cfg, ident)):
                spam[kind]["n"] += 1
                spam[kind]["rejected"] += bool(r["reason"])
                if not r["reason"]:
                    spam_kept.append(kind)
        per_lang[lang] = {"docs": len(docs), "kept": kept, "rejected": dict(reasons.most_common()),
                          "langs_seen": dict(Counter(r["lang"] for r in rows)), "spam_kept": spam_kept}
    n = sum(v["docs"] for v in per_lang.values())
    k = sum(v["kept"] for v in per_lang.values())
    print(f"clean prose kept: {k} / {n} = {k / n:.3f}")
    print(f"{'lang':5} {'kept':>5}  rejected by reason (identified as)")
    for lang, v in per_lang.items():
        mark = "*" if lang in FOCUS else " "
        print(f"{lang:4}{mark} {v['kept']:>2}/{v['docs']:<2}  {v['rejected'] or ''} {v['langs_seen'] if set(v['langs_seen']) != {lang} else ''}"
              f"{'  spam kept: ' + ','.join(v['spam_kept']) if v['spam_kept'] else ''}")
    for kind, s in spam.items():
        print(f"spam {kind}: rejected {s['rejected']} / {s['n']} = {s['rejected'] / s['n']:.3f}")
    print("reasons over all clean prose:", dict(reasons_all.most_common()))

    # near duplicates in unspaced scripts: clean documents plus one perturbed copy of half of them
    near = {}
    for lang in [x for x in args.near_langs.split(",") if x]:
        sents = held_out(args.sentences / f"{lang}.txt")
        docs = reference_docs.documents(sents, lang, args.near_docs * 2, seed=2)
        rng = random.Random(f"near/{lang}")
        texts, ids = list(docs), [f"{lang}-clean-{i}" for i in range(len(docs))]
        for i in range(args.near_docs):
            texts.append(perturb(docs[i], 0.03, rng, lang))
            ids.append(f"{lang}-copy-{i}")
        removed = near_dedup(texts, ids)
        # each planted pair should lose exactly one member; a clean document unrelated to any copy must stay
        pairs_hit = sum(1 for i in range(args.near_docs) if {f"{lang}-clean-{i}", f"{lang}-copy-{i}"} & removed)
        false = sorted(r for r in removed if r.startswith(f"{lang}-clean-") and int(r.rsplit("-", 1)[1]) >= args.near_docs)
        near[lang] = {"pairs": args.near_docs, "removed_pairs": pairs_hit, "recall": pairs_hit / args.near_docs,
                      "clean_removed": len(false)}
        print(f"near-dup {lang}: {pairs_hit}/{args.near_docs} planted pairs removed (recall "
              f"{pairs_hit / args.near_docs:.3f}), clean documents removed: {len(false)}")

    # clean-stage throughput per byte, English against Chinese
    for lang in ("en", "zh"):
        sents = held_out(args.sentences / f"{lang}.txt")
        docs = reference_docs.documents(sents, lang, 200, seed=3)
        size = sum(len(d.encode()) for d in docs)
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            run_clean(docs, cfg, ident)
            best = min(best, time.perf_counter() - t0)
        timing[lang] = size / best
        print(f"clean stage {lang}: {size / best / 1e6:.2f} MB/s ({len(docs)} documents, {size / 1e3:.0f} kB)")
    print(f"Chinese / English bytes per second: {timing['zh'] / timing['en']:.2f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"kept": k, "docs": n, "per_language": per_lang, "spam": spam,
                                    "near": near, "bytes_per_s": timing}, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
