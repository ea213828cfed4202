"""Benchmark: the pipeline's extract + clean on Spark against bare trafilatura in a process pool.

Both sides get the same pages and the same width (cores), measured in the same run, alternating,
so the machine's noise hits both. The pages are repeated (--repeat) so that Spark's fixed cost per
stage (job scheduling, Parquet commit: a few seconds) weighs as little as on a real crawl. The floor is `trafilatura.extract` alone on pre-decoded HTML:
no WARC reading, no charset detection, no cleaning, no Spark, no Parquet. The pipeline's figure
includes all of those (Spark session start-up excepted). Target: pipeline / floor >= 0.8.

    python bench/extract_clean.py [--pages DIR]... [--repeat 4] [--files 16] [--width 2] [--rounds 2]

Without --pages it uses the real pages of ../shared/data/extraction (Zyte AEB, trafilatura's
evaluation set, Mozilla Readability cases).
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import sys
import time
from multiprocessing import get_context
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipeline.config import parse_config  # noqa: E402
from pipeline.extract.html import ExtractConfig, trafilatura_kwargs  # noqa: E402
from pipeline.read.warc_writer import write_html_warc  # noqa: E402

DEFAULT_PAGES = [REPO.parent / "shared" / "data" / "extraction"]


def find_pages(roots: list[Path]) -> list[Path]:
    pages = []
    for root in roots:
        pages += sorted(root.rglob("*.html.gz")) + sorted(root.rglob("source.html"))
        pages += sorted(p for p in root.rglob("*.html") if p.name not in ("source.html", "expected.html"))
    return pages


def read_page(p: Path) -> bytes:
    data = p.read_bytes()
    return gzip.decompress(data) if p.suffix == ".gz" else data


def build_warcs(pages: list[bytes], out: Path, n_files: int, repeat: int) -> int:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    items = [(f"https://bench.example/{r}/{i}", html, "2024-01-01T00:00:00Z")
             for r in range(repeat) for i, html in enumerate(pages)]
    for k in range(n_files):
        write_html_warc(str(out / f"bench-{k:03d}.warc.gz"), items[k::n_files])
    return len(items)


# --- the floor: bare trafilatura, one process per core --------------------------------------------
_FLOOR_PAGES: list[str] = []


def _floor_init(pages: list[str]) -> None:
    global _FLOOR_PAGES
    _FLOOR_PAGES = pages
    import logging
    logging.getLogger("trafilatura").setLevel(logging.CRITICAL)


def _floor_one(i: int) -> int:
    import trafilatura

    text = trafilatura.extract(_FLOOR_PAGES[i], **trafilatura_kwargs(ExtractConfig()))
    return 1 if text else 0


def run_floor(pages: list[str], width: int) -> float:
    with get_context("fork").Pool(width, initializer=_floor_init, initargs=(pages,)) as pool:
        pool.apply(time.sleep, (0,))  # workers up before the clock starts, as Spark's are
        t0 = time.perf_counter()
        sum(pool.imap_unordered(_floor_one, range(len(pages)), chunksize=4))
        return time.perf_counter() - t0


# --- the pipeline: extract + clean on Spark ----------------------------------------------------------
def run_pipeline(spark, warc_dir: Path, data_dir: Path) -> tuple[float, dict]:
    from jobs import clean, extract

    cfg = parse_config({"sources": {"bench": {"format": "warc", "paths": [str(warc_dir / "*.warc.gz")]}}})
    t0 = time.perf_counter()
    s1 = extract.run(spark, cfg, str(data_dir))
    s2 = clean.run(spark, cfg, str(data_dir))
    return time.perf_counter() - t0, {"extract_out": s1.records_out, "clean_out": s2.records_out,
                                      "extract_s": s1.wall_s, "clean_s": s2.wall_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=Path, action="append", help="folder of .html/.html.gz pages (repeatable)")
    ap.add_argument("--repeat", type=int, default=4, help="copies of each page, to amortise fixed costs")
    ap.add_argument("--files", type=int, default=16, help="WARC files to spread the pages over")
    ap.add_argument("--width", type=int, default=2, help="cores: Spark local[N] and the pool's size")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--work", type=Path, default=REPO / "build" / "bench")
    args = ap.parse_args()

    roots = args.pages or DEFAULT_PAGES
    paths = find_pages(roots)
    if not paths:
        sys.exit(f"no pages found under {', '.join(map(str, roots))}; pass --pages DIR")
    raw = [read_page(p) for p in paths]
    n_docs = build_warcs(raw, args.work / "warcs", args.files, args.repeat)
    floor_pages = [h.decode("utf-8", "replace") for h in raw] * args.repeat

    os.environ["SPARK_MASTER"] = f"local[{args.width}]"
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("SPARK_CONF_DIR", str(REPO / "conf"))
    from pipeline.run.spark import get_spark

    spark = get_spark("glassbox-bench", {"spark.ui.enabled": "false"})
    # Warm-up on a slice: JVM JIT, Python workers, models loaded, as in any long-running job.
    build_warcs(raw[:64], args.work / "warmup-warcs", 2, 1)
    run_pipeline(spark, args.work / "warmup-warcs", args.work / "warmup")

    floors, pipes, counts = [], [], {}
    for r in range(args.rounds):
        floors.append(n_docs / run_floor(floor_pages, args.width))
        secs, counts = run_pipeline(spark, args.work / "warcs", args.work / "data")
        pipes.append(n_docs / secs)
        print(f"round {r + 1}: floor {floors[-1]:.1f} docs/s, pipeline {pipes[-1]:.1f} docs/s, "
              f"ratio {pipes[-1] / floors[-1]:.2f} (extract {counts['extract_s']}s, clean {counts['clean_s']}s)",
              flush=True)
    spark.stop()

    floor, pipe = statistics.median(floors), statistics.median(pipes)
    result = {"pages": len(paths), "docs": n_docs, "width": args.width, "rounds": args.rounds,
              "floor_docs_per_s": round(floor, 1), "pipeline_docs_per_s": round(pipe, 1),
              "ratio": round(pipe / floor, 3), "target_ratio": 0.8, "counts": counts}
    (args.work / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(f"extract+clean reaches {pipe / floor:.2f} of the bare-trafilatura floor (target 0.80)")


if __name__ == "__main__":
    main()
