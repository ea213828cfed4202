"""Benchmark: the adult URL-word rule (pipeline/clean/urls.py, check 3) before and after issue 41, on URLs of
ordinary pages and on UT1's adult URLs.

    python bench/url_filter.py [--show]        # --show lists every URL a rule rejects, with its evidence

Rules, each measured alone (`words`) and inside the whole filter (`filter`: domain and URL lists too, defaults):
- before: UT1's adult URL expressions (lists/urls/adult_expressions.txt, UT1's very_restrictive_expression), as
  the filter applied them until issue 41: one regular expression searched in host and path;
- after: the hard/soft word rule of pipeline/clean/urls.py.
Both whole-filter columns use this checkout's lists and lookups (the URL list's `?`/`#` entries match since issue 41
too), so they differ by the word rule only.
URL sets:
- c4: the 1,000 URLs of ../shared/data/web_en/c4-sample.jsonl.gz (pages C4 kept: ordinary web);
- extraction: the URLs of ../shared/data/extraction (AEB ground truth `url`, trafilatura's evaluation keys that
  are URLs, the canonical or og:url link of the Readability pages that carry one): news, blogs, multilingual;
- ut1_urls: UT1's adult URL entries (lists/urls/adult_urls.txt.gz, `host/path`), as http:// URLs;
- ut1_hosts: their distinct hosts, as http://host/ (the front page of each; tumblr.com, etsy.com and other
  platforms are among them, so 100 % is not the goal there).
UT1's entries are on the URL list, so the whole filter rejects every one of them: the word rule alone says what
it would catch of such URLs when a list misses them. Writes build/bench/url_filter.json.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DATA = Path(os.environ.get("GLASSBOX_SHARED_DATA") or REPO.parent / "shared" / "data")

from pipeline.clean.list_settings import UrlFilterConfig  # noqa: E402
from pipeline.clean.lists import builtin, read_lines  # noqa: E402
from pipeline.clean.urls import UrlFilter, adult_words, split_url  # noqa: E402

_CANONICAL = re.compile(r"""<link[^>]+rel=["']canonical["'][^>]*href=["']([^"']+)|"""
                        r"""<meta[^>]+property=["']og:url["'][^>]*content=["']([^"']+)""", re.I)


class Ut1Expressions:
    """Today's rule before issue 41: UT1's expressions, one alternation searched in host/path."""

    def __init__(self):
        exprs = [line.strip() for _, line in read_lines(builtin("urls/adult_expressions.txt"))]
        self.pattern = re.compile("|".join(f"(?:{e})" for e in exprs))

    def evidence(self, host_path: str) -> tuple[str, ...]:
        m = self.pattern.search(host_path)
        return (m.group(0),) if m else ()

    def rejects(self, host_path: str) -> bool:
        return self.pattern.search(host_path) is not None


def c4_urls() -> list[str]:
    with gzip.open(DATA / "web_en" / "c4-sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [json.loads(line)["url"] for line in fh if line.strip()]


def extraction_urls() -> list[str]:
    base = DATA / "extraction"
    urls = [v["url"] for v in json.loads((base / "aeb" / "ground-truth.json").read_text(encoding="utf-8")).values()
            if v.get("url")]
    urls += [k for k in json.loads((base / "trafilatura_eval" / "evaldata.json").read_text(encoding="utf-8"))
             if k.startswith(("http://", "https://"))]
    for page in sorted((base / "readability").glob("*/source.html")):
        m = _CANONICAL.search(page.read_text(encoding="utf-8", errors="replace"))
        if m and (m.group(1) or m.group(2)).startswith("http"):
            urls.append(m.group(1) or m.group(2))
    return urls


def ut1_urls() -> list[str]:
    return [f"http://{line.strip()}" for _, line in read_lines(builtin("urls/adult_urls.txt.gz"))]


def ut1_hosts() -> list[str]:
    return sorted({f"http://{split_url(u)[0]}/" for u in ut1_urls()})


def measure(show: bool = False) -> dict:
    sets = {"c4": c4_urls(), "extraction": extraction_urls(), "ut1_urls": ut1_urls(), "ut1_hosts": ut1_hosts()}
    rules = {"before": Ut1Expressions(), "after": adult_words()}
    out: dict = {"n": {k: len(v) for k, v in sets.items()}}
    for side, words in rules.items():
        whole = UrlFilter(UrlFilterConfig())
        whole.words = words                       # the same lists around either word rule
        for name, urls in sets.items():
            word_hits = [u for u in urls if words.rejects(split_url(u)[1])]
            filter_hits = [u for u in urls if whole.category(u) not in (None, "allowed")]
            out[f"{side}/{name}"] = {"words": len(word_hits), "filter": len(filter_hits)}
            if show and name in ("c4", "extraction"):
                for u in filter_hits:
                    why = words.evidence(split_url(u)[1]) or (whole.category(u),)
                    print(f"  {side:6} {name:10} {u}  {why}")
    return out


def _cell(k: int, n: int) -> str:
    return f"{k:,}/{n:,} = {100 * k / n:.1f} %"


def table(res: dict) -> str:
    n = res["n"]
    rows = ["| URLs | rule | before: words | before: whole filter | after: words | after: whole filter |",
            "|---|---|---:|---:|---:|---:|"]
    what = {"c4": "ordinary (C4), rejected", "extraction": "ordinary (extraction set), rejected",
            "ut1_urls": "UT1 adult URLs, caught", "ut1_hosts": "UT1 adult hosts' front pages, caught"}
    for name, label in what.items():
        b, a = res[f"before/{name}"], res[f"after/{name}"]
        rows.append(f"| {name} | {label} | {_cell(b['words'], n[name])} | {_cell(b['filter'], n[name])} | "
                    f"{_cell(a['words'], n[name])} | {_cell(a['filter'], n[name])} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--show", action="store_true", help="print every ordinary URL a rule rejects, and why")
    args = ap.parse_args(argv)
    if not (DATA / "web_en" / "c4-sample.jsonl.gz").is_file():
        print(f"{DATA}: no shared data (set GLASSBOX_SHARED_DATA)", file=sys.stderr)
        return 2
    res = measure(show=args.show)
    print(table(res))
    out = REPO / "build" / "bench" / "url_filter.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
