"""Text normalisation and conservative line-level boilerplate removal.

`normalize_text` fixes what breaks tokenisers and hashing (invisible characters, odd line breaks and
spaces, NFC vs NFD duplicates) but keeps the text as written: NFC, not NFKC, so "ﬁ", "²", full-width
forms and the like survive.

Choices worth knowing:
- ZWJ (U+200D) and ZWNJ (U+200C) are kept: they carry meaning in emoji sequences (👨‍👩‍👧) and in
  Persian/Indic scripts. Zero-width space, word joiner, BOM, soft hyphen and bidi controls are removed:
  they are invisible and only split tokens.
- Lone surrogates (from `surrogateescape` decoding) are removed: they cannot be written as UTF-8.
- Leading indentation is kept (code, verse); runs of 2+ spaces/tabs inside a line become one space,
  a single tab stays (tab-separated tables keep their columns); line ends are stripped.
"""
from __future__ import annotations

import re
import unicodedata

# --- character fixes: what each special character becomes (None = removed) -----------------------
_TABLE: dict[int, str | None] = {}
for _cp in list(range(0x00, 0x20)) + [0x7F] + list(range(0x80, 0xA0)):
    _TABLE[_cp] = None                     # C0/C1 controls and DEL ...
_TABLE[ord("\t")] = "\t"                   # ... except tab
_TABLE[ord("\n")] = "\n"                   # ... and newline
for _ch in "\r\x0b\x0c\x85\u2028\u2029":
    _TABLE[ord(_ch)] = "\n"                # CR, VT, FF, NEL, line/paragraph separators: line breaks
for _ch in "\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000":
    _TABLE[ord(_ch)] = " "                 # NBSP, en/em/thin/ideographic spaces...: a plain space
for _ch in "\u00ad\u180e\u200b\u2060\u2061\u2062\u2063\u2064\ufeff\ufffe\uffff":
    _TABLE[ord(_ch)] = None                # soft hyphen, zero-width space, word joiner, BOM, non-chars
for _cp in list(range(0x200E, 0x2010)) + list(range(0x202A, 0x202F)) + list(range(0x2066, 0x206A)):
    _TABLE[_cp] = None                     # bidi marks, embeddings, overrides, isolates
for _cp in range(0xD800, 0xE000):
    _TABLE[_cp] = None                     # lone surrogates

# One regex finds any character the table changes, so clean text (the usual case) costs one scan
# (str.translate would do a dict lookup per non-ASCII character, ~10x slower here).
_SPECIAL = re.compile("[" + "".join(
    re.escape(chr(cp)) for cp in sorted(_TABLE) if _TABLE[cp] != chr(cp) and not 0xD800 <= cp < 0xE000)
    + "\ud800-\udfff]")
_INNER_WS = re.compile(r"[ \t]{2,}")
_MANY_BLANKS = re.compile(r"\n{3,}")


def _fix_char(m: re.Match) -> str:
    return _TABLE[ord(m.group())] or ""


def normalize_text(text: str) -> str:
    """NFC, invisible/control characters removed, line breaks and spaces made plain (see module doc)."""
    if not text:
        return ""
    text = text.replace("\r\n", "\n")
    if _SPECIAL.search(text):
        text = _SPECIAL.sub(_fix_char, text)
    # after the removals, which can bring a base letter and its combining mark together
    if not unicodedata.is_normalized("NFC", text):  # the check is much cheaper than normalising
        text = unicodedata.normalize("NFC", text)
    out: list[str] = []
    blank = True  # drops leading blank lines; afterwards at most one blank line in a row
    for line in text.split("\n"):
        line = line.rstrip(" \t")
        if not line:
            if not blank:
                out.append("")
            blank = True
            continue
        blank = False
        if "  " in line or "\t" in line:
            body = line.lstrip(" \t")
            indent = line[: len(line) - len(body)]  # leading indentation is kept as written
            line = indent + _INNER_WS.sub(" ", body)
        out.append(line)
    if out and not out[-1]:
        out.pop()
    return "\n".join(out)


# --- line-level boilerplate ---------------------------------------------------------------------
# A line is removed only when a pattern matches the WHOLE line (lower-cased, stripped). The patterns are
# narrow on purpose: prose that merely mentions cookies or JavaScript is longer or phrased differently
# and survives, and lines over _MAX_BOILERPLATE_LEN characters are never touched.
# Each entry: (name, gate, pattern). A pattern with a gate (substrings) is only tried on lines holding
# one of them, which keeps the `.*` patterns off ordinary lines; patterns without a gate are anchored at
# the line start and fail fast.
_END = r"[\s.!:;?»›>→…|·•\-–—]*"  # trailing punctuation, arrows and separators a button label may carry
_SEP = r"\s*(?:[|•·/,:;]|\s-\s)?\s*"  # separators between navigation crumbs
_SOCIAL = (r"(?:share(?: this(?: article| post| page| story)?| on (?:facebook|twitter|x|linkedin))?|tweet|"
           r"e-?mail|print|facebook|twitter|linkedin|pinterest|reddit|whatsapp|telegram|tumblr|"
           r"pin it|save|like|flipboard|copy link|comments?|\d+ (?:shares|comments))")

