"""Page-structure signals of web spam (issue 38): what injected, stuffed and generated pages show and prose does not.

Each signal is a number per document, written as a column whatever the decision (signals, then decisions); a rule
compares one signal with a threshold and names its own reason. The signals, on the extracted text (first line = the
page title as the extractor writes it) and the URL:

- `spam_title_overlap`: the share of the title's units (Han character bigrams, or words of 3+ letters) that the body
  contains. A page whose title was replaced by a betting brand, or stitched from another article, scores low. 1.0 when
  there is no title to judge (a single line, a title over 64 characters, a body under 200 characters).
- `spam_stuffing` (first 8,000 characters): the share of the text's Han characters covered by its most frequent Han
  4-gram (a brand phrase repeated; 2-character topic words are not counted), or for a text without Han, of its words
  covered by its most frequent word bigram.
- `spam_isolated` (first 8,000 characters): the share of a document's sentences (of 8+ characters, documents of 6+
  sentences) that share no unit with either neighbour: the injected-sentence pattern (unrelated texts spliced).
- `spam_host`: 1.0 when the URL's host looks generated: a label of 5+ digits in a row (3355703.com, 1422058.cn), an
  all-digit label of 4+ digits, or a numbered subdomain (035.psb556.com); else 0.0 (also without a URL).
- `spam_link_list`: the share of the lines that are short (at most 30 characters) and end no sentence, for pages of
  12+ lines; else 0.0. A page of anchors (lottery link farms, tag clouds) is near 1.
- `spam_repeated_prefix`: the largest share of lines that begin with the same 8 characters (pages of 12+ lines): a
  link farm writes one host or keyword before every anchor.
- `spam_host_lines`: the share of lines holding a bare host name that runs into Chinese text (5g.example.cn亚星官网).
- `spam_brand_pattern`: distinct matches of the brand pattern spam injects, `<name>(国际|体育|棋牌|娱乐|贵宾会|彩票|真人|
  电竞|电子)…(官网|app|下载|手机版|注册|登录|入口|平台|网址)`, counted per page (one mention of a casino hotel is not
  spam: the rule wants several distinct ones).

Rules (reason `spam_<signal>`) and their default thresholds are in RULES; `DEFAULT_REJECT` holds the ones whose
precision on ordinary web pages was measured good enough to be on by default (bench/zh_spam.py): none yet.
"""
from __future__ import annotations

import re
from collections import Counter
from urllib.parse import urlsplit

SIGNALS = ["spam_title_overlap", "spam_stuffing", "spam_isolated", "spam_host", "spam_link_list",
           "spam_brand_pattern", "spam_repeated_prefix", "spam_host_lines"]
MAX_CHARS = 20_000       # the signals read the first 20,000 characters of a page

# rule name -> (signal, direction, default threshold): a document is rejected when signal < threshold ("below") or
# signal > threshold ("above")
RULES = {
    "title_overlap": ("spam_title_overlap", "below", 0.15),
    "stuffing": ("spam_stuffing", "above", 0.12),
    "isolated": ("spam_isolated", "above", 0.6),
    "host": ("spam_host", "above", 0.5),
    "link_list": ("spam_link_list", "above", 0.85),
    "brand_pattern": ("spam_brand_pattern", "above", 2.5),
    "repeated_prefix": ("spam_repeated_prefix", "above", 0.5),
    "host_lines": ("spam_host_lines", "above", 0.3),
}
# Measured on quality_models/spam_pages.py (bench/zh_spam.py): no rule separates spam from ordinary pages well enough
# to reject by default. Dev split (18 real spam, 161 ordinary web pages): title_overlap < 0.15 flags 2 spam and 12
# ordinary, host 4 and 4, brand_pattern > 2.5 0 and 1; isolated, stuffing, link_list flag fewer spam than ordinary
# pages. Held out (17 spam, 134 web, 507 Zhihu): host 4/17 spam for 2 web pages; repeated_prefix 1/17 for 0; the
# others at most 1/17. The signals are columns (clean.spam.enabled); a rule rejects only when clean.spam.reject
# names it.
DEFAULT_REJECT: tuple[str, ...] = ()

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_HAN_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+")
_WORD = re.compile(r"[^\W\d_]{3,}")
_SENT = re.compile(r"[^。！？!?\n]+[。！？!?]*")
_ENDS = tuple("。！？!?.…；;：:」』”）)")
_DIGITS5 = re.compile(r"\d{5,}")
_BRAND = re.compile(
    r"(?:国际|体育|棋牌|娱乐|贵宾会|彩票|真人|电竞|电子)"
    r"[\u4e00-\u9fffA-Za-z0-9·()（）]{0,4}?(?:官网|官方网站|app|APP|App|下载|手机版|注册|登录|登陆|入口|平台|网址)")
_NAME = re.compile(r"[\u4e00-\u9fffA-Za-z0-9]+$")


def _units(text: str) -> set[str]:
    """Han character bigrams and lower-cased words of 3+ letters: what two passages on one subject share."""
    out = set()
    for run in _HAN_RUN.findall(text):
        out.update(run[i:i + 2] for i in range(len(run) - 1))
    out.update(w.lower() for w in _WORD.findall(text) if not _HAN.search(w))
    return out


