"""The labelled Chinese page set of the spam axis (issue 38) and its held-out protocol.

Pages, all real web text the repository already holds (their NOTICEs name repository, commit and licence):

| source | pages | labels |
|---|---|---|
| flagdata-cc-zh | FlagOpen/FlagData's Chinese Common Crawl sample (May 2022), both halves in the repository | read one by one (quality_models/data/spam_zh/labels.tsv, RUBRIC.md) |
| cc2019-dolma | the Chinese pages of dolma's 2019 Common Crawl excerpt | read one by one |
| resiliparse-cc | the sample's Common Crawl excerpt (examples/sample/resiliparse-cc-excerpt.warc.gz), extracted | read one by one (tests/data/zh_spam/labels.tsv) |
| zh-extraction-pages | 69 news, forum and government pages, main text copied by hand (immortal-autumn) | ok by source |
| flagdata-zhihu-qa | 1,000 Zhihu answers | ok by source |
| zh-web-pages | magic-html and GNE news/forum pages through the pipeline's extraction (bench/chinese_web_pages.py; optional: needs that file) | ok by source |

**Held-out protocol.** Every page has a `split`: `dev` or `held_out`, by a salted sha1 of its host (its id when it
has no URL), so all pages of one site fall on one side; zh-web-pages keep the halves bench/chinese_web_pages.py gave
them (dev = the pages the Chinese chrome patterns were written from). Lexicon review, classifier training,
threshold calibration and synthetic positives read `dev` only; every figure is measured on `held_out`.
Kept out of everything: CASIA-LM/ChineseWebText and tgtgdeploy/seo-admin-backend (the evaluation's own pages).

**Synthetic positives** (`synthetic`): a dev ordinary page with betting sentences spliced in between its lines
(the injection pattern), built from templates and the brand lexicon; never more than the real dev positives.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import random
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
LABELS = REPO / "quality_models/data/spam_zh/labels.tsv"
SALT = "spam38"
WEB_PAGES = REPO / "build/bench/zh_web_pages.jsonl"   # written by python bench/chinese_web_pages.py


def split_of(url: str | None, key: str) -> str:
    host = ""
    if url:
        try:
            host = urlsplit(url).hostname or ""
        except ValueError:
            host = ""
    h = hashlib.sha1(f"{SALT}:{host or key}".encode()).hexdigest()
    return ("dev", "held_out")[int(h, 16) % 2]


def _jsonl(path: Path):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def _labels() -> dict:
    out = {}
    for line in LABELS.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            source, key, label, kind, note = line.split("\t", 4)
            out[(source, key)] = (label, kind, note)
    return out


def _page(source, key, url, text, label, kind, note, by, split=None):
    return {"id": f"{source}:{key}", "source": source, "url": url, "text": text, "label": label, "kind": kind,
            "note": note, "labelled_by": by, "split": split or split_of(url, key)}


def load(web_pages: Path | None = WEB_PAGES, with_unclear: bool = False) -> list[dict]:
    """Every labelled page (label spam | ok, and unclear when asked)."""
    labels = _labels()
    pages = []
    for f in ("quality_models/data/web/flagdata-cc-zh.jsonl.gz", "examples/ablate/web/flagdata-cc-zh.jsonl.gz"):
        for r in _jsonl(REPO / f):
            lab = labels.get(("flagdata-cc-zh", r.get("url") or ""))
            if lab:
                pages.append(_page("flagdata-cc-zh", r["url"], r["url"], r["text"], *lab, "reader"))
    for f in ("quality_models/data/web/cc2019-dolma.jsonl.gz", "examples/ablate/web/cc2019-dolma.jsonl.gz"):
        for r in _jsonl(REPO / f):
            lab = labels.get(("cc2019-dolma", r["id"]))
            if lab:
                pages.append(_page("cc2019-dolma", r["id"], r.get("url"), r["text"], *lab, "reader"))
    pages += _resiliparse()
    for f in ("quality_models/data/web/zh-extraction-pages.jsonl.gz",
              "examples/ablate/web/zh-extraction-pages.jsonl.gz"):
        for r in _jsonl(REPO / f):
            pages.append(_page("zh-extraction-pages", r["id"], r.get("url"), r["text"], "ok", "-",
                               "main text of a news, forum or government page, copied by hand", "source"))
    for f in ("quality_models/data/web/flagdata-zhihu-qa.jsonl.gz", "examples/ablate/web/flagdata-zhihu-qa.jsonl.gz"):
        for r in _jsonl(REPO / f):
            pages.append(_page("flagdata-zhihu-qa", r["id"], None, r["text"], "ok", "-", "a Zhihu answer", "source"))
    if web_pages is not None and Path(web_pages).exists():
        for r in _jsonl(Path(web_pages)):
            if r.get("text"):
                pages.append(_page("zh-web-pages", r["id"], r.get("url"), r["text"], "ok", "-",
                                   f"{r['group']} page of {r['repo']}", "source", r["half"]))
    keep = ("spam", "ok", "unclear") if with_unclear else ("spam", "ok")
    return [p for p in pages if p["label"] in keep]


def _resiliparse() -> list[dict]:
    from pipeline.extract.html import extract_file
    from pipeline.extract.settings import ExtractConfig

    labels = {}
    for line in (REPO / "tests/data/zh_spam/labels.tsv").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            url, label, kind, note = line.split("\t", 3)
            labels[url] = (label, kind, note)
    out = []
    for r in extract_file(str(REPO / "examples/sample/resiliparse-cc-excerpt.warc.gz"), "web", "warc",
                          ExtractConfig()):
        lab = labels.get(r.get("url"))
        if lab and r.get("text"):
            out.append(_page("resiliparse-cc", r["url"], r["url"], r["text"], *lab, "reader"))
    return out


# the injection pattern: betting sentences spliced between an ordinary page's lines
_TEMPLATES = [
    "{b}官网注册即送彩金，{b}手机版下载，{b}官方入口。",
    "【{b}】{b}app下载，信誉平台，欢迎注册。",
    "{b}：{b}官方网站登录入口，真人视讯、体育投注、棋牌游戏。",
    "{b}唯一官网，首存即送，{b}客户端下载。",
    "{b}体育投注平台，{b}平台网址。",
]


def synthetic(pages: list[dict], brands: list[str], n: int, seed: int = 0) -> list[dict]:
    """n synthetic positives from dev ordinary pages of at least 300 characters."""
    rng = random.Random(seed)
    base = sorted((p for p in pages if p["split"] == "dev" and p["label"] == "ok" and len(p["text"]) >= 300),
                  key=lambda p: p["id"])
    out = []
    for i in range(min(n, len(base))):
        p = rng.choice(base)
        lines = p["text"].split("\n")
        for _ in range(rng.randint(1, 3)):
            b = rng.choice(brands)
            lines.insert(rng.randint(0, len(lines)), rng.choice(_TEMPLATES).format(b=b))
        if rng.random() < 0.5:
            lines[0] = f"{rng.choice(brands)}官网-" + lines[0]
        out.append({**p, "id": f"synthetic:{i}:{p['id']}", "source": "synthetic", "text": "\n".join(lines),
                    "label": "spam", "kind": "gambling", "note": "betting sentences spliced into " + p["id"],
                    "labelled_by": "synthetic"})
    return out


def brand_terms() -> list[str]:
    """The gambling brand terms synthetic positives are built from: Chinese, 4+ characters, and never one read off a
    held-out page (quality_models/data/spam_zh/lexicon_provenance.tsv), so no held-out figure meets its own words."""
    path = REPO / "pipeline/clean/lists/safety/brands/zh.tsv"
    prov = REPO / "quality_models/data/spam_zh/lexicon_provenance.tsv"
    held = {ln.split("\t")[0] for ln in prov.read_text(encoding="utf-8").splitlines()
            if ln and not ln.startswith("#") and ln.split("\t")[2] == "page:held_out"}
    out = []
    for ln in path.read_text(encoding="utf-8").splitlines():
        if ln.startswith("gambling\t"):
            term = ln.split("\t", 1)[1]
            if term not in held and len(term) >= 4 and any("\u4e00" <= c <= "\u9fff" for c in term):
                out.append(term)
    return out
