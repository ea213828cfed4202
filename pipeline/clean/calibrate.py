"""Calibrate the clean stage per language from reference text, the FineWeb-2 way: measure each signal's
distribution on documents of real text in that language and put each threshold where a chosen share of
them passes.

    python -m pipeline.clean.calibrate --reference DIR [--half even|all] [--prose DIR]
                                       [--out table.json | --builtin]

Two references:
- `--prose DIR` (e.g. ../shared/data/prose): whole documents by language and kind,
  `<lang>/<kind>/*.jsonl.gz`. Each language found there (en, zh) is calibrated on its calibration half
  (pipeline/clean/reference_docs.py half_of: by parent work, so a book or a law is never in both halves;
  bench/chinese_prose.py measures on the other half). A rule's published value is relaxed until it passes
  at least `--prose-pass-share` (0.98) of the documents of EVERY kind: laws repeat phrases, abstracts are
  short, and no rule may single out a kind of good prose. Kinds in NOT_REFERENCE are left out (classical
  Chinese: lid.176 calls it zh, but the zh row is for modern Chinese; docs/chinese.md says why).
- `--reference DIR`: `<lang>.txt` files of reference text, one sentence a line, for any ISO code the
  language identifier gives; lines become documents of 10 sentences in three layouts
  (pipeline/clean/reference_docs.py). Every language without whole documents is calibrated on these,
  each rule relaxed to its `--pass-share` (0.99) quantile.

Per language:
- units: words are those of pipeline/clean/words.py (ICU words for unspaced scripts). On translated
  documents (react.dev and the Rust book, en and zh) an ICU Chinese word is an English word's worth:
  words per sentence 18.3 and 18.3, 21.2 and 21.5; the share of text in repeated word 5-grams 0.097 and
  0.096, 0.032 and 0.033. So the n-gram rules keep n, and word counts scale only by the words per sentence
  of the reference. Characters do not carry over (2.1 characters a Chinese word, 6 an English one): FineWeb's
  short line of 30 characters becomes `short_line_chars` = 30 x English words per character / the
  language's (zh: 10);
- stop words: its most frequent words (each at least 0.5 % of the words, by their mean share over kinds
  for whole documents; 5 to 30 of them); English keeps Gopher's eight;
- rule thresholds, relax-only: a rule that rejects when `signal > t` gets max(t, the value its reference
  passes at); `signal < t` gets min(t, ...). The word-count limits first scale with the language's words
  per sentence. English keeps the published values: what its own documents would move is recorded in its
  row as `not_applied`, with the share of each kind the published rules keep;
- language-ID confidence: the 2 % quantile of the score its reference gets, recorded only where it is
  below `clean.min_lang_score` (elsewhere the global threshold applies, whatever the user sets it to);
- confusable languages: pairs whose sentences the identifier labels as the other at least 10 % of the time
  while still ranking the right one in its top three, plus the known macro-language pairs.
Every row records what it came from (`source`).

The built-in table (pipeline/clean/language_table.json, data: one language a line) is written with

    python -m pipeline.clean.calibrate --reference ../shared/data/langid/lingua/sentences --half even \
        --prose ../shared/data/prose --builtin

(the lingua rows from the even-numbered lines; bench/languages.py measures on the odd-numbered ones). The split of
both references is pipeline/clean/reference_docs.py's (`half_of`, `sentence_lines`), the one the content-safety
thresholds are calibrated on too (pipeline/clean/safety_calibrate.py), so what is held out here is held out from both.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from pathlib import Path

from pipeline.clean import reference_docs
from pipeline.clean.heuristics import SHORT_LINE_CHARS, STOPWORDS_EN, compute_signals
from pipeline.clean.boilerplate import clean_lines
from pipeline.clean.normalize import normalize_text
from pipeline.clean.settings import DEFAULT_RULES, CleanConfig
from pipeline.clean.stage import apply_rules
from pipeline.clean.words import words

# Languages lid.176 labels with another code or merges with a neighbour (same written standard, or macro-language).
KNOWN_CONFUSABLE = [["bs", "hr", "sr", "sh"], ["nb", "no", "nn"], ["ms", "id"], ["zh", "yue", "wuu"]]
SCALED = {"gopher_too_few_words", "gopher_too_many_words"}  # count limits: scaled by words per sentence
SENTENCES_PER_DOC = 10
NOT_CALIBRATED = {"c4_lorem_ipsum"}
PROSE_PASS_SHARE = 0.98  # whole documents: each rule passes at least this share of every kind
# Kinds of reference prose that are not what the language's row judges on the web: classical Chinese (文言)
# is written with one-character words and its own function words (之 乎 者 也); lid.176 calls it zh, so the
# zh row judges it, but it does not set the row (docs/chinese.md).
NOT_REFERENCE = {"zh": ("literature_classical",)}
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


def _relaxed_rules(density: float, density_en: float, relax) -> dict:
    """reason -> threshold for the rules whose value `relax(rule, published)` moves; count limits are first
    scaled by words per sentence (density / density_en)."""
    out = {}
    for r in DEFAULT_RULES:
        if r["reason"] in NOT_CALIBRATED:
            continue
        t = r["value"]
        if r["reason"] in SCALED and density_en > 0:
            t = round(t * density / density_en)
        v = relax(r, t)
        v = round(v, 4) if isinstance(v, float) else v
        if v != r["value"]:
            out[r["reason"]] = v
    return out


def calibrate_rules(signals: list[dict], density: float, density_en: float, pass_share: float) -> dict:
    """reason -> threshold for the rules whose published value this language's prose does not pass."""
    def relax(r: dict, t: float) -> float:
        values = [s[r["signal"]] for s in signals]
        if r["op"] in (">", ">="):
            return max(t, quantile(values, pass_share))
        return min(t, quantile(values, 1 - pass_share))
    return _relaxed_rules(density, density_en, relax)


