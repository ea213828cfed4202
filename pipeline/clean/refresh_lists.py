"""Rebuild the built-in list files from their upstream sources and pin them again (lists/CHECKSUMS).

    python -m pipeline.clean.refresh_lists urls --ut1 DIR            # UT1 blacklists: DIR/<category>/domains, urls
    python -m pipeline.clean.refresh_lists safety --konsheng DIR --houbb FILE --ldnoobw DIR [--reference FILE ...]
    python -m pipeline.clean.refresh_lists checksums                 # after editing a list by hand

`urls`: DIR is a checkout of a UT1 mirror (olbat/ut1-blacklists: `blacklists/`) or the unpacked UT1 tarballs;
each of `adult` and `gambling` gives `domains` (split files `domains.0`, `domains.1`, ... and `.gz` accepted) and
`urls`, written sorted, deduplicated and gzipped to lists/urls/<category>_domains.txt.gz and _urls.txt.gz; the
adult `very_restrictive_expression` is copied as it is (lists/urls/adult_expressions.txt: the URL-word rule before
issue 41, kept for bench/url_filter.py; the filter's words are lists/urls/adult_words_*.txt, written by hand and
left alone here). A category whose domains are missing in DIR keeps no domain file (the mirror this repository was
built from could not serve UT1's 4.6-million-line adult domain list: see lists/NOTICE).

`safety`: the keyword lists per language, lists/safety/<lang>.tsv (`category<TAB>term`):
- zh: porn from Konsheng/Sensitive-lexicon (MIT) 色情词库 + 色情类型, ads from its 广告类型, illegal_trade from its
  涉枪涉爆; gambling, drugs and more ads and illegal trade from houbb/sensitive-word's dictionary (Apache-2.0):
  the entries that contain one of the category's ROOTS below (so its political entries never come in); obscene from
  LDNOOBW zh (CC BY 4.0);
- every other LDNOOBW language: obscene, matched on word boundaries;
- dropped everywhere: single characters of an unspaced script (性 is part of 性质, 一次性, 性别), ASCII terms of
  two letters or fewer inside a Chinese list (SM, JS, BT), and, with --reference, every term found in at least 1 %
  (and at least 3) of the language's reference documents, or in two of them for a language written without spaces
  (whose terms also match across word boundaries: 口活 in 人口活动): a word of ordinary prose is no signal of spam; each dropped term is written
  as a comment with its reason, so the list says what it left out.
The allow-list (lists/safety/allow/<lang>.txt, written by hand) is not touched.
"""
from __future__ import annotations

import argparse
import gzip
import json
import math
import re
import sys
from collections import Counter
from pathlib import Path

from pipeline.clean.lists import LISTS_DIR, read_lines, write_checksums

URL_CATEGORIES = ("adult", "gambling")

# Roots that select a houbb entry into a category (the first category whose root it contains wins).
ROOTS = {
    "gambling": ["赌", "博彩", "百家乐", "娱乐城", "老虎机", "六合彩", "时时彩", "真人视讯", "彩票", "投注", "下注",
                 "轮盘", "棋牌", "特码", "葡京", "威尼斯人", "彩金", "北京赛车", "pk10", "体育投注", "菠菜"],
    "drugs": ["冰毒", "摇头丸", "海洛因", "大麻", "k粉", "可卡因", "麻古", "鸦片", "吗啡", "杜冷丁", "氯胺酮", "毒品",
              "罂粟", "迷幻", "迷药", "麻黄素", "安眠药", "三唑仑"],
    "illegal_trade": ["枪支", "仿真枪", "气枪", "猎枪", "手枪", "军火", "雷管", "炸药", "假币", "假钞", "窃听",
                      "针孔摄像", "办证", "代开发票", "假证", "假文凭", "器官买卖", "售肾", "卖肾", "信用卡套现"],
    "ads": ["加微信", "加qq", "薇信", "威信", "刷单", "兼职", "代开", "推广", "招商", "加盟", "包邮", "优惠",
            "免费注册", "开户", "贷款", "代理", "返利", "日赚", "月入"],
}
_UNSPACED_CHAR = re.compile("[\u0e00-\u0eff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")
_UNSPACED_LANGS = {"zh", "ja", "th", "lo", "km", "my", "bo"}
_LDNOOBW_LANG = {"fil": "tl"}                      # LDNOOBW file name -> the identifier's code
_LDNOOBW_SKIP = {"tlh", "fr-CA-u-sd-caqc"}         # Klingon; a regional duplicate of fr


