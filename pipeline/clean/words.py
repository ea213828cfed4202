"""Words, per language, in one place: what every word-based stage counts.

Two views of a text, both defined here and nowhere else:

- `words(text, lang)`: the words the heuristics count (Gopher word count, word length, stop words,
  repeated n-grams) and the tokenizer's fertility divides by. Space-separated scripts are split on
  whitespace, lower-cased and stripped of surrounding punctuation (the Gopher convention). Runs of a
  script written without spaces (Chinese, Japanese, Thai, Lao, Khmer, Burmese) are segmented with ICU's
  dictionary-based word break iterator (`icu4py`, which bundles ICU 78: one wheel, no system library);
  Tibetan is split into syllables at its tsheg and shad marks (ICU has no Tibetan dictionary).
- `key_units(text)`: the units exact dedup, MinHash shingles and decontamination n-grams are made of:
  NFKC, case-folded, split at every non-word character, and every character of an unspaced script is a
  unit of its own, a traditional Chinese character folded to its simplified form (pipeline/clean/script.py),
  so a 繁体 mirror of a 简体 page has the same key. Character units need no segmenter, so they are fast, deterministic and the same for
  every language of a script; `unit_ngram` shingles a text written mostly in such characters in
  shorter n-grams (a character carries less than a word).

Why ICU rather than one package per language (jieba, sudachi, pythainlp): measured on the lingua
sentences (tests/data), ICU segments Chinese at 8 MB/s, Japanese at 9 MB/s and Thai at 24 MB/s on one
core, against rjieba 15 MB/s (Chinese only), fugashi + unidic-lite 1.8 MB/s (Japanese only) and nlpo3
(Thai only, panics without a dictionary file); its segmentation agrees with jieba's and MeCab's on the
content words. One dependency covers six scripts.

A text without any unspaced character takes exactly the old whitespace path, so English (and every
space-separated language) gets the same words as before this module existed.
"""
from __future__ import annotations

import re
import unicodedata
from itertools import repeat

from pipeline.clean.script import fold_char

# Scripts written without spaces between words: (first, last code point, ICU locale that segments them).
_UNSPACED_RANGES: list[tuple[int, int, str]] = [
    (0x0E00, 0x0E7F, "th"),    # Thai
    (0x0E80, 0x0EFF, "lo"),    # Lao
    (0x0F00, 0x0FFF, "bo"),    # Tibetan
    (0x1000, 0x109F, "my"),    # Myanmar
    (0x1780, 0x17FF, "km"),    # Khmer
    (0x19E0, 0x19FF, "km"),    # Khmer symbols
    (0x3005, 0x3007, "zh"),    # 々 〆 〇
    (0x3040, 0x309F, "ja"),    # Hiragana
    (0x30A0, 0x30FF, "ja"),    # Katakana
    (0x31F0, 0x31FF, "ja"),    # Katakana phonetic extensions
    (0x3400, 0x4DBF, "zh"),    # CJK extension A
    (0x4E00, 0x9FFF, "zh"),    # CJK unified ideographs
    (0xF900, 0xFAFF, "zh"),    # CJK compatibility ideographs
    (0xFF66, 0xFF9F, "ja"),    # half-width Katakana
    (0x20000, 0x323AF, "zh"),  # CJK extensions B-H
]
UNSPACED_CLASS = "[" + "".join(f"{chr(a)}-{chr(b)}" for a, b, _ in _UNSPACED_RANGES) + "]"  # a regex class
_UNSPACED = re.compile(UNSPACED_CLASS)
_KANA = re.compile("[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]")
# the languages whose texts ICU's word break iterator segments with a dictionary
SEGMENTED_LANGUAGES = ("zh", "ja", "th", "lo", "km", "my")
_TIBETAN_BREAK = re.compile("[\u0f0b-\u0f14\\s]+")

# stripped from both ends of a whitespace token: ASCII punctuation plus common typographic marks
PUNCT = ("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~«»‹›“”„‘’‚…–—―·•¡¿、。，！？：；（）「」『』【】"
         "→←↑↓⇒»©®™°±×÷§¶†‡★☆♦■□▪►▶✓✔")
_WORDLIKE = re.compile(r"[^\W_]")  # a letter, digit or mark: a segment that is a word, not punctuation


def has_unspaced(text: str) -> bool:
    """True when the text holds a character of a script written without spaces."""
    return not text.isascii() and _UNSPACED.search(text) is not None  # isascii: one C pass, no regex


