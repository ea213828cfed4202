"""Calibrate the content-safety thresholds per language, the FineWeb-2 way: measure the keyword density of each
category on reference prose of the language and put the threshold where nearly all of it passes.

    python -m pipeline.clean.safety_calibrate --prose DIR --lingua DIR [--out FILE] [--write-reference FILE]

Reference documents: `DIR/<lang>/<kind>/*.jsonl.gz` (../shared/data/prose: seven kinds each of English and
Chinese) and documents of ten sentences of `LINGUA/sentences/<lang>.txt` (75 languages). Only the calibration
half is read: prose documents whose parent id (the part before `#`) has an even salted sha1, and the even-numbered
sentence lines; the other half is held out to measure what the thresholds cost (bench/zh_lists.py).

Per language and category the threshold (matches per 1,000 characters above which a document is rejected) is
max(FLOOR, the PASS_SHARE quantile of the category's density on the language's calibration documents) times
MARGIN: at most 1 - PASS_SHARE of reference prose is lost on the calibration half, and the margin covers text of
the same kinds that was not read. A language without reference text takes the FLOOR of "*".
`--write-reference` writes the calibration half as JSONL for `refresh_lists safety --reference` (terms found in 1 %
of a language's reference documents are dropped from its list).
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
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


def calibration_half(doc_id: str) -> bool:
    """True for the prose documents calibration reads; the rest is held out (a work's pieces stay together)."""
    parent = doc_id.split("#", 1)[0]
    # salted: ../shared/data/prose is itself one half of a split on the unsalted sha1 of the parent id
    return int(hashlib.sha1(f"safety/{parent}".encode("utf-8")).hexdigest(), 16) % 2 == 0


def prose_docs(prose: Path, half: str) -> dict[str, list[tuple[str, str, str]]]:
    """{lang: [(kind, id, text)]} of one half ("calibration" or "heldout") of the reference prose."""
    out: dict[str, list] = {}
    for f in sorted(prose.glob("*/*/*.jsonl.gz")):
        lang, kind = f.parent.parent.name, f.parent.name
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            for line in fh:
                d = json.loads(line)
                if calibration_half(d["id"]) == (half == "calibration"):
                    out.setdefault(lang, []).append((kind, d["id"], d["text"]))
    return out


def lingua_docs(lingua: Path, half: str, n_docs: int = 50) -> dict[str, list[tuple[str, str, str]]]:
    """{lang: [("sentences", id, text)]}: documents of ten sentences from the even (calibration) or odd lines."""
    out = {}
    start = 0 if half == "calibration" else 1
    for f in sorted((lingua / "sentences").glob("*.txt")):
        lines = f.read_text(encoding="utf-8").splitlines()[start::2]
        docs = reference_docs.documents(lines, f.stem, n_docs, seed=start)
        out[f.stem] = [("sentences", f"lingua-{f.stem}-{i}", t) for i, t in enumerate(docs)]
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
    if args.write_reference:
        with open(args.write_reference, "w", encoding="utf-8") as fh:
            for lang, items in docs.items():
                for kind, i, t in items:
                    fh.write(json.dumps({"id": i, "lang": lang, "kind": kind, "text": t}, ensure_ascii=False) + "\n")
        return 0
    table = calibrate(docs)
    record = {"method": {"pass_share": PASS_SHARE, "floor_per_1000_chars": FLOOR, "margin": MARGIN,
                         "reference": "prose calibration half (even sha1 of the parent id) and lingua even lines",
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