def _gz_write(path: Path, lines: list[str]) -> None:
    # mtime 0: a rebuild from the same input is byte-identical, so its checksum does not move
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
        gz.write(("\n".join(lines) + "\n").encode("utf-8"))


def _entries(path: Path) -> list[str]:
    return [line.strip() for _, line in read_lines(path) if line.strip()]


def refresh_urls(ut1: Path) -> dict:
    base = ut1 / "blacklists" if (ut1 / "blacklists").is_dir() else ut1
    out_dir = LISTS_DIR / "urls"
    out_dir.mkdir(parents=True, exist_ok=True)
    counts = {}
    for cat in URL_CATEGORIES:
        src = base / cat
        if not src.is_dir():
            raise SystemExit(f"{src}: no UT1 '{cat}' folder; point --ut1 at a UT1 checkout (its blacklists/ folder)")
        for kind in ("domains", "urls"):
            parts = sorted(p for p in src.iterdir() if p.name == kind or p.name.startswith(kind + "."))
            entries = sorted({e.lower() for p in parts for e in _entries(p)})
            target = out_dir / f"{cat}_{kind}.txt.gz"
            if entries:
                _gz_write(target, entries)
            elif target.exists():
                target.unlink()
            counts[f"{cat}_{kind}"] = len(entries)
        expr = src / "very_restrictive_expression"
        if expr.is_file():
            (out_dir / f"{cat}_expressions.txt").write_text(expr.read_text(encoding="utf-8"), encoding="utf-8")
    write_checksums()
    return counts


def _reference_hits(lists: dict[str, dict[str, str]], reference: list[Path]) -> dict[str, Counter]:
    """{lang: in how many of the language's reference documents (JSONL `lang`, `text`) each term counts},
    matched as the clean stage matches (pipeline/clean/safety.py: word boundaries in spaced scripts)."""
    from pipeline.clean.safety import Matcher

    matchers = {lang: Matcher([(cat, t) for t, cat in terms.items()]) for lang, terms in lists.items()}
    hits: dict[str, Counter] = {}
    for path in reference:
        for _, line in read_lines(path):
            doc = json.loads(line)
            m = matchers.get(doc["lang"])
            if m is not None:
                hits.setdefault(doc["lang"], Counter()).update({t for _, t in m.matches(doc["text"])})
    return hits


def _keep(term: str, chinese: bool) -> str | None:
    """Why a term is dropped, or None."""
    if len(term) == 1 and _UNSPACED_CHAR.match(term):
        return "single character of an unspaced script"
    if chinese and term.isascii() and len(term) <= 2:
        return "two ASCII letters or fewer"
    return None


def _pruned(folder: Path) -> dict[str, set[tuple[str, str]]]:
    """{lang: {(category, term)}} of lists/safety/prune/<lang>.tsv: upstream terms that are ordinary words of web
    pages (measured on ordinary pages, each file says how), dropped with that reason."""
    from pipeline.clean.safety import read_list

    return {f.stem: set(read_list(f)) for f in sorted(folder.glob("*.tsv"))} if folder.is_dir() else {}


