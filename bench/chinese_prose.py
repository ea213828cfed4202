"""Benchmark: what the clean stage keeps of real Chinese and English documents, this checkout against
another copy of the code (before / after).

    git archive main pipeline glassbox | (mkdir -p build/main_ref && tar -x -C build/main_ref)
    python bench/chinese_web_pages.py --magic-html DIR --gne DIR     # the web pages, once
    python bench/chinese_prose.py --baseline build/main_ref [--pages build/bench/zh_web_pages.jsonl]

Measured per side, each in its own interpreter (the two copies share module names), with the real language
identifier and `clean.languages: [<lang>]`, everything else default:
- reference prose (../shared/data/prose, zh and en): kept share per kind on the held-out half (the
  calibration read the other; the split is pipeline/clean/reference_docs.py half_of, by parent work), and
  on the calibration half for comparison;
- ordinary Chinese web pages (bench/chinese_web_pages.py; `clean.languages: null`, the pages identified as
  zh): kept share on the pages the chrome patterns were written from (dev) and on the others (held_out);
- the Chinese pages of the sample's Common Crawl excerpts (hand-labelled spam, or not): each one's reason;
- sentence counts and punctuation: per kind of zh prose, c4_n_sentences against the count of 。！？ and the
  mean FineWeb and C4 line-punctuation fractions.
Writes build/bench/chinese_prose.json.
"""
from __future__ import annotations

import argparse
import collections
import gzip
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("GLASSBOX_SHARED_DATA") or REPO.parent / "shared" / "data")
CRAWLS = [REPO / "examples" / "sample" / "resiliparse-cc-excerpt.warc.gz"]
# The Chinese pages of the crawl excerpt, labelled by hand: spam (gambling, porn, SEO link farms, error
# pages of such sites) or not (a company's contact footer, a job-listing table: thin, but not spam).
CRAWL_LABELS = {
    "http://003338.cn/l41/481397.html": "spam",       # mojibake keyword page with news snippets
    "http://035.psb556.com/24/i/u_1090813/article.html": "spam",  # error page of a gambling site
    "http://041696.com/15477/list_6_4.html": "spam",  # lottery forum link list
    "http://044545.com/topic/20200207/015849.html": "spam",  # gambling payout ad, QQ numbers
    "http://0513mt.com/index.php/art/detail/id/8884.html": "spam",  # adult fiction list
    "http://05925.net/index.php/vod/type/id/53.html": "spam",  # adult video site notice
    "http://0615235.com/02mjqjo%7Bibotij2.btq?odmbtt=106&tdmbtt=121": "thin",  # a company's contact footer
    "http://0755krk.com/76104/list_4_1.html": "spam",  # lottery forum link list
    "http://0760.jxtdw.com/area/sanxiang/": "thin",    # a job-listing table
}


