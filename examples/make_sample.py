"""Rebuild examples/sample/aeb-articles.warc.gz from the Zyte article-extraction benchmark pages.

The pages are wrapped unchanged in WARC response records. The last three pages are captured a
second time under another date, as a recrawl would, so the demo has real exact duplicates.
Usage: python examples/make_sample.py ../shared/data/extraction/aeb examples/sample/aeb-articles.warc.gz
"""
import gzip
import json
import sys
from pathlib import Path

from pipeline.read.warc_writer import write_html_warc

N_PAGES = 30
N_RECRAWLED = 3


def main(aeb_dir: str, out: str) -> None:
    truth = json.loads((Path(aeb_dir) / "ground-truth.json").read_text(encoding="utf-8"))
    keys = sorted(truth)[:N_PAGES]
    pages = [(truth[k]["url"], gzip.decompress((Path(aeb_dir) / "html" / f"{k}.html.gz").read_bytes()),
              "2024-05-01T00:00:00Z") for k in keys]
    recrawl = [(url, html, "2024-06-01T00:00:00Z") for url, html, _ in pages[-N_RECRAWLED:]]
    print(write_html_warc(out, pages + recrawl), "records written to", out)


if __name__ == "__main__":
    main(*sys.argv[1:3])
