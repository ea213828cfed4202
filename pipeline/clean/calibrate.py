"""Calibrate the clean stage per language from reference prose, the FineWeb-2 way: measure each signal's
distribution on documents of real text in that language and put each threshold where a chosen share of
them passes.

    python -m pipeline.clean.calibrate --reference DIR [--half even|all] [--out table.json | --builtin]

DIR holds `<lang>.txt` files of reference text, one sentence (or paragraph) a line, for any ISO code the
language identifier gives. Lines become documents of 10 sentences in three layouts
(pipeline/clean/reference_docs.py). Then, per language:

- stop words: its most frequent words (each at least 0.5 % of the words; 5 to 30 of them); English keeps
  Gopher's eight;
- rule thresholds, relax-only: a rule that rejects when `signal > t` gets max(t, the `--pass-share`
  quantile of the signal); `signal < t` gets min(t, the 1 - pass-share quantile). A language whose prose
  passes the published English threshold keeps it; one whose prose does not (Chinese words are 1.6
  characters long, Hindi lines end in a danda) gets the value at which that share of its prose passes.
  The word-count limits first scale with the language's words per sentence (a sentence says about as
  much in any language, a character does not: 50 English words are about 2.9 sentences, which in Chinese
  hold about 78 words). English is not recalibrated;
- language-ID confidence: the 2 % quantile of the score its prose gets, recorded only where it is below
  `clean.min_lang_score` (elsewhere the global threshold applies, whatever the user sets it to);
- confusable languages: pairs whose prose the identifier labels as the other at least 10 % of the time
  while still ranking the right one in its top three, plus the known macro-language pairs.

The built-in table (pipeline/clean/language_table.json, data: one language a line) was made from the lingua
sentence set's even-numbered lines with `--builtin`; bench/languages.py measures on the odd-numbered ones.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from pathlib import Path

from pipeline.clean import reference_docs
from pipeline.clean.heuristics import STOPWORDS_EN, compute_signals
from pipeline.clean.boilerplate import clean_lines
from pipeline.clean.normalize import normalize_text
from pipeline.clean.settings import DEFAULT_RULES, CleanConfig
from pipeline.clean.words import words

# Languages lid.176 labels with another code or merges with a neighbour (same written standard, or macro-language).
KNOWN_CONFUSABLE = [["bs", "hr", "sr", "sh"], ["nb", "no", "nn"], ["ms", "id"], ["zh", "yue", "wuu"]]
SCALED = {"gopher_too_few_words", "gopher_too_many_words"}  # count limits: scaled by words per sentence
SENTENCES_PER_DOC = 10
NOT_CALIBRATED = {"c4_lorem_ipsum"}
TABLE_FILE = Path(__file__).with_name("language_table.json")  # the built-in table (pipeline/clean/languages.py)


def quantile(values: list[float], q: float) -> float:
    """The q-quantile of values (linear interpolation between order statistics)."""
    v = sorted(values)
    if not v:
        return math.nan
    pos = q * (len(v) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def derive_stopwords(docs: list[str], lang: str, min_share: float = 0.005, lo: int = 5, hi: int = 30) -> list[str]:
    """The language's most frequent words (letters only), each at least `min_share` of all words."""
    counts = Counter(w for d in docs for w in words(d, lang) if any(c.isalpha() for c in w))
    total = sum(counts.values())
    if not total:
        return []
    ranked = [w for w, _ in counts.most_common(hi)]
    frequent = [w for w in ranked if counts[w] / total >= min_share]
    return frequent if len(frequent) >= lo else ranked[:lo]


def prepared(docs: list[str], cfg: CleanConfig) -> list[str]:
    """The documents as the clean stage sees them before its signals (normalised, boilerplate lines off)."""
    return [clean_lines(normalize_text(d), cfg)[0] for d in docs]


def words_per_char(docs: list[str], lang: str) -> float:
    chars = sum(len(d) for d in docs)
    return sum(len(words(d, lang)) for d in docs) / chars if chars else math.nan


def words_per_sentence(docs: list[str], lang: str) -> float:
    """Words per sentence of reference documents (SENTENCES_PER_DOC sentences each): a sentence says about
    as much in any language, a character does not (a Chinese one holds about three English ones)."""
    return sum(len(words(d, lang)) for d in docs) / (len(docs) * SENTENCES_PER_DOC) if docs else math.nan


