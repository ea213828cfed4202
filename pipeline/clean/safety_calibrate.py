"""Calibrate the content-safety thresholds per language, the FineWeb-2 way: measure the keyword density of each
category on reference prose of the language and put the threshold where nearly all of it passes.

    python -m pipeline.clean.safety_calibrate --prose DIR --lingua DIR [--out FILE] [--write-reference FILE]

Reference documents: `DIR/<lang>/<kind>/*.jsonl.gz` (../shared/data/prose: seven kinds each of English and
Chinese) and documents of ten sentences of `LINGUA/sentences/<lang>.txt` (75 languages). Only the calibration
half is read, the one the language table is calibrated on too (pipeline/clean/reference_docs.py: prose by
`half_of`, a hash of the parent work; sentence files by `sentence_lines`, the even-numbered lines); the other half
is held out to measure what the thresholds cost (bench/zh_lists.py, tests/pipeline/clean).

Per language and category the threshold (matches per 1,000 characters above which a document is rejected) is
max(FLOOR, the PASS_SHARE quantile of the category's density on the language's calibration documents) times
MARGIN: at most 1 - PASS_SHARE of reference prose is lost on the calibration half, and the margin covers text of
the same kinds that was not read. A language without reference text takes the FLOOR of "*"; a language
checked with another's list (pipeline/clean/safety.py LIST_LANGUAGE: yue, wuu -> zh) is calibrated as part of
that language's row.
`--write-reference` writes the calibration half as JSONL for `refresh_lists safety --reference` (terms found in 1 %
of a language's reference documents are dropped from its list).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from datetime import date
from pathlib import Path

from pipeline.clean import reference_docs
from pipeline.clean.lists import LISTS_DIR

PASS_SHARE = 0.995
FLOOR = 2.0          # per 1,000 characters: six matches in a page of 3,000 characters (1.0 lost 1.6 % of held-out zh)
MARGIN = 1.25
THRESHOLDS = LISTS_DIR / "safety" / "thresholds.json"


def prose_docs(prose: Path, half: str) -> dict[str, list[tuple[str, str, str]]]:
    """{lang: [(kind, id, text)]} of one half ("calibration" or "held_out", reference_docs.HALVES) of the
    reference prose: the split every calibration uses (reference_docs.half_of)."""
    out: dict[str, list] = {}
    for lang in sorted(p.name for p in prose.iterdir() if p.is_dir()):
        for kind, docs in reference_docs.prose_documents(prose, lang, half).items():
            out.setdefault(lang, []).extend((kind, d["id"], d["text"]) for d in docs)
    return out


def lingua_docs(lingua: Path, half: str, n_docs: int = 50) -> dict[str, list[tuple[str, str, str]]]:
    """{lang: [("sentences", id, text)]}: documents of ten sentences from one half of the lines
    (reference_docs.sentence_lines: the even-numbered ones calibrate, the odd-numbered ones are held out)."""
    out = {}
    seed = reference_docs.HALVES.index(half)
    for f in sorted((lingua / "sentences").glob("*.txt")):
        lines = reference_docs.sentence_lines(f.read_text(encoding="utf-8").splitlines(), half)
        docs = reference_docs.documents(lines, f.stem, n_docs, seed=seed)
        out[f.stem] = [("sentences", f"lingua-{f.stem}-{i}", t) for i, t in enumerate(docs)]
    return out


def by_list_language(docs: dict[str, list]) -> dict[str, list]:
    """The documents pooled by the language whose list checks them (safety.list_language): a yue or wuu
    document calibrates the zh row it is judged by."""
    from pipeline.clean.safety import list_language

    out: dict[str, list] = {}
    for lang, items in sorted(docs.items()):
        out.setdefault(list_language(lang), []).extend(items)
    return out


def quantile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, math.ceil(q * len(s)) - 1)]


def calibrate(docs: dict[str, list[tuple[str, str, str]]]) -> dict:
    from pipeline.clean.safety import CATEGORIES, Lists

    lists = Lists()
    table = {"*": {c: FLOOR * MARGIN for c in CATEGORIES}}
    for lang, items in sorted(docs.items()):
        matcher = lists.matcher(lang)
        if matcher is None:
            continue
        dens = [matcher.densities(t) for _, _, t in items]
        table[lang] = {c: round(max(FLOOR, quantile([d[c] for d in dens], PASS_SHARE)) * MARGIN, 3)
                       for c in CATEGORIES}
    return table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.clean.safety_calibrate", description=__doc__.split("\n\n")[0])
    ap.add_argument("--prose", type=Path, required=True)
    ap.add_argument("--lingua", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=THRESHOLDS)
    ap.add_argument("--write-reference", type=Path, help="write the calibration half as JSONL and stop")
    args = ap.parse_args(argv)
    docs = prose_docs(args.prose, "calibration")
    for lang, items in lingua_docs(args.lingua, "calibration").items():
        docs.setdefault(lang, []).extend(items)
    docs = by_list_language(docs)
    if args.write_reference:
        with open(args.write_reference, "w", encoding="utf-8") as fh:
            for lang, items in docs.items():
                for kind, i, t in items:
                    fh.write(json.dumps({"id": i, "lang": lang, "kind": kind, "text": t}, ensure_ascii=False) + "\n")
        return 0
    table = calibrate(docs)
    record = {"method": {"pass_share": PASS_SHARE, "floor_per_1000_chars": FLOOR, "margin": MARGIN,
                         "reference": "the calibration half of every calibration (pipeline/clean/reference_docs.py): "
                                      "prose by half_of (sha1 of 'glassbox-calibration:' + the parent work), "
                                      "lingua sentences' even-numbered lines",
                         "documents": {lang: len(items) for lang, items in sorted(docs.items())},
                         "date": date.today().isoformat()},
              "thresholds": table}
    args.out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    from pipeline.clean.lists import write_checksums
    write_checksums()
    print(json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