def script_locale(ch: str) -> str | None:
    """The ICU locale that segments the unspaced script of `ch`, or None for a spaced script."""
    o = ord(ch)
    for a, b, loc in _UNSPACED_RANGES:
        if a <= o <= b:
            return loc
    return None


def _run_locale(run: str, lang: str | None) -> str | None:
    """The ICU locale that segments a run holding unspaced characters (None: ICU's root rules)."""
    first = _UNSPACED.search(run)
    loc = script_locale(first.group()) if first else None
    if loc == "zh" and _KANA.search(run):
        loc = "ja"
    if lang in SEGMENTED_LANGUAGES and loc in ("zh", "ja") and lang in ("zh", "ja"):
        loc = lang  # kanji-only runs of a Japanese text are segmented as Japanese
    return loc


def _segment(run: str, lang: str | None) -> list[str]:
    """Word segments of a run that holds unspaced characters (punctuation-only segments dropped)."""
    loc = _run_locale(run, lang)
    if loc == "bo":
        return [s for s in _TIBETAN_BREAK.split(run) if _WORDLIKE.search(s)]
    from icu4py.breakers import WordBreaker  # imported on first unspaced text only
    return [s for s in WordBreaker(run, loc or "root") if _WORDLIKE.search(s)]


def tokens(text: str, lang: str | None = None, unspaced: bool | None = None) -> tuple[list[str], int]:
    """(words, raw token count): the words of `words` and the number of raw tokens they came from
    (whitespace tokens, or word-break segments inside unspaced runs, punctuation-only ones included:
    the denominator of the Gopher alphabetic-word fraction). `unspaced`: has_unspaced(text), when the
    caller knows it already."""
    lower = text.lower()
    raw = lower.split()
    if not (has_unspaced(text) if unspaced is None else unspaced):
        return list(filter(None, map(str.strip, raw, repeat(PUNCT)))), len(raw)
    out: list[str] = []
    n_raw = 0
    for tok in raw:
        if _UNSPACED.search(tok) is None:
            n_raw += 1
            w = tok.strip(PUNCT)
            if w:
                out.append(w)
        else:
            segs = _segment(tok, lang)
            n_raw += max(1, len(segs))
            out.extend(s.strip(PUNCT) or s for s in segs)
    return out, n_raw


def words(text: str, lang: str | None = None) -> list[str]:
    """The words of a text as the heuristics count them (lower-cased, punctuation stripped)."""
    return tokens(text, lang)[0]


class _MarkTable(dict):
    r"""A str.translate table that puts spaces around every character that is neither a word character nor a space
    (re's `[^\w\s]`: not str.isalnum, not "_", not str.isspace), filled as characters are first seen: the same as
    re.sub(r"([^\w\s])", r" \1 ") without a Python call per mark (the template sub made one: a fifth of the
    quality classifier's time)."""

    def __missing__(self, code: int):
        ch = chr(code)
        value = code if ch.isalnum() or ch == "_" or ch.isspace() else f" {ch} "
        self[code] = value
        return value


# every character that is neither a word character nor a space: a mark of its own in `segments`
_MARKS = _MarkTable()


def map_distinct(text: str, table: dict) -> str:
    """`text.translate(table)`, as one `str.replace` per distinct character that changes (a dozen on a page): a
    translate through a dict looks every character of the page up, three to four times slower on web pages. Exact
    while each output is the character itself, nothing, or spaces around nothing or around the character, so no
    replacement feeds another; a text with a character mapped to another one (a traditional Chinese character to its
    simplified form) is translated as before."""
    changes = []
    for ch in set(text):
        try:
            out = table[ord(ch)]
        except LookupError:   # as translate: a character the table does not hold stays
            continue
        if out is None:
            out = ""
        elif type(out) is int:
            out = chr(out)
        if out == ch:
            continue
        if out.strip(" ") not in ("", ch):
            return text.translate(table)
        changes.append((ch, out))
    for ch, out in changes:
        text = text.replace(ch, out)
    return text


def _space_marks(text: str) -> str:
    return map_distinct(text, _MARKS)