def refresh_safety(konsheng: Path, houbb: Path, ldnoobw: Path, reference: list[Path]) -> dict:
    out_dir = LISTS_DIR / "safety"
    out_dir.mkdir(parents=True, exist_ok=True)
    vocab = konsheng / "Vocabulary"
    zh: dict[str, str] = {}                     # term -> category (first source wins)

    def add(term: str, cat: str) -> None:
        term = term.strip().lower()
        if term and term not in zh:
            zh[term] = cat

    for name, cat in (("色情词库", "porn"), ("色情类型", "porn"), ("涉枪涉爆", "illegal_trade"), ("广告类型", "ads")):
        for t in _entries(vocab / f"{name}.txt"):
            add(t, cat)
    for t in _entries(houbb):
        low = t.lower()
        for cat, roots in ROOTS.items():
            if any(r in low for r in roots):
                add(t, cat)
                break
    for t in _entries(ldnoobw / "zh.txt"):
        add(t, "obscene")
    lists = {"zh": zh}
    for f in sorted(ldnoobw.glob("*.txt")):
        lang = _LDNOOBW_LANG.get(f.stem, f.stem)
        if f.stem in _LDNOOBW_SKIP or lang == "zh":
            continue
        lists[lang] = {t.strip().lower(): "obscene" for t in _entries(f)}
    hits = _reference_hits(lists, reference) if reference else {}
    pruned = _pruned(out_dir / "prune")
    n_reference = Counter(json.loads(line)["lang"] for p in reference for _, line in read_lines(p))
    counts = {}
    for lang, terms in sorted(lists.items()):
        common = hits.get(lang, Counter())
        n_docs = n_reference.get(lang, 0)
        # terms of an unspaced script match inside other words (口活 in 人口活动): two prose hits are enough
        often = 2 if lang in _UNSPACED_LANGS else max(3, math.ceil(0.01 * n_docs))
        kept, dropped = [], []
        for t, cat in sorted(terms.items(), key=lambda tc: (tc[1], tc[0])):
            why = (_keep(t, lang == "zh") or
                   (f"on ordinary web pages, lists/safety/prune/{lang}.tsv" if (cat, t) in pruned.get(lang, ()) else None)
                   or (f"in {common[t]} of {n_docs} reference documents" if common[t] >= often else None))
            (dropped if why else kept).append(f"{cat}\t{t}" if not why else f"# dropped ({why}): {cat}\t{t}")
        head = [f"# {lang}: content-safety terms, category<TAB>term; built by `python -m pipeline.clean.refresh_lists "
                f"safety` from the sources in lists/NOTICE; do not edit by hand"]
        (out_dir / f"{lang}.tsv").write_text("\n".join(head + kept + dropped) + "\n", encoding="utf-8")
        counts[lang] = {"kept": len(kept), "dropped": len(dropped)}
    write_checksums()
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.clean.refresh_lists", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    u = sub.add_parser("urls", help="UT1 adult and gambling lists")
    u.add_argument("--ut1", type=Path, required=True)
    s = sub.add_parser("safety", help="content-safety keyword lists")
    s.add_argument("--konsheng", type=Path, required=True, help="a checkout of Konsheng/Sensitive-lexicon")
    s.add_argument("--houbb", type=Path, required=True, help="houbb/sensitive-word's dictionary file")
    s.add_argument("--ldnoobw", type=Path, required=True, help="the LDNOOBW lists, <lang>.txt")
    s.add_argument("--reference", type=Path, nargs="*", default=[],
                   help="JSONL reference prose (calibration half only): terms in 1 %% of a language's documents are dropped")
    sub.add_parser("checksums", help="pin the list files as they are")
    args = ap.parse_args(argv)
    if args.what == "urls":
        print(json.dumps(refresh_urls(args.ut1), indent=1))
    elif args.what == "safety":
        print(json.dumps(refresh_safety(args.konsheng, args.houbb, args.ldnoobw, args.reference), indent=1))
    else:
        write_checksums()
    return 0


if __name__ == "__main__":
    sys.exit(main())
