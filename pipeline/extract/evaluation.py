"""How well an extractor finds a page's main text: page sets with ground truth and their measures.

Sets (each page: its raw bytes and what the extracted text should hold):
  aeb           Zyte's article benchmark: the human-checked `articleBody`; token F1 per page.
  readability   Mozilla Readability's cases: the text of `expected.html`; token F1 per page.
  trafilatura   trafilatura's evaluation pages: snippets that must appear (`with`) and boilerplate that
                must not (`without`); precision, recall and F1 over all snippets of the set (its own way).
  zh            Chinese pages with hand-copied main text (bench/data/zh_extraction, MIT); token F1.

Tokens are \\w+ runs, except that each Han, kana or other CJK character is a token of its own, so F1 on a
Chinese page is character F1 and on an English page the usual bag-of-words F1 (the AEB measure).
"""
from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

_CJK = "\u2e80-\u2fff\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+")
_HAN = re.compile(f"[{_CJK}]")


def tokens(text: str | None) -> list[str]:
    return _TOKEN.findall(text or "")


def token_f1(truth: str, pred: str | None) -> float:
    """Bag-of-tokens F1 of one page (1.0 when both are empty)."""
    t, p = Counter(tokens(truth)), Counter(tokens(pred))
    if not t and not p:
        return 1.0
    tp = sum((t & p).values())
    if tp == 0:
        return 0.0
    precision, recall = tp / sum(p.values()), tp / sum(t.values())
    return 2 * precision * recall / (precision + recall)


def is_chinese(text: str) -> bool:
    """Most of the text's tokens are CJK characters."""
    toks = tokens(text)
    return bool(toks) and sum(1 for t in toks if _HAN.fullmatch(t)) > 0.5 * len(toks)


@dataclass
class Page:
    set: str
    name: str
    raw: bytes
    url: str | None = None
    truth: str | None = None              # the main text (aeb, readability, zh)
    with_snippets: list[str] = field(default_factory=list)     # trafilatura's set
    without_snippets: list[str] = field(default_factory=list)

    @property
    def chinese(self) -> bool:
        return is_chinese(self.truth if self.truth is not None else " ".join(self.with_snippets))


def _html_text(html: str) -> str:
    """The visible text of an expected-output HTML fragment, one line per block."""
    import lxml.html

    root = lxml.html.fromstring(html or "<div></div>")
    for br in root.iter("br", "p", "div", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "pre", "blockquote"):
        br.tail = "\n" + (br.tail or "")
    return root.text_content()


def aeb_pages(root: Path) -> Iterator[Page]:
    truth = json.loads((root / "ground-truth.json").read_text(encoding="utf-8"))
    for key, item in sorted(truth.items()):
        yield Page("aeb", key, gzip.decompress((root / "html" / f"{key}.html.gz").read_bytes()),
                   item.get("url"), truth=item["articleBody"])


def readability_pages(root: Path) -> Iterator[Page]:
    for d in sorted(p for p in root.iterdir() if (p / "expected.html").exists()):
        yield Page("readability", d.name, (d / "source.html").read_bytes(),
                   truth=_html_text((d / "expected.html").read_text(encoding="utf-8")))


def trafilatura_pages(root: Path) -> Iterator[Page]:
    data = json.loads((root / "evaldata.json").read_text(encoding="utf-8"))
    for url, item in sorted(data.items()):
        path = root / "html" / item["file"]
        if path.exists():
            yield Page("trafilatura", item["file"], gzip.decompress(path.read_bytes()), url,
                       with_snippets=list(item.get("with") or []),
                       without_snippets=list(item.get("without") or []))


def zh_pages(root: Path) -> Iterator[Page]:
    for path in sorted((root / "html").glob("*.html.gz")):
        name = path.name[: -len(".html.gz")]
        truth = gzip.decompress((root / "truth" / f"{name}.txt.gz").read_bytes()).decode("utf-8")
        yield Page("zh", name, gzip.decompress(path.read_bytes()), truth=truth)


def snippet_counts(page: Page, text: str | None) -> tuple[int, int, int, int]:
    """(tp, fn, fp, tn) of trafilatura's evaluation: a `with` snippet found is a true positive, a
    `without` snippet found a false positive. Whitespace is collapsed on both sides."""
    flat = " ".join((text or "").split())
    found = [" ".join(s.split()) in flat for s in page.with_snippets]
    leaked = [" ".join(s.split()) in flat for s in page.without_snippets]
    return sum(found), len(found) - sum(found), sum(leaked), len(leaked) - sum(leaked)


def snippet_f1(counts: list[tuple[int, int, int, int]]) -> dict:
    """Precision, recall and F1 over every snippet of a set (trafilatura's evaluation)."""
    tp, fn, fp, _ = (sum(c[i] for c in counts) for i in range(4))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}