def kind_threshold(values_by_kind: list[list[float]], published: float, op: str, pass_share: float) -> float:
    """The published threshold, relaxed (never tightened) until it passes at least `pass_share` of the
    documents of every kind: a rule may not single out one kind of good prose (laws repeat phrases,
    abstracts are short), whatever the other kinds do."""
    out = published
    for values in values_by_kind:
        v = sorted(values)
        n = len(v)
        if not n:
            continue
        k = math.ceil(pass_share * n) - 1  # the k+1 documents that must pass
        if op in (">", ">="):      # rejects above: the (k+1)-th smallest value must pass
            out = max(out, v[k])
        else:                      # rejects below: the (k+1)-th largest value must pass
            out = min(out, v[n - 1 - k])
    return out


def calibrate_rules_by_kind(signals_by_kind: list[list[dict]], density: float, density_en: float,
                            pass_share: float) -> dict:
    """reason -> threshold for the rules whose published value some kind of this language's prose does not
    pass (see kind_threshold)."""
    return _relaxed_rules(density, density_en, lambda r, t: kind_threshold(
        [[s[r["signal"]] for s in sig] for sig in signals_by_kind], t, r["op"], pass_share))


def derive_stopwords_by_kind(words_by_kind: list[list[list[str]]], min_share: float = 0.005,
                             lo: int = 5, hi: int = 30) -> list[str]:
    """The language's most frequent words (letters only) by their mean share over kinds of prose (a kind
    with long documents does not outvote the others), each at least `min_share`. `words_by_kind`: the
    words of each document of each kind."""
    shares: Counter = Counter()
    for docs in words_by_kind:
        counts = Counter(w for ws in docs for w in ws if any(c.isalpha() for c in w))
        total = sum(counts.values())
        for w, n in counts.items():
            shares[w] += n / total / len(words_by_kind)
    ranked = [w for w, _ in shares.most_common(hi)]
    frequent = [w for w in ranked if shares[w] >= min_share]
    return frequent if len(frequent) >= lo else ranked[:lo]


def document_rates(docs_by_kind: list[list[str]], lang: str) -> tuple[float, float]:
    """(words per character, words per sentence) of whole documents, the mean over kinds; sentences as
    the clean stage counts them (c4_n_sentences: 。！？ need no space after them)."""
    return _rates(docs_by_kind, [[compute_signals(d, lang) for d in docs] for docs in docs_by_kind])


def _rates(docs_by_kind: list[list[str]], signals_by_kind: list[list[dict]]) -> tuple[float, float]:
    per_char, per_sentence = [], []
    for docs, sig in zip(docs_by_kind, signals_by_kind):
        n_words = sum(s["gopher_n_words"] for s in sig)
        per_char.append(n_words / max(1, sum(len(d) for d in docs)))
        per_sentence.append(n_words / max(1, sum(s["c4_n_sentences"] for s in sig)))
    return sum(per_char) / len(per_char), sum(per_sentence) / len(per_sentence)


