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

    python bench/clean_speed.py --baseline build/main_ref --unit [--rounds 5]

`--unit` times the whole clean unit instead (jobs/clean.py: Parquet in, clean_partition with language ID, PII,
URL and safety lists, kept and rejected Parquet out, marker), per step and whole, in CPU milliseconds per
document, on English web pages: C4 (../shared/data/web_en, 1,000 documents) and the English pages of
../shared/data/extraction as resiliparse extracts them (built once into build/bench/extracted_en.jsonl.gz).
The baseline's whole package (pipeline/, glassbox/, jobs/ of the copy) is imported under its own names in
this process, so both clean_batch functions run side by side; every output row of every set (the sets above,
the prose of both languages, WikiText) is compared field by field and any difference is printed and fails (but
for the heuristic signals this side leaves null on pages of a language the config does not admit).
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


def english_pages(data: Path, cache: Path) -> list[dict]:
    """The pages of data/extraction that resiliparse extracts and lid.176 calls English (id, text, url)."""
    if cache.is_file():
        with gzip.open(cache, "rt", encoding="utf-8") as f:
            return [json.loads(line) for line in f]
    from pipeline.clean.langid import get_identifier
    from pipeline.clean.settings import CleanConfig
    from pipeline.clean.stage import clean_batch
    from pipeline.extract.engines import RESILIPARSE
    from pipeline.extract.html import ExtractConfig, extract_html

    urls: dict[str, str] = {}
    for key, row in json.loads((data / "extraction" / "aeb" / "ground-truth.json").read_text()).items():
        urls[f"{key}.html.gz"] = row.get("url")
    for url, row in json.loads((data / "extraction" / "trafilatura_eval" / "evaldata.json").read_text()).items():
        urls[row["file"]] = url
    pages = []
    for f in sorted((data / "extraction").glob("*/html/*.html.gz")):
        html = gzip.open(f, "rb").read().decode("utf-8", "replace")
        text = extract_html(html, urls.get(f.name), ExtractConfig(), RESILIPARSE)
        if text:
            pages.append({"id": f.name, "text": text, "url": urls.get(f.name)})
    rows = clean_batch([p["text"] for p in pages], get_identifier(), CleanConfig(languages=None))
    pages = [p for p, r in zip(pages, rows) if r["lang"] == "en"]
    cache.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(cache, "wt", encoding="utf-8") as f:
        for p in pages:
            f.write(json.dumps(p) + "\n")
    return pages


def load_tree(code: Path) -> dict:
    """Import the clean stage of another copy of the code (its pipeline/, glassbox/, jobs/) under its own
    names, then put this checkout's modules back: the copy's functions keep their own module globals.
    Imports done inside functions at call time (icu4py, load_fasttext) resolve to this checkout's modules."""
    ours = {k: v for k, v in sys.modules.items() if k.split(".")[0] in ("pipeline", "glassbox", "jobs")}
    for k in ours:
        del sys.modules[k]
    sys.path.insert(0, str(code))
    try:
        import importlib
        mods = {name: importlib.import_module(name) for name in (
            "pipeline.clean.stage", "pipeline.clean.settings", "pipeline.clean.langid", "pipeline.models",
            "pipeline.clean.batches", "pipeline.run.units", "jobs.clean")}
    finally:
        sys.path.remove(str(code))
        theirs = {k: sys.modules.pop(k) for k in [k for k in sys.modules
                                                  if k.split(".")[0] in ("pipeline", "glassbox", "jobs")]}
        sys.modules.update(ours)
    mods["_all"] = theirs
    return mods


class side_modules:
    """While active, `import pipeline...` inside functions (clean_partition imports clean_batch when it runs)
    finds the modules of this side of the comparison."""

    def __init__(self, mods: dict):
        self.mods = mods.get("_all")

    def __enter__(self):
        if self.mods is not None:
            self.saved = {k: sys.modules[k] for k in self.mods if k in sys.modules}
            sys.modules.update(self.mods)

    def __exit__(self, *exc):
        if self.mods is not None:
            for k in self.mods:
                sys.modules.pop(k, None)
            sys.modules.update(self.saved)