def title_overlap(text: str) -> float:
    lines = [ln.strip() for ln in text.split("\n") if ln.strip()]
    if len(lines) < 2 or len(lines[0]) > 64:
        return 1.0
    body = "\n".join(lines[1:])
    if len(body) < 200:
        return 1.0
    title = _units(lines[0])
    if len(title) < 2:
        return 1.0
    low = body.lower()
    return sum(u in low for u in title) / len(title)


def stuffing(text: str) -> float:
    runs = _HAN_RUN.findall(text[:8000])
    n_han = sum(len(r) for r in runs)
    if n_han >= 50:
        grams = Counter(r[i:i + 4] for r in runs for i in range(len(r) - 3))
        if not grams:
            return 0.0
        return grams.most_common(1)[0][1] * 4 / n_han
    words = [w.lower() for w in _WORD.findall(text)]
    if len(words) < 50:
        return 0.0
    grams = Counter(zip(words, words[1:]))
    return grams.most_common(1)[0][1] * 2 / len(words)


def isolated(text: str) -> float:
    sents = [s.strip() for s in _SENT.findall(text[:8000]) if len(s.strip()) >= 8]
    if len(sents) < 6:
        return 0.0
    units = [_units(s) for s in sents]
    alone = 0
    for i, u in enumerate(units):
        left = units[i - 1] if i else set()
        right = units[i + 1] if i + 1 < len(units) else set()
        if u and not (u & left) and not (u & right):
            alone += 1
    return alone / len(sents)


def host_generated(url: str | None) -> float:
    if not url:
        return 0.0
    try:
        host = (urlsplit(url if "//" in url else "//" + url).hostname or "").lower()
    except ValueError:
        return 0.0
    labels = [lb for lb in host.split(".") if lb]
    if len(labels) < 2 or host.replace(".", "").isdigit():      # no host, or an IP address
        return 0.0
    for lb in labels[:-1]:
        if _DIGITS5.search(lb) or (lb.isdigit() and len(lb) >= 4):
            return 1.0
    if len(labels) >= 3 and labels[0].isdigit() and sum(c.isdigit() for c in labels[-2]) >= 3:
        return 1.0                                               # 035.psb556.com: numbered subdomains
    return 0.0


def link_list(text: str) -> float:
    lines = [ln.strip() for ln in text.split("\n") if ln.strip()]
    if len(lines) < 12:
        return 0.0
    short = sum(len(ln) <= 30 and not ln.endswith(_ENDS) for ln in lines)
    return short / len(lines)


def repeated_prefix(text: str) -> float:
    """The largest share of a page's lines (pages of 12+ lines) that begin with the same 8 characters: a link farm
    writes one host or one keyword before every line (5g.example.cn亚星官网, 5g.example.cn欧博注册, ...)."""
    lines = [ln.strip() for ln in text.split("\n") if ln.strip()]
    if len(lines) < 12:
        return 0.0
    heads = Counter(ln[:8] for ln in lines if len(ln) >= 10)
    return heads.most_common(1)[0][1] / len(lines) if heads else 0.0


_HOST_HAN = re.compile(r"(?:[a-z0-9-]+\.)+(?:com|cn|net|org|cc|top|xyz|vip|info|me|co|tv|io|hk|tw)(?=[\u4e00-\u9fff])",
                       re.IGNORECASE)


def host_lines(text: str) -> float:
    """The share of a page's lines (pages of 12+ lines) holding a bare host name that runs straight into Chinese
    text (5g.example.cn亚星官网): the way link farms and injected link blocks write their anchors."""
    lines = [ln for ln in text.split("\n") if ln.strip()]
    if len(lines) < 12:
        return 0.0
    return sum(bool(_HOST_HAN.search(ln)) for ln in lines) / len(lines)


def brand_pattern(text: str) -> float:
    found = set()
    for m in _BRAND.finditer(text):
        name = _NAME.search(text, max(0, m.start() - 8), m.start())     # the brand name before the pattern
        if name:
            found.add((name.group(0)[-8:] + m.group(0)).lower())
    return float(len(found))


def signals(text: str | None, url: str | None = None) -> dict[str, float]:
    text = (text or "")[:MAX_CHARS]
    return {"spam_title_overlap": title_overlap(text), "spam_stuffing": stuffing(text),
            "spam_isolated": isolated(text), "spam_host": host_generated(url), "spam_link_list": link_list(text),
            "spam_brand_pattern": brand_pattern(text), "spam_repeated_prefix": repeated_prefix(text),
            "spam_host_lines": host_lines(text)}


def fired(sig: dict, rules=None, thresholds: dict | None = None) -> list[str]:
    """The rules (names of RULES) whose threshold the signals cross, in RULES order."""
    out = []
    for name in (rules if rules is not None else RULES):
        column, direction, default = RULES[name]
        limit = (thresholds or {}).get(name, default)
        v = sig[column]
        if (direction == "below" and v < limit) or (direction == "above" and v > limit):
            out.append(name)
    return out


def reason(sig: dict, rules=DEFAULT_REJECT, thresholds: dict | None = None) -> str | None:
    hit = fired(sig, rules, thresholds)
    return f"spam_{hit[0]}" if hit else None


__all__ = ["SIGNALS", "RULES", "DEFAULT_REJECT", "signals", "fired", "reason"]