def prose_row(lang: str, docs_by_kind: dict[str, list[str]], english: dict, pass_share: float,
              identifier=None, groups: list[list[str]] | None = None) -> dict:
    """One language's row from whole documents of its reference prose, by kind (prepared). `english` is
    the English row ({"words_per_char", "words_per_sentence"}) the units are scaled from."""
    kinds = sorted(docs_by_kind)
    by_kind = [docs_by_kind[k] for k in kinds]
    words_by_kind = [[words(d, lang) for d in docs] for docs in by_kind]
    per_char = sum(sum(map(len, ws)) / max(1, sum(map(len, docs)))
                   for ws, docs in zip(words_by_kind, by_kind)) / len(by_kind)
    stop = sorted(STOPWORDS_EN) if lang == "en" else derive_stopwords_by_kind(words_by_kind)
    short = SHORT_LINE_CHARS if lang == "en" else round(SHORT_LINE_CHARS * english["words_per_char"] / per_char)
    signals = [[compute_signals(d, lang, frozenset(stop), short) for d in docs] for docs in by_kind]
    _, per_sentence = _rates(by_kind, signals)
    row: dict = {"source": f"prose/{lang}: " + ", ".join(f"{k} {len(docs_by_kind[k])}" for k in kinds)
                 + " documents (the calibration half, by parent work)",
                 "docs": sum(map(len, by_kind)), "words_per_char": round(per_char, 4),
                 "words_per_sentence": round(per_sentence, 2), "stopwords": stop}
    if lang != "en":
        row["short_line_chars"] = short
    density_en = per_sentence if lang == "en" else english["words_per_sentence"]
    rules = calibrate_rules_by_kind(signals, per_sentence, density_en, pass_share)
    if lang == "en":  # published, not recalibrated: what its own documents say is recorded, not applied
        kept = [sum(apply_rules(x, DEFAULT_RULES) is None for x in sig) / len(sig) for sig in signals]
        row["published_kept"] = {k: round(v, 3) for k, v in zip(kinds, kept)}
        row["not_applied"] = rules
    else:
        row["rules"] = rules
    if identifier is not None:
        all_docs = [d for docs in by_kind for d in docs]
        scores, labels, _ = language_scores(all_docs, lang, identifier, groups or [list(g) for g in KNOWN_CONFUSABLE])
        row["identified_as"] = dict(labels.most_common(4))
        low = math.floor(quantile(scores, 0.02) * 100) / 100 if scores else None
        if low is not None and low < CleanConfig().min_lang_score:
            row["min_lang_score"] = max(0.0, low)
    return row


