"""Build the set of ordinary Chinese web pages bench/chinese_prose.py measures: real news, government, forum
and blog pages from two openly licensed extraction benchmarks, through the pipeline's own extraction.

    git clone https://github.com/opendatalab/magic-html                 # Apache-2.0
    git clone https://github.com/GeneralNewsExtractor/GeneralNewsExtractor  # MIT at the commit used
    python bench/chinese_web_pages.py --magic-html magic-html --gne GeneralNewsExtractor \
        [--out build/bench/zh_web_pages.jsonl]

Sources, read at pinned commits with `git show` (a clone or a bare mirror will do):
- opendatalab/magic-html @ 47d4a7fed12030e906a093b074637f178cb46ef2 (Apache-2.0): benchmark/data/{article,
  forum}/htmls/*.html, the pages whose ground-truth content (base.json) is at least 30 % Han characters;
- GeneralNewsExtractor/GeneralNewsExtractor @ cb38d9df6fa8dfde999ea08d3d8bc20e1e220be8, the last commit under
  its MIT licence (the repository moved to GPL-3.0 in 89b1de8): tests/**/*.html and visiable_test/**/*.html,
  Chinese news pages.
Copyright of the pages stays with their publishers; the repositories distribute them as test fixtures. Six
of the magic-html pages are in the repository as a test fixture (tests/fixtures/zh_web, NOTICE).

Each output line: {"id", "repo", "commit", "path", "url", "group", "half", "text"}; `half` splits the pages by
a hash of their path (dev: seen while writing the Chinese chrome patterns, held_out: not). Pages in another
language (the Japanese pages of magic-html) are kept here and left out by the bench's language ID.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipeline.extract.html import extract_html  # noqa: E402
from pipeline.extract.settings import ExtractConfig  # noqa: E402
from pipeline.read.charset import decode_html  # noqa: E402

MAGIC_HTML = ("opendatalab/magic-html", "47d4a7fed12030e906a093b074637f178cb46ef2")
GNE = ("GeneralNewsExtractor/GeneralNewsExtractor", "cb38d9df6fa8dfde999ea08d3d8bc20e1e220be8")
_HAN = re.compile("[\u4e00-\u9fff]")


def show(git_dir: Path, commit: str, path: str) -> bytes:
    return subprocess.run(["git", "-C", str(git_dir), "show", f"{commit}:{path}"], capture_output=True,
                          check=True).stdout


def half_of(repo: str, path: str) -> str:
    return ("dev", "held_out")[int(hashlib.sha1(f"zhweb:{repo}/{path}".encode()).hexdigest(), 16) % 2]


def pages(magic_html: Path, gne: Path) -> list[dict]:
    out = []
    repo, commit = MAGIC_HTML
    for group in ("article", "forum"):
        base = json.loads(show(magic_html, commit, f"benchmark/data/{group}/base.json"))
        for key, v in base.items():
            if len(_HAN.findall(v["content"])) < 0.3 * max(1, len(v["content"])):
                continue
            path = f"benchmark/data/{group}/htmls/{key}.html"
            out.append({"repo": repo, "commit": commit, "path": path, "url": v["url"], "group": group,
                        "raw": show(magic_html, commit, path)})
    repo, commit = GNE
    listed = subprocess.run(["git", "-C", str(gne), "ls-tree", "-r", "--name-only", commit], capture_output=True,
                            text=True, check=True).stdout.split()
    for path in listed:
        if path.endswith(".html") and path.startswith(("tests/", "visiable_test/")):
            out.append({"repo": repo, "commit": commit, "path": path, "url": None, "group": "news",
                        "raw": show(gne, commit, path)})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--magic-html", type=Path, required=True, help="a clone of opendatalab/magic-html")
    ap.add_argument("--gne", type=Path, required=True, help="a clone of GeneralNewsExtractor/GeneralNewsExtractor")
    ap.add_argument("--out", type=Path, default=REPO / "build" / "bench" / "zh_web_pages.jsonl")
    args = ap.parse_args(argv)
    cfg = ExtractConfig()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with args.out.open("w", encoding="utf-8") as fh:
        for p in pages(args.magic_html, args.gne):
            decoded = decode_html(p.pop("raw"), None)
            text = (extract_html(decoded[0], p["url"], cfg) or "").strip() if decoded else ""
            p |= {"id": f"{p['repo']}/{p['path']}", "half": half_of(p["repo"], p["path"]), "text": text}
            fh.write(json.dumps(p, ensure_ascii=False) + "\n")
            n += 1
    print(f"wrote {args.out} ({n} pages)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