def calibrate_rules(signals: list[dict], density: float, density_en: float, pass_share: float) -> dict:
    """reason -> threshold for the rules whose published value this language's prose does not pass."""
    out = {}
    for r in DEFAULT_RULES:
        if r["reason"] in NOT_CALIBRATED:
            continue
        t = r["value"]
        if r["reason"] in SCALED and density_en > 0:
            t = round(t * density / density_en)
        values = [s[r["signal"]] for s in signals]
        if r["op"] in (">", ">="):
            v = max(t, quantile(values, pass_share))
        else:
            v = min(t, quantile(values, 1 - pass_share))
        v = round(v, 4) if isinstance(v, float) else v
        if v != r["value"]:
            out[r["reason"]] = v
    return out


def language_scores(docs: list[str], lang: str, identifier, groups: list[list[str]]) -> tuple[list[float], Counter, Counter]:
    """(scores of the docs identified as `lang` or a confusable neighbour, labels given, labels in the top
    three). Uses the clean stage's own rule (pipeline/clean/stage.py identify)."""
    from pipeline.clean.stage import identify
    from pipeline.clean.languages import Profiles
    profiles = Profiles(CleanConfig(languages=None, calibration="none", confusable=groups))
    tops = identifier.predict_top(docs, 3)
    scores, labels, seen = [], Counter(), Counter()
    for doc, top in zip(docs, tops):
        got, score = identify(top, doc, profiles)
        labels[got] += 1
        seen.update(label for label, _ in top)
        if got in profiles.group(lang):
            scores.append(score)
    return scores, labels, seen


def confusable_groups(confusions: dict[str, tuple[Counter, Counter]], n_docs: dict[str, int]) -> list[list[str]]:
    """Known pairs, plus L-M where at least 10 % of L's prose is labelled M and L is in the top three of
    at least half of L's documents (the identifier knows L, it only ranks M first)."""
    groups = [list(g) for g in KNOWN_CONFUSABLE]
    for lang, (labels, seen) in confusions.items():
        for other, k in labels.items():
            if other != lang and k >= 0.1 * n_docs[lang] and seen[lang] >= 0.5 * n_docs[lang]:
                if not any(lang in g and other in g for g in groups):
                    groups.append(sorted([lang, other]))
    return groups


def sentence_documents(reference: Path, half: str, n_docs: int, only: list[str] | None = None) -> dict[str, list[str]]:
    """lang -> documents of SENTENCES_PER_DOC sentences from `<lang>.txt` files of one sentence a line,
    as the clean stage sees them (prepared)."""
    files = sorted(reference.glob("*.txt"))
    if only:
        files = [f for f in files if f.stem in only]
    if not files:
        raise SystemExit(f"calibrate: no <lang>.txt files in {reference}")
    cfg = CleanConfig(languages=None, calibration="none")
    docs = {}
    for f in files:
        lines = f.read_text(encoding="utf-8").splitlines()
        lines = lines[0::2] if half == "even" else lines
        docs[f.stem] = prepared(reference_docs.documents(lines, f.stem, n_docs, SENTENCES_PER_DOC, seed=0), cfg)
    return docs


def language_row(lang: str, docs: list[str], density_en: float, pass_share: float, identifier=None,
                 groups: list[list[str]] | None = None) -> dict:
    """One language's row of the table from its reference documents."""
    stop = sorted(STOPWORDS_EN) if lang == "en" else derive_stopwords(docs, lang)
    density = words_per_sentence(docs, lang)
    row: dict = {"docs": len(docs), "words_per_char": round(words_per_char(docs, lang), 4),
                 "words_per_sentence": round(density, 2), "stopwords": stop}
    if lang != "en":
        signals = [compute_signals(d, lang, frozenset(stop)) for d in docs]
        row["rules"] = calibrate_rules(signals, density, density_en, pass_share)
    if identifier is not None:
        scores, labels, _ = language_scores(docs, lang, identifier, groups or [list(g) for g in KNOWN_CONFUSABLE])
        row["identified_as"] = dict(labels.most_common(4))
        low = math.floor(quantile(scores, 0.02) * 100) / 100 if scores else None
        if low is not None and low < CleanConfig().min_lang_score:  # only a relaxation is recorded: else the global applies
            row["min_lang_score"] = max(0.0, low)
    return row


