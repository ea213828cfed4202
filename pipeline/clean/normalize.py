"""Text normalisation (page chrome lines are pipeline/clean/boilerplate.py).

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


# --- full-width forms (clean.fullwidth: fold) ------------------------------------------------------
# Full-width ASCII (U+FF01-FF5E: ＡＢＣ１２３＃％＜) becomes ASCII, and the ideographic space a space (as
# normalize_text already does), so "ＧＰＵ" and "GPU" are one word to every later stage. The marks Chinese
# writes full-width as its own punctuation stay: ，！？；：（） (。、「」『』《》 are outside the range).
CJK_PUNCTUATION_KEPT = "，！？；：（）"
_FULLWIDTH = {cp: cp - 0xFEE0 for cp in range(0xFF01, 0xFF5F) if chr(cp) not in CJK_PUNCTUATION_KEPT}
_FULLWIDTH[0x3000] = 0x20
_ANY_FULLWIDTH = re.compile("[" + "".join(map(chr, sorted(_FULLWIDTH))) + "]")  # none is a regex metacharacter


def fold_fullwidth(text: str) -> str:
    """Full-width ASCII letters, digits and symbols as ASCII, Chinese punctuation kept (see above)."""
    return text.translate(_FULLWIDTH) if _ANY_FULLWIDTH.search(text) else text
