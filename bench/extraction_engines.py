"""Benchmark: the extraction engines on pages with ground truth: F1 per set, pages per CPU-second, the
hybrid question, and what the union adds after the clean rules.

    python bench/extraction_engines.py [--shared DIR] [--zh DIR] [--rounds 2]

Sets (pipeline/extract/evaluation.py): ../shared/data/extraction's aeb, readability and trafilatura
pages, and the Chinese pages of bench/data/zh_extraction; the Chinese pages of the first three
(readability's pixnet, trafilatura's four) are also reported apart. Each page is decoded once
(the pipeline's own charset detection), then every engine extracts every page in this one process,
`--rounds` times in turn; cost is CPU time of this process (time.process_time), the best round per page,
so the figures are docs/s on one core, steadier than wall time on a shared machine.

Hybrid: resiliparse on every page, trafilatura where resiliparse's text fails a cheap check (fewer than N
characters); its F1 and cost follow exactly from the per-page texts and costs of both engines.

Union: each engine's text of every page through the clean stage's rules (clean.languages: null, every
language, the default rules): pages kept by trafilatura alone, by resiliparse alone, and by either (the
union keeps trafilatura's text where both pass), with their characters.

Results: build/bench/extraction_engines.json and a Markdown table on stdout.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipeline.extract.engines import RESILIPARSE, SINGLE_ENGINES, TRAFILATURA  # noqa: E402
from pipeline.extract.evaluation import (aeb_pages, readability_pages, snippet_counts, snippet_f1,  # noqa: E402
                                         token_f1, trafilatura_pages, zh_pages)
from pipeline.extract.html import extract_html  # noqa: E402
from pipeline.extract.settings import ExtractConfig  # noqa: E402
from pipeline.read.charset import decode_html  # noqa: E402

SHARED = REPO.parent / "shared" / "data"
ZH = REPO / "bench" / "data" / "zh_extraction"
HYBRID_CHECKS = (1, 200, 500)   # fall back to trafilatura when resiliparse found fewer characters


def load_pages(shared: Path, zh: Path) -> list:
    ex = shared / "extraction"
    pages = []
    for loader, root in ((aeb_pages, ex / "aeb"), (readability_pages, ex / "readability"),
                         (trafilatura_pages, ex / "trafilatura_eval"), (zh_pages, zh)):
        if root.exists():
            pages += list(loader(root))
        else:
            print(f"note: {root} not found; its set is left out", file=sys.stderr)
    return pages


def measure(pages: list, htmls: list[str], cfg: ExtractConfig, rounds: int) -> dict:
    """{engine: (texts, cpu seconds per page)}: the best of `rounds` per page, engines alternated."""
    out = {e: ([None] * len(pages), [float("inf")] * len(pages)) for e in SINGLE_ENGINES}
    for e in SINGLE_ENGINES:  # warm-up: imports, lazy tables
        for html in htmls[:5]:
            extract_html(html, None, cfg, e)
    for _ in range(rounds):
        for e in SINGLE_ENGINES:
            texts, costs = out[e]
            for i, (page, html) in enumerate(zip(pages, htmls)):
                t0 = time.process_time()
                try:
                    text = extract_html(html, page.url, cfg, e)
                except Exception as exc:  # counted as no text, as the stage rejects it
                    text = None
                    print(f"  {e} failed on {page.set}/{page.name}: {type(exc).__name__}", file=sys.stderr)
                costs[i] = min(costs[i], time.process_time() - t0)
                texts[i] = (text or "").strip()
    return out


def set_rows(pages: list) -> list[tuple[str, list[int]]]:
    """(label, page indices) of every reported set and Chinese subset."""
    by_set: dict[str, list[int]] = {}
    for i, p in enumerate(pages):
        by_set.setdefault(p.set, []).append(i)
    rows = []
    for name in ("aeb", "readability", "trafilatura", "zh"):
        idx = by_set.get(name, [])
        if idx:
            rows.append((name, idx))
        zh = [i for i in idx if pages[i].chinese]
        if name != "zh" and zh:
            rows.append((f"{name} (Chinese pages)", zh))
    return rows


def quality(pages: list, idx: list[int], texts: list[str]) -> dict:
    if pages[idx[0]].truth is None:  # trafilatura's snippets
        return {**snippet_f1([snippet_counts(pages[i], texts[i]) for i in idx]), "measure": "snippet F1"}
    scores = [token_f1(pages[i].truth, texts[i]) for i in idx]
    return {"f1": statistics.fmean(scores), "median_f1": statistics.median(scores), "measure": "token F1"}


def hybrid(res: dict, min_chars: int) -> tuple[list[str], list[float], int]:
    """(texts, costs, fallbacks) of resiliparse first, trafilatura below `min_chars` characters."""
    (rt, rc), (tt, tc) = res[RESILIPARSE], res[TRAFILATURA]
    texts, costs, falls = [], [], 0
    for r_text, r_cost, t_text, t_cost in zip(rt, rc, tt, tc):
        if len(r_text) < min_chars:
            texts.append(t_text)
            costs.append(r_cost + t_cost)
            falls += 1
        else:
            texts.append(r_text)
            costs.append(r_cost)
    return texts, costs, falls


def union_yield(pages: list, res: dict) -> dict:
    """Pages (and characters) the clean rules keep from each engine's text, and from either."""
    from pipeline.clean.langid import get_identifier
    from pipeline.clean.settings import CleanConfig
    from pipeline.clean.stage import clean_batch

    cfg = CleanConfig(languages=None)
    identifier = get_identifier()
    verdict = {e: clean_batch(res[e][0], identifier, cfg) for e in SINGLE_ENGINES}
    out = {}
    for label, idx in set_rows(pages) + [("all", list(range(len(pages))))]:
        kept = {e: [i for i in idx if verdict[e][i]["reason"] is None] for e in SINGLE_ENGINES}
        either = sorted(set(kept[TRAFILATURA]) | set(kept[RESILIPARSE]))
        chars = {e: sum(len(verdict[e][i]["text"]) for i in kept[e]) for e in SINGLE_ENGINES}
        union_chars = sum(len(verdict[TRAFILATURA if i in kept[TRAFILATURA] else RESILIPARSE][i]["text"])
                          for i in either)
        out[label] = {"pages": len(idx), **{f"kept_{e}": len(kept[e]) for e in SINGLE_ENGINES},
                      "kept_union": len(either), **{f"chars_{e}": chars[e] for e in SINGLE_ENGINES},
                      "chars_union": union_chars,
                      "both": len(set(kept[TRAFILATURA]) & set(kept[RESILIPARSE]))}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", type=Path, default=SHARED, help="the shared data folder (holds extraction/)")
    ap.add_argument("--zh", type=Path, default=ZH, help="the Chinese page set (html/, truth/)")
    ap.add_argument("--rounds", type=int, default=2, help="every engine on every page this often; best per page")
    ap.add_argument("--no-yield", action="store_true", help="skip the clean-rules yield of the union")
    ap.add_argument("--out", type=Path, default=REPO / "build" / "bench" / "extraction_engines.json")
    args = ap.parse_args()

    pages = load_pages(args.shared, args.zh)
    decoded = [decode_html(p.raw, "text/html") for p in pages]
    undecodable = [f"{p.set}/{p.name}" for p, d in zip(pages, decoded) if d is None]
    pages = [p for p, d in zip(pages, decoded) if d is not None]
    htmls = [d[0] for d in decoded if d is not None]
    print(f"{len(pages)} pages ({len(undecodable)} undecodable left out)", flush=True)
    res = measure(pages, htmls, ExtractConfig(), args.rounds)

    result = {"pages": len(pages), "undecodable": undecodable, "rounds": args.rounds, "sets": {}, "hybrid": {}}
    print("\n| set | pages | measure | trafilatura F1 | resiliparse F1 | trafilatura docs/s/core | "
          "resiliparse docs/s/core | cost ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for label, idx in set_rows(pages) + [("all", list(range(len(pages))))]:
        row = {"pages": len(idx)}
        for e in SINGLE_ENGINES:
            texts, costs = res[e]
            cpu = sum(costs[i] for i in idx)
            q = quality(pages, idx, texts) if label != "all" else {}
            row[e] = {**q, "cpu_s": cpu, "docs_per_cpu_s": len(idx) / cpu}
        result["sets"][label] = row
        t, r = row[TRAFILATURA], row[RESILIPARSE]
        f1 = (lambda x: f"{x['f1']:.3f}" + (f" (median {x['median_f1']:.3f})" if "median_f1" in x else "")
              if "f1" in x else "-")
        print(f"| {label} | {len(idx)} | {t.get('measure', '-')} | {f1(t)} | {f1(r)} | "
              f"{t['docs_per_cpu_s']:.1f} | {r['docs_per_cpu_s']:.1f} | "
              f"{r['docs_per_cpu_s'] / t['docs_per_cpu_s']:.1f} x |")

    print("\nhybrid: resiliparse, then trafilatura where resiliparse found fewer than N characters")
    print("| N | falls back | " + " | ".join(label for label, _ in set_rows(pages)) + " | CPU s/doc |")
    print("|---|---|" + "---|" * len(set_rows(pages)) + "---|")
    engines_as = {f"{e}": (res[e][0], res[e][1], None) for e in SINGLE_ENGINES}
    variants = {**engines_as, **{f"hybrid<{n}": hybrid(res, n) for n in HYBRID_CHECKS}}
    for name, (texts, costs, falls) in variants.items():
        f1s = {label: quality(pages, idx, texts)["f1"] for label, idx in set_rows(pages)}
        per_doc = sum(costs) / len(costs)
        result["hybrid"][name] = {"fallbacks": falls, "f1": f1s, "cpu_s_per_doc": per_doc}
        print(f"| {name} | {'-' if falls is None else falls} | " + " | ".join(f"{v:.3f}" for v in f1s.values())
              + f" | {per_doc * 1000:.1f} ms |")

    if not args.no_yield:
        result["union"] = union_yield(pages, res)
        print("\nunion after the clean rules (languages: null): pages kept (characters kept)")
        print("| set | pages | trafilatura | resiliparse | either (union) | union gain over trafilatura |")
        print("|---|---|---|---|---|---|")
        for label, u in result["union"].items():
            gain = (f"{u['chars_union'] / u['chars_trafilatura'] - 1:+.1%}" if u["chars_trafilatura"] else "-")
            print(f"| {label} | {u['pages']} | {u['kept_trafilatura']} ({u['chars_trafilatura']:,}) | "
                  f"{u['kept_resiliparse']} ({u['chars_resiliparse']:,}) | {u['kept_union']} "
                  f"({u['chars_union']:,}) | {u['kept_union'] - u['kept_trafilatura']:+d} pages, {gain} chars |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwritten {args.out}")


if __name__ == "__main__":
    main()