BOILERPLATE_PATTERNS: list[tuple[str, tuple[str, ...], str]] = [
    # "Please enable JavaScript to view this site", "JavaScript is disabled in your browser": noscript text.
    ("javascript_notice", ("javascript",),
     r".*\b(?:enable|turn on|activate|allow)\s+javascript\b.*"
     r"|.*\bjavascript\s+(?:is\s+)?(?:disabled|required|not enabled|turned off|must be enabled)\b.*"),
    # "Your browser does not support the video tag": media fallback text.
    ("browser_support", ("browser",),
     r".*\byour browser (?:does not|doesn't) support (?:javascript|the video tag|html5 video|iframes|the audio element)\b.*"),
    # Cookie banners: "This website uses cookies ...", "We use cookies to ...", "Accept all cookies".
    ("cookie_notice", ("cookie",),
     r"(?:this|our)\s+(?:web\s?)?site\s+uses\s+cookies\b.*|we\s+use\s+cookies\b.*"
     r"|.*\baccept\s+(?:all\s+)?cookies" + _END +
     r"|(?:cookie\s+(?:policy|settings|preferences|consent)|manage\s+cookies)" + _END),
    # "By continuing to use this site you agree to ...": consent banners.
    ("consent_notice", ("by continuing", "by using this"),
     r"by\s+(?:continuing\s+to\s+(?:use|browse)|using)\s+this\s+(?:web\s?)?site,?\s+you\s+(?:agree|consent)\b.*"),
    # Copyright-only lines: "© 2023 Company. All rights reserved.", "Copyright 2019-2023 Acme Inc".
    ("copyright", ("©", "(c)", "copyright", "all rights reserved"),
     r"(?:copyright\s*)?(?:©|\(c\)\s*\d{4})\s*.{0,100}|copyright\s+\d{4}\b.{0,100}"
     r"|.{0,100}\ball rights reserved" + _END),
    # Share/social button rows: "Share | Tweet | Email", "Facebook Twitter Pinterest", "0 shares".
    ("share_buttons", (), rf"(?:{_SOCIAL}{_SEP})+"),
    # Accessibility skip links: "Skip to content", "Skip to main navigation".
    ("skip_link", (),
     r"skip to(?::)?\s*(?:the\s+)?(?:main\s+|page\s+)?(?:content|navigation|menu|search|footer)" + _END),
    # Teaser links: "Read more", "Continue reading »", "Load more", "See all".
    ("read_more", (),
     r"(?:(?:read|see|view|show|load)\s+(?:more|all|full (?:story|article))|continue reading"
     r"|click here to read more)" + _END),
    # Account/site chrome: "Log in", "Sign up | Register", "Back to top", "Advertisement".
    ("site_chrome", (),
     r"(?:(?:log\s?in|log\s?out|sign\s?in|sign\s?up|register|my account|subscribe|search|menu|home|"
     r"back to top|go to top|scroll to top|advertisement|advertisements|sponsored|"
     r"previous (?:post|article|page)|next (?:post|article|page)|newer posts|older posts)" + _SEP + r")+"),
    # Newsletter/follow prompts: "Subscribe to our newsletter", "Follow us on Twitter".
    ("newsletter_follow", (),
     r"(?:(?:subscribe to|sign up for|join) our (?:newsletter|mailing list)"
     r"|follow us(?: on (?:facebook|twitter|instagram|linkedin|x|social media))?)" + _END),
]
_MAX_BOILERPLATE_LEN = 250
_GATED = [(name, gate, re.compile(pat)) for name, gate, pat in BOILERPLATE_PATTERNS if gate]
_ANY_GATE = re.compile("|".join(re.escape(g) for _, gate, _ in BOILERPLATE_PATTERNS for g in gate))
_ANCHORED = re.compile("|".join(f"(?P<{name}>{pat})" for name, gate, pat in BOILERPLATE_PATTERNS if not gate))


def boilerplate_kind(line: str) -> str | None:
    """The name of the pattern a line matches in full, or None (exposed for tests and audits)."""
    s = line.strip().lower()
    if not s or len(s) > _MAX_BOILERPLATE_LEN:
        return None
    m = _ANCHORED.fullmatch(s)
    if m:
        return m.lastgroup
    if _ANY_GATE.search(s):
        for name, gate, pat in _GATED:
            if any(g in s for g in gate) and pat.fullmatch(s):
                return name
    return None


def clean_lines(text: str, cfg=None) -> tuple[str, int]:
    """Drop whole boilerplate lines; returns (text, lines removed). `cfg.remove_boilerplate_lines` False
    (any object with that attribute, e.g. a CleanConfig) turns it off."""
    if cfg is not None and not getattr(cfg, "remove_boilerplate_lines", True):
        return text, 0
    kept: list[str] = []
    removed = 0
    for line in text.split("\n"):
        if boilerplate_kind(line) is None:
            kept.append(line)
        else:
            removed += 1
    if not removed:
        return text, 0
    out = _MANY_BLANKS.sub("\n\n", "\n".join(kept)).strip("\n")
    return out, removed