def unit_steps(mods: dict, docs: list[dict], rounds: int) -> dict:
    """CPU ms per document of each step of clean_batch (each step over all documents in turn, its inputs
    made by the step before) and of the whole unit (Parquet in and out)."""
    import tempfile

    import pyarrow as pa
    import pyarrow.parquet as pq

    stage = mods["pipeline.clean.stage"]
    g = stage.__dict__
    cfg = mods["pipeline.clean.settings"].CleanConfig(languages=["en", "zh"])
    model = str(mods["pipeline.clean.langid"].default_model_path())
    ident = mods["pipeline.clean.langid"].get_identifier(model)
    prof, steps = stage.profiles_for(cfg), g["ListSteps"].of(cfg)
    texts, urls, n = [d["text"] for d in docs], [d.get("url") for d in docs], len(docs)
    stage.clean_batch(texts[:50], ident, cfg, urls[:50])
    out: dict[str, float] = {}

    def step(name, fn):
        best = float("inf")
        for _ in range(rounds):
            t0 = time.thread_time()
            res = fn()
            best = min(best, time.thread_time() - t0)
        out[name] = round(best / n * 1e3, 4)
        return res

    t = step("normalize_text", lambda: [g["normalize_text"](x) for x in texts])
    t = [x[0] for x in step("page-chrome lines (clean_lines)", lambda: [g["clean_lines"](x, cfg) for x in t])]
    t = [x[0] for x in step("PII masking", lambda: [g["mask_pii"](x) for x in t])]
    tops = step("language ID (lid.176, batches of 512)",
                lambda: [y for i in range(0, n, 512) for y in ident.predict_top(t[i:i + 512], 3)])
    ids = step("script prior (identify)", lambda: [stage.identify(top, x, prof) if top[0][0] != "unknown" else top[0]
                                                   for top, x in zip(tops, t)])
    langs = [stage.language_reason(lang, score, cfg, prof)[1] for lang, score in ids]
    step("URL blocklists", lambda: [steps.urls.reason(u) for u in urls])
    safety = step("safety lists", lambda: [steps.safety.signals(x, lang) for x, lang in zip(t, langs)])
    sig = step("heuristic signals (compute_signals)", lambda: [
        g["compute_signals"](x, lang, prof.get(lang).stopwords, prof.get(lang).short_line_chars)
        for x, lang in zip(t, langs)])
    rows = [{**a, **b} for a, b in zip(sig, safety)]
    step("rules", lambda: [stage.apply_rules(r, prof.get(lang).rules) or steps.safety_reason(r, lang)
                           for r, lang in zip(rows, langs)])
    out["sum of the steps"] = round(sum(out.values()), 4)
    step("clean_batch (batches of 512)", lambda: [stage.clean_batch(texts[i:i + 512], ident, cfg, urls[i:i + 512])
                                                  for i in range(0, n, 512)])
    tmp = Path(tempfile.mkdtemp(prefix="clean-unit-"))
    src = tmp / "in.parquet"
    pq.write_table(pa.table({"id": [d.get("id") or str(i) for i, d in enumerate(docs)], "text": texts,
                             "url": urls}), src)
    k = [0]

    def unit():
        k[0] += 1
        dirs = mods["pipeline.run.units"].UnitDirs(str(tmp / f"w{k[0]}")).make()
        return mods["jobs.clean"].clean_unit({"name": "u", "path": str(src)}, dirs, "fp", cfg, model)
    step("whole clean unit (Parquet in and out)", unit)
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)
    return out


def unsigned(a: dict, b: dict, key: str) -> bool:
    """A heuristic signal this side leaves null on a page of a language the config does not admit, where a baseline
    from before that change computed it: the one difference allowed (pipeline/clean/stage.py, LANG_NOT_ALLOWED)."""
    from pipeline.clean.heuristics import SIGNAL_NAMES

    return (a.get("reason") == b.get("reason") == "lang_not_allowed" and key in SIGNAL_NAMES
            and a.get(key) is None)