def prose_kinds(root: Path, lang: str, cfg: CleanConfig, half: str = "calibration",
                skip: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """kind -> prepared documents of one language's reference prose (one half)."""
    return {kind: prepared([d["text"] for d in docs], cfg)
            for kind, docs in reference_docs.prose_documents(root, lang, half).items() if kind not in skip}


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
        lines = reference_docs.sentence_lines(lines, "calibration") if half == "even" else lines
        docs[f.stem] = prepared(reference_docs.documents(lines, f.stem, n_docs, SENTENCES_PER_DOC, seed=0), cfg)
    return docs


def language_row(lang: str, docs: list[str], density_en: float, pass_share: float, identifier=None,
                 groups: list[list[str]] | None = None, source: str | None = None) -> dict:
    """One language's row of the table from its sentence documents."""
    stop = sorted(STOPWORDS_EN) if lang == "en" else derive_stopwords(docs, lang)
    density = words_per_sentence(docs, lang)
    row: dict = {"source": source} if source else {}
    row |= {"docs": len(docs), "words_per_char": round(words_per_char(docs, lang), 4),
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
              identifier=None, only: list[str] | None = None, prose: Path | None = None,
              prose_pass_share: float = PROSE_PASS_SHARE) -> dict:
    """The whole table: rows from whole documents for the languages `prose` holds (its calibration half),
    rows from sentence documents for every other `<lang>.txt` of `reference`."""
    docs = sentence_documents(reference, half, n_docs, only)
    density_en = words_per_sentence(docs["en"], "en") if "en" in docs else 20.0
    groups = [list(g) for g in KNOWN_CONFUSABLE]
    if identifier is not None:
        confusions = {}
        for lang, ds in docs.items():
            _, labels, seen = language_scores(ds, lang, identifier, groups)
            confusions[lang] = (labels, seen)
        groups = confusable_groups(confusions, {lang: len(ds) for lang, ds in docs.items()})
    source = sentence_source(reference.name, half, n_docs)
    table: dict = {"languages": {lang: language_row(lang, ds, density_en, pass_share, identifier, groups, source)
                                 for lang, ds in docs.items()}}
    prose_langs = prose_languages(prose, only) if prose is not None else []
    if prose_langs:
        cfg = CleanConfig(languages=None, calibration="none")
        by_lang = {lang: prose_kinds(prose, lang, cfg, skip=NOT_REFERENCE.get(lang, ())) for lang in prose_langs}
        english = english_rates(by_lang.get("en"), docs.get("en"), density_en)
        for lang in prose_langs:
            table["languages"][lang] = prose_row(lang, by_lang[lang], english, prose_pass_share, identifier, groups)
    table["confusable"] = groups
    table["method"] = {
        "what": "FineWeb-2-style relax-only calibration: each rule keeps its published value unless fewer than "
                "pass_share of the language's reference documents pass it, then it moves to the value they pass at",
        "pass_share": pass_share, "docs_per_language": n_docs, "sentences_per_doc": SENTENCES_PER_DOC,
        "layouts": list(reference_docs.LAYOUTS), "reference": reference.name, "lines": half,
        "lid_score": "2% quantile of the language's reference scores, recorded only where below clean.min_lang_score",
        "stopwords": "words of at least 0.5% frequency, 5 to 30 (en: Gopher's eight)",
    }
    if prose_langs:
        table["method"]["prose"] = {
            "languages": prose_langs, "reference": prose.name, "half": "calibration",
            "split": "sha1('glassbox-calibration:' + parent work) (pipeline/clean/reference_docs.py half_of); "
                     "the held-out half measures the table (bench/chinese_prose.py)",
            "pass_share_per_kind": prose_pass_share,
            "rule": "each rule's published value is relaxed until it passes at least pass_share_per_kind of the "
                    "documents of every kind; English keeps the published values (what its documents would "
                    "move is recorded as not_applied)",
            "not_reference": {k: list(v) for k, v in NOT_REFERENCE.items()},
            "units": "words are ICU words (the same unit as English words on translated documents: words per "
                     "sentence and repeated 5-grams agree); short lines are 30 English characters scaled by "
                     "words per character; count limits scale with words per sentence",
            "stopwords": "mean share over kinds of at least 0.5%, 5 to 30 words (en: Gopher's eight)",
        }
    return table


def sentence_source(reference_name: str, half: str, n_docs: int) -> str:
    """What a row calibrated on sentence documents came from (its `source`)."""
    return (f"sentences: {reference_name}/<lang>.txt, {'even' if half == 'even' else 'all'} lines, "
            f"{n_docs} documents of {SENTENCES_PER_DOC} sentences")


def english_rates(prose_kinds_en: dict[str, list[str]] | None, sentence_docs_en: list[str] | None,
                  density_en: float) -> dict:
    """English's words per character and per sentence, which other languages' units scale from: from its
    whole documents when there are some, else from its sentence documents."""
    if prose_kinds_en:
        per_char, per_sentence = document_rates(list(prose_kinds_en.values()), "en")
    else:
        per_char = words_per_char(sentence_docs_en, "en") if sentence_docs_en else 0.1612
        per_sentence = density_en
    # rounded as the English row records them, so that a row can be recomputed from the table alone
    return {"words_per_char": round(per_char, 4), "words_per_sentence": round(per_sentence, 2)}


def prose_languages(prose: Path, only: list[str] | None = None) -> list[str]:
    """The languages with whole documents under `prose` (English first: the others scale from it)."""
    langs = sorted(p.name for p in prose.iterdir() if p.is_dir() and any(p.glob("*/*.jsonl.gz")))
    langs = [lang for lang in langs if not only or lang in only]
    return sorted(langs, key=lambda lang: lang != "en")


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
    ap.add_argument("--prose", type=Path, help="folder of whole documents, <lang>/<kind>/*.jsonl.gz (e.g. "
                    "../shared/data/prose): those languages are calibrated on its calibration half instead")
    ap.add_argument("--prose-pass-share", type=float, default=PROSE_PASS_SHARE,
                    help="share of every kind's documents each rule must pass")
    out = ap.add_mutually_exclusive_group(required=True)
    out.add_argument("--out", type=Path, help="write a table for clean.calibration: FILE.json")
    out.add_argument("--builtin", action="store_true", help=f"rewrite the built-in table ({TABLE_FILE.name} in pipeline/clean/)")
    args = ap.parse_args(argv)
    from pipeline.clean.langid import get_identifier
    table = calibrate(args.reference, args.half, args.docs, args.pass_share, get_identifier(args.lid_model),
                      args.languages.split(",") if args.languages else None, args.prose, args.prose_pass_share)
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