def segment_lines(text: str, lang: str | None = None) -> list[list[str]]:
    """Words and punctuation marks of each non-empty line, lower-cased, in reading order: what a classifier
    reads (pipeline/score/quality.py). A line without unspaced characters is split at whitespace with every
    punctuation mark a token of its own ("word, word" and "word , word" agree); the lines with them are cut by
    ICU's word break iterator, their marks kept and whitespace dropped, all lines of one locale in one call (a
    call costs more than a short line: a Chinese page of many lines would pay it per line)."""
    lower = text.lower()
    if not has_unspaced(lower):
        return [toks for toks in (line.split() for line in _space_marks(lower).splitlines()) if toks]
    lines = lower.splitlines()
    out: list[list[str]] = [[] for _ in lines]
    by_locale: dict[str | None, list[int]] = {}
    for i, line in enumerate(lines):
        if _UNSPACED.search(line) is None:
            out[i] = _space_marks(line).split()
        else:
            by_locale.setdefault(_run_locale(line, lang), []).append(i)
    for loc, rows in by_locale.items():
        if loc == "bo":
            for i in rows:
                out[i] = [s for s in _TIBETAN_BREAK.split(lines[i]) if s]
            continue
        from icu4py.breakers import WordBreaker
        k = 0   # the joints between the lines are the only whitespace segments holding "\n"
        for s in [s for s in WordBreaker("\n".join(lines[i] for i in rows), loc or "root")
                  if not s.isspace() or "\n" in s]:
            if "\n" in s:
                k += 1
            else:
                out[rows[k]].append(s)
    return [toks for toks in out if toks]


def segments(text: str, lang: str | None = None) -> list[str]:
    """The tokens of `segment_lines`, all lines together."""
    return [tok for line in segment_lines(text, lang) for tok in line]


class _UnitTable(dict):
    """str.translate table for `key_units`: a non-word character ([\\W_]) becomes a space, a character
    of an unspaced script becomes itself between spaces (a unit of its own), any other stays. Filled
    on first sight of a character, so a text is translated at C speed."""

    _NON_WORD = re.compile(r"[\W_]", re.UNICODE)

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        if self._NON_WORD.match(ch):
            out = " "
        elif _UNSPACED.match(ch):
            out = f" {fold_char(ch)} "  # a traditional character keys as its simplified form
        else:
            out = ch
        self[code] = out
        return out


_UNITS = _UnitTable()


def key_units(text: str | None) -> list[str]:
    """The units of the dedup and decontamination keys: NFKC, case-folded, split at every run of
    non-word characters (anything but letters, digits and marks; `_` counts as a separator), and each
    character of an unspaced script a unit of its own (traditional Chinese folded to simplified). On a
    text without unspaced characters these
    are exactly the words of the earlier word-only key."""
    folded = unicodedata.normalize("NFKC", text or "").casefold()
    return folded.translate(_UNITS).split()


def unspaced_share(units: list[str]) -> float:
    """Share of a text's key units that are single characters of an unspaced script."""
    if not units:
        return 0.0
    return sum(1 for u in units if len(u) == 1 and _UNSPACED.match(u)) / len(units)


def unit_ngram(units: list[str], word_ngram: int, char_ngram: int) -> int:
    """The shingle size for a text's units: `char_ngram` when most of them are characters of an
    unspaced script, else `word_ngram`. Two near-copies of one text get the same size."""
    return char_ngram if unspaced_share(units) > 0.5 else word_ngram


def script_counts(text: str) -> dict[str, int]:
    """Units per script family, for the language-ID prior: unspaced characters counted one by one under
    their locale (kana under ja), other units by the Unicode script of their first letter."""
    counts: dict[str, int] = {}
    for u in key_units(text):
        ch = u[0]
        loc = script_locale(ch) if len(u) == 1 else None
        key = loc or _letter_script(ch)
        if key:
            counts[key] = counts.get(key, 0) + 1
    return counts


_SCRIPT_PREFIX = {"LATIN": "Latn", "CYRILLIC": "Cyrl", "GREEK": "Grek", "ARABIC": "Arab", "HEBREW": "Hebr",
                  "HANGUL": "ko", "DEVANAGARI": "Deva", "GEORGIAN": "ka", "ARMENIAN": "hy", "BENGALI": "Beng",
                  "TAMIL": "ta", "TELUGU": "te", "GUJARATI": "gu", "GURMUKHI": "pa", "KANNADA": "kn",
                  "MALAYALAM": "ml", "SINHALA": "si", "ETHIOPIC": "Ethi"}


def _letter_script(ch: str) -> str | None:
    if ch.isdigit():
        return None
    name = unicodedata.name(ch, "")
    first = name.split(" ", 1)[0]
    if first == "CJK":
        return "zh"
    return _SCRIPT_PREFIX.get(first, "other" if name else None)
