"""Pack real web pages into WARC files: the crawl of the extraction-engine ablation
(examples/ablate/engines.yaml; `make ablate-engines` runs this first).

Every page of ../shared/data/extraction (Zyte AEB, Mozilla Readability's cases, trafilatura's evaluation
pages; mostly English and German, some French, Polish, Chinese) and of bench/data/zh_extraction (Chinese
news, blogs and forums) goes once, unchanged, into a WARC response record under its own URL.
Usage: python examples/make_engine_crawl.py OUT_DIR [--shared ../shared/data] [--files 4]
"""
import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipeline.extract.evaluation import aeb_pages, readability_pages, trafilatura_pages, zh_pages  # noqa: E402
from pipeline.read.warc_writer import write_html_warc  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--files", type=int, default=4)
    args = ap.parse_args()
    ex = args.shared / "extraction"
    roots = ((aeb_pages, ex / "aeb"), (readability_pages, ex / "readability"),
             (trafilatura_pages, ex / "trafilatura_eval"), (zh_pages, REPO / "bench" / "data" / "zh_extraction"))
    missing = [str(root) for _, root in roots if not root.exists()]
    if missing:
        sys.exit(f"not found: {', '.join(missing)}; pass --shared DIR (the folder that holds extraction/)")
    pages = [(f"https://crawl.example/{p.set}/{p.name}", p.raw, "2024-01-01T00:00:00Z")
             for loader, root in roots for p in loader(root)]
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("crawl-*.warc.gz"):
        old.unlink()
    for k in range(args.files):  # pages of every set in every file
        write_html_warc(str(args.out / f"crawl-{k:02d}.warc.gz"), pages[k::args.files])
    print(f"{len(pages)} pages in {args.files} WARC files under {args.out}")


if __name__ == "__main__":
    main()