def load_reference_docs():
    """This checkout's pipeline/clean/reference_docs.py, by path: the same split on both sides (the baseline
    may predate it; it imports nothing of the project)."""
    spec = importlib.util.spec_from_file_location("bench_reference_docs",
                                                  REPO / "pipeline" / "clean" / "reference_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def worker(data: Path, pages: Path | None) -> dict:
    """Every measurement, with the code on sys.path."""
    from pipeline.clean.heuristics import compute_signals
    from pipeline.clean.langid import get_identifier
    from pipeline.clean.settings import CleanConfig
    from pipeline.clean.stage import clean_batch
    from pipeline.extract.html import extract_file
    from pipeline.extract.settings import ExtractConfig

    ref = load_reference_docs()
    ident = get_identifier()
    out: dict = {"prose": {}, "sentences": {}, "web": {}, "crawl": {}}
    for lang in ("zh", "en"):
        for half in ref.HALVES:
            for kind, docs in ref.prose_documents(data / "prose", lang, half).items():
                rows = clean_batch([d["text"] for d in docs], ident, CleanConfig(languages=[lang]))
                reasons = collections.Counter(r["reason"] for r in rows)
                out["prose"][f"{lang}/{half}/{kind}"] = {"kept": reasons.pop(None, 0), "docs": len(rows),
                                                         "reasons": dict(reasons.most_common())}
    for kind, docs in ref.prose_documents(data / "prose", "zh", None).items():
        sig = [compute_signals(d["text"], "zh") for d in docs]
        out["sentences"][kind] = {
            "c4_n_sentences": sum(s["c4_n_sentences"] for s in sig),
            "marks": sum(len(re.findall("[。！？]", d["text"])) for d in docs),
            "fineweb_line_punct_frac": sum(s["fineweb_line_punct_frac"] for s in sig) / len(sig),
            "c4_terminal_punct_line_frac": sum(s["c4_terminal_punct_line_frac"] for s in sig) / len(sig)}
    if pages is not None and pages.is_file():
        web = [json.loads(line) for line in pages.open(encoding="utf-8")]
        rows = clean_batch([p["text"] for p in web], ident, CleanConfig(languages=None))
        for half in ("dev", "held_out"):
            zh = [(p, r) for p, r in zip(web, rows) if r["lang"] == "zh" and p["half"] == half]
            reasons = collections.Counter(r["reason"] for _, r in zh)
            out["web"][half] = {"kept": reasons.pop(None, 0), "pages": len(zh), "reasons": dict(reasons.most_common()),
                                "lines_removed": sum(r["lines_removed"] for _, r in zh)}
    for crawl in CRAWLS:
        recs = [r for r in extract_file(str(crawl), "crawl", "warc", ExtractConfig()) if r.get("text")]
        rows = clean_batch([r["text"] for r in recs], ident, CleanConfig(languages=None))
        for rec, row in zip(recs, rows):
            if rec["url"] in CRAWL_LABELS:
                out["crawl"][rec["url"]] = {"label": CRAWL_LABELS[rec["url"]], "reason": row["reason"]}
    return out


def run_side(code: Path, data: Path, pages: Path | None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code),
           "GLASSBOX_LID_MODEL": os.environ.get("GLASSBOX_LID_MODEL", str(REPO / "models" / "lid.176.ftz"))}
    cmd = [sys.executable, __file__, "--worker", "--data", str(data)] + (["--pages", str(pages)] if pages else [])
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=code)
    if out.returncode:
        sys.exit(f"worker on {code} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout)


def share(kept: int, n: int) -> str:
    return f"{kept}/{n} = {kept / n:.1%}" if n else "-"


def report(sides: dict[str, dict]) -> None:
    names = list(sides)
    first = sides[names[0]]
    print("Reference prose kept (clean.languages: [lang]), per kind:")
    for lang in ("zh", "en"):
        for half in ("held_out", "calibration"):
            keys = sorted(k for k in first["prose"] if k.startswith(f"{lang}/{half}/"))
            totals = {s: [0, 0] for s in names}
            for k in keys:
                cells = []
                for s in names:
                    v = sides[s]["prose"][k]
                    cells.append(f"{s} {share(v['kept'], v['docs']):>17s}")
                    if not k.endswith("literature_classical"):
                        totals[s][0] += v["kept"]
                        totals[s][1] += v["docs"]
                why = sides[names[-1]]["prose"][k]["reasons"]
                print(f"  {k:34s} " + "  ".join(cells) + f"   {names[-1]} lost to {dict(list(why.items())[:3])}")
            print(f"  {lang}/{half} all (zh: modern kinds)".ljust(37)
                  + "  ".join(f"{s} {share(*totals[s]):>17s}" for s in names))
    if first["web"]:
        print("Ordinary Chinese web pages kept (identified as zh):")
        for half in ("dev", "held_out"):
            print(f"  {half:9s} " + "  ".join(f"{s} {share(sides[s]['web'][half]['kept'], sides[s]['web'][half]['pages'])}"
                                             f" (chrome lines {sides[s]['web'][half]['lines_removed']})" for s in names)
                  + f"   {names[-1]} lost to {sides[names[-1]]['web'][half]['reasons']}")
    print("Chinese pages of the crawl excerpt (label: reason per side):")
    for url, v in first["crawl"].items():
        print(f"  {v['label']:5s} {url[:60]:60s} " + "  ".join(f"{s} {sides[s]['crawl'][url]['reason']}" for s in names))
    print("Chinese prose: sentences counted against the count of 。！？, mean line-punctuation fractions:")
    for kind, v in first["sentences"].items():
        cells = [f"{s} {sides[s]['sentences'][kind]['c4_n_sentences']:6d} "
                 f"({sides[s]['sentences'][kind]['c4_n_sentences'] / max(1, v['marks']):.3f}), "
                 f"fineweb {sides[s]['sentences'][kind]['fineweb_line_punct_frac']:.3f}, "
                 f"c4 {sides[s]['sentences'][kind]['c4_terminal_punct_line_frac']:.3f}" for s in names]
        print(f"  {kind:22s} marks {v['marks']:6d}  " + "  ".join(cells))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, help="a copy of the code to compare (its pipeline/ and glassbox/)")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--pages", type=Path, default=REPO / "build" / "bench" / "zh_web_pages.jsonl")
    ap.add_argument("--out", type=Path, default=REPO / "build" / "bench" / "chinese_prose.json")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.data, args.pages)))
        return 0
    if not (args.data / "prose").is_dir():
        sys.exit(f"no reference prose under {args.data} (--data: the shared data folder)")
    code = {"before": args.baseline.resolve()} if args.baseline else {}
    sides = {name: run_side(path, args.data, args.pages) for name, path in (code | {"after": REPO}).items()}
    report(sides)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(sides, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
