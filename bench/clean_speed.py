"""Benchmark: the clean stage's per-document text work (normalise, page-chrome lines, heuristic signals) on
the same texts, this checkout against another copy of the code, side by side in one process.

    git archive main pipeline glassbox | (mkdir -p build/main_ref && tar -x -C build/main_ref)
    python bench/clean_speed.py --baseline build/main_ref [--rounds 7]

The baseline's modules are loaded from its files under other names (its normalize.py held the chrome
lines then; its heuristics.py imports this checkout's pipeline.clean.words, whose words are unchanged), so
both sides run in the same interpreter on the same documents, and the rounds alternate which side goes
first: the noise of a shared machine hits both alike. PII masking and language ID are the same code on both
sides and left out. Texts: English web documents, WikiText-2 windows and English prose (../shared/data),
Chinese prose for information. Times are the CPU time of the thread (a shared machine's other processes
preempt it; wall time spread 3x between rounds here), every set at least about 1 MB a round. Printed: MB/s
per side (best round), the spread (worst round over best), the time ratio of the best rounds (this checkout
over the baseline; 1.10 is 10 % slower) and the median of the ratios of rounds run back to back.
"""
from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DATA = Path(os.environ.get("GLASSBOX_SHARED_DATA") or REPO.parent / "shared" / "data")

from pipeline.clean.boilerplate import clean_lines  # noqa: E402
from pipeline.clean.heuristics import STOPWORDS_EN, compute_signals  # noqa: E402
from pipeline.clean.languages import builtin_table  # noqa: E402
from pipeline.clean.normalize import normalize_text  # noqa: E402


def texts(data: Path) -> dict[str, tuple[str, list[str]]]:
    """name -> (language, documents): English web pages, encyclopedia windows and prose (40 documents of
    each kind), Chinese prose (40 of each kind)."""
    out: dict[str, tuple[str, list[str]]] = {}
    web = data / "text" / "web" / "dolma-cc-documents-000.json.gz"
    if web.is_file():
        with gzip.open(web, "rt", encoding="utf-8") as f:
            out["en_web"] = ("en", [json.loads(line)["text"] for line in f])
    wiki = data / "text" / "reference" / "wikitext-2-valid.txt"
    if wiki.is_file():
        docs, cur = [], []
        for p in (p.strip() for p in wiki.read_text(encoding="utf-8").splitlines()):
            if len(p) > 200:
                cur.append(p)
                if sum(map(len, cur)) > 5000:
                    docs.append("\n\n".join(cur))
                    cur = []
        out["en_wiki"] = ("en", docs)
    for lang in ("en", "zh"):
        docs = []
        for f in sorted((data / "prose" / lang).glob("*/*.jsonl.gz")):
            with gzip.open(f, "rt", encoding="utf-8") as fh:
                docs += [json.loads(line)["text"] for line in fh][:40]
        if docs:
            out[f"{lang}_prose"] = (lang, docs)
    if not out:
        sys.exit(f"no reference text under {data} (--data: the shared data folder)")
    return out


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def this_side(lang: str):
    """The per-document text work of this checkout's clean stage, with the language's profile values."""
    row = builtin_table()["languages"].get(lang, {})
    stop = frozenset(row.get("stopwords", STOPWORDS_EN))
    short = row.get("short_line_chars", 30)
    return lambda t: compute_signals(clean_lines(normalize_text(t))[0], lang, stop, short)


def baseline_side(code: Path, lang: str):
    clean = code / "pipeline" / "clean"
    normalize = load(clean / "normalize.py", "baseline_normalize")
    heuristics = load(clean / "heuristics.py", "baseline_heuristics")
    table_py = clean / "language_table.py"
    if table_py.is_file():
        row = load(table_py, "baseline_table").TABLE["languages"].get(lang, {})
    else:
        row = json.loads((clean / "language_table.json").read_text(encoding="utf-8"))["languages"].get(lang, {})
    stop = frozenset(row.get("stopwords", STOPWORDS_EN))
    return lambda t: heuristics.compute_signals(normalize.clean_lines(normalize.normalize_text(t))[0], lang, stop)


def timed(fn, docs: list[str], repeat: int) -> float:
    """CPU seconds of this thread (not wall time: the other processes of a shared machine preempt it)."""
    t0 = time.thread_time()
    for _ in range(repeat):
        for d in docs:
            fn(d)
    return time.thread_time() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, required=True, help="a copy of the code to compare (its pipeline/)")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", type=Path, default=REPO / "build" / "bench" / "clean_speed.json")
    args = ap.parse_args(argv)
    report = {}
    for name, (lang, docs) in texts(args.data).items():
        sides = {"this": this_side(lang), "baseline": baseline_side(args.baseline.resolve(), lang)}
        for fn in sides.values():
            fn(docs[0])  # warm up: the segmenter, compiled patterns
        secs: dict[str, list[float]] = {s: [] for s in sides}
        mb = sum(len(d.encode("utf-8")) for d in docs) / 1e6
        repeat = max(1, round(1.0 / mb))  # at least about 1 MB a round: small sets time too little
        for r in range(args.rounds):
            for side in (("this", "baseline") if r % 2 == 0 else ("baseline", "this")):
                secs[side].append(timed(sides[side], docs, repeat))
        mb *= repeat
        row = {s: {"mb_per_s": round(mb / min(v), 2), "spread": round(max(v) / min(v), 2)} for s, v in secs.items()}
        row["ratio"] = round(min(secs["this"]) / min(secs["baseline"]), 3)
        paired = sorted(a / b for a, b in zip(secs["this"], secs["baseline"]))  # rounds run back to back
        row["paired_ratio_median"] = round(paired[len(paired) // 2], 3)
        row["docs"], row["mb"] = len(docs), round(mb, 2)
        report[name] = row
        print(f"{name:9s} {len(docs):4d} docs {mb:5.2f} MB  this {row['this']['mb_per_s']:6.2f} MB/s "
              f"(spread {row['this']['spread']:.2f})  baseline {row['baseline']['mb_per_s']:6.2f} MB/s "
              f"(spread {row['baseline']['spread']:.2f})  time ratio {row['ratio']:.3f} "
              f"(median of paired rounds {row['paired_ratio_median']:.3f})", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