def calibrate(reference: Path, half: str = "even", n_docs: int = 300, pass_share: float = 0.99,
              identifier=None, only: list[str] | None = None) -> dict:
    docs = sentence_documents(reference, half, n_docs, only)
    density_en = words_per_sentence(docs["en"], "en") if "en" in docs else 20.0
    groups = [list(g) for g in KNOWN_CONFUSABLE]
    if identifier is not None:
        confusions = {}
        for lang, ds in docs.items():
            _, labels, seen = language_scores(ds, lang, identifier, groups)
            confusions[lang] = (labels, seen)
        groups = confusable_groups(confusions, {lang: len(ds) for lang, ds in docs.items()})
    table: dict = {"languages": {lang: language_row(lang, ds, density_en, pass_share, identifier, groups)
                                 for lang, ds in docs.items()}}
    table["confusable"] = groups
    table["method"] = {
        "what": "FineWeb-2-style relax-only calibration: each rule keeps its published value unless fewer than "
                "pass_share of the language's reference documents pass it, then it moves to the value they pass at",
        "pass_share": pass_share, "docs_per_language": n_docs, "sentences_per_doc": SENTENCES_PER_DOC,
        "layouts": list(reference_docs.LAYOUTS), "reference": reference.name, "lines": half,
        "lid_score": "2% quantile of the language's reference scores, recorded only where below clean.min_lang_score",
        "stopwords": "words of at least 0.5% frequency, 5 to 30 (en: Gopher's eight)",
    }
    return table


def _one_line(value) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def table_text(table: dict) -> str:
    """The table as JSON with one entry a line (a language, a confusable group, a method note), keys
    sorted: a recalibration shows in a diff as the rows that changed. Both --out and --builtin write this."""
    parts = []
    for key in sorted(table):
        value = table[key]
        if isinstance(value, dict):
            inner = [f"  {_one_line(k)}: {_one_line(v)}" for k, v in sorted(value.items())]
            parts.append(f" {_one_line(key)}: {{\n" + ",\n".join(inner) + "\n }")
        elif isinstance(value, list):
            parts.append(f" {_one_line(key)}: [\n" + ",\n".join(f"  {_one_line(v)}" for v in value) + "\n ]")
        else:
            parts.append(f" {_one_line(key)}: {_one_line(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def write_table(table: dict, path: Path) -> None:
    path.write_text(table_text(table), encoding="utf-8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.clean.calibrate", description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", type=Path, required=True, help="folder of <lang>.txt reference text")
    ap.add_argument("--half", choices=("even", "all"), default="all",
                    help="even: every other line (keep the rest for evaluation); all: every line")
    ap.add_argument("--docs", type=int, default=300, help="documents built per language")
    ap.add_argument("--pass-share", type=float, default=0.99)
    ap.add_argument("--languages", help="comma-separated codes (default: every file)")
    ap.add_argument("--lid-model", help="language-ID model (default: models/lid.176.ftz)")
    out = ap.add_mutually_exclusive_group(required=True)
    out.add_argument("--out", type=Path, help="write a table for clean.calibration: FILE.json")
    out.add_argument("--builtin", action="store_true", help=f"rewrite the built-in table ({TABLE_FILE.name} in pipeline/clean/)")
    args = ap.parse_args(argv)
    from pipeline.clean.langid import get_identifier
    table = calibrate(args.reference, args.half, args.docs, args.pass_share, get_identifier(args.lid_model),
                      args.languages.split(",") if args.languages else None)
    if args.builtin:
        write_table(table, TABLE_FILE)
        print(f"wrote {TABLE_FILE} ({len(table['languages'])} languages)")
    else:
        write_table(table, args.out)
        print(f"wrote {args.out} ({len(table['languages'])} languages); use it with clean.calibration: {args.out}")
    for lang, row in table["languages"].items():
        print(f"{lang}: min_lang_score {row.get('min_lang_score', '-')}, rules {row.get('rules', {})}, "
              f"stopwords {' '.join(row['stopwords'][:8])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