def compare(this: dict, base: dict, sets: dict[str, list[dict]]) -> int:
    """Rows of both clean_batch functions on every set, field by field: the number of differences."""
    bad = 0
    for cfg_name, kw in (("languages [en, zh]", {"languages": ["en", "zh"]}), ("every language", {"languages": None})):
        for name, docs in sets.items():
            rows = {}
            for side, mods in (("this", this), ("baseline", base)):
                cfg = mods["pipeline.clean.settings"].CleanConfig(**kw)
                ident = mods["pipeline.clean.langid"].get_identifier(
                    str(mods["pipeline.clean.langid"].default_model_path()))
                texts, urls = [d["text"] for d in docs], [d.get("url") for d in docs]
                with side_modules(mods):
                    rows[side] = [r for i in range(0, len(docs), 512)
                                  for r in mods["pipeline.clean.stage"].clean_batch(texts[i:i + 512], ident, cfg,
                                                                                    urls[i:i + 512])]
            diff = [(i, k) for i, (a, b) in enumerate(zip(rows["this"], rows["baseline"]))
                    for k in sorted(set(a) | set(b)) if (a.get(k, "<missing>") != b.get(k, "<missing>")
                    or type(a.get(k)) is not type(b.get(k))) and not unsigned(a, b, k)]
            bad += len(diff)
            print(f"  {cfg_name:18s} {name:12s} {len(docs):5d} documents: "
                  f"{'identical' if not diff else f'{len(diff)} fields differ, first {diff[:5]}'}", flush=True)
    return bad


def main_unit(args) -> int:
    this = {name: __import__(name, fromlist=["_"]) for name in (
        "pipeline.clean.stage", "pipeline.clean.settings", "pipeline.clean.langid", "pipeline.models",
        "pipeline.clean.batches", "pipeline.run.units", "jobs.clean")}
    base = load_tree(args.baseline.resolve())
    assert base["pipeline.clean.stage"] is not this["pipeline.clean.stage"]
    print(f"baseline: {Path(base['pipeline.clean.stage'].__file__).parents[2]}", flush=True)
    with gzip.open(args.data / "web_en" / "c4-sample.jsonl.gz", "rt", encoding="utf-8") as f:
        c4 = [json.loads(line) for line in f]
    pages = english_pages(args.data, REPO / "build" / "bench" / "extracted_en.jsonl.gz")
    report: dict = {}
    for name, docs in (("c4", c4), ("extracted_en", pages)):
        chars = sum(len(d["text"]) for d in docs) / len(docs)
        report[name] = {"docs": len(docs), "chars_per_doc": round(chars)}
        for r in range(2):  # alternate which side goes first
            for side in (("this", "baseline") if r == 0 else ("baseline", "this")):
                with side_modules(this if side == "this" else base):
                    got = unit_steps(this if side == "this" else base, docs, args.rounds)
                prev = report[name].get(side)
                report[name][side] = got if prev is None else {k: min(v, prev[k]) for k, v in got.items()}
        print(f"{name}: {len(docs)} documents, {chars:.0f} characters each; CPU ms per document (best round)")
        print(f"| step | baseline | this checkout |")
        print(f"|---|---|---|")
        for k in report[name]["this"]:
            print(f"| {k} | {report[name]['baseline'][k]:.3f} | {report[name]['this'][k]:.3f} |")
    sets = {"c4": c4, "extracted_en": pages}
    for name, (lang, docs) in texts(args.data).items():
        sets[name] = [{"text": d} for d in docs]
    print("outputs, this checkout against the baseline:")
    bad = compare(this, base, sets)
    report["differences"] = bad
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_name("clean_unit.json").write_text(json.dumps(report, indent=1))
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, required=True, help="a copy of the code to compare (its pipeline/)")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--unit", action="store_true", help="the whole clean unit, per step, and its outputs compared")
    ap.add_argument("--out", type=Path, default=REPO / "build" / "bench" / "clean_speed.json")
    args = ap.parse_args(argv)
    if args.unit:
        return main_unit(args)
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
