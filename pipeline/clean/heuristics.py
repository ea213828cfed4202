"""Quality signals for one document: Gopher quality + repetition, C4 and FineWeb rules.

Only measurements live here; thresholds (the decisions) are in `pipeline.clean.stage.DEFAULT_RULES`.
`compute_signals(text)` always returns the same keys (`SIGNAL_NAMES`), zeros for empty text.

Definitions follow Rae et al. 2021 (Gopher / MassiveText, appendix A), Raffel et al. 2020 (C4) and
Penedo et al. 2024 (FineWeb). Shared conventions:
- lines: non-empty lines after stripping; paragraphs: blocks separated by blank lines.
- words: `pipeline.clean.words.tokens(text, lang)`: whitespace tokens with surrounding punctuation stripped and
  lower-cased (tokens that are only punctuation are dropped); runs of a script written without spaces
  (Chinese, Japanese, Thai, ...) are cut into words by a dictionary segmenter first. Gopher/FineWeb character fractions use the summed length of these words as
  the denominator (spaces and punctuation do not count), line/paragraph character fractions the summed
  length of the lines/paragraphs.
- "duplicate" lines/paragraphs are the repeated copies: the first occurrence is not counted, so three
  identical lines among five give 2/5. That is how much text a "keep one copy" rule would remove.
Stop words are per language (`stopwords`: Gopher's eight English words by default; the clean stage
passes the calibrated list of the document's language, pipeline/clean/languages.py).

Speed: text is split into words once; every loop over word positions runs in C (map/compress/Counter/
accumulate, or numpy on pages of NUMPY_MIN_WORDS words or more, where its fixed cost per call is paid back),
and the n-gram chain only follows positions that can still hold a repeat (see _ngram_signals), so clean prose
costs little beyond counting its 2-grams. Both n-gram paths give the same values (the same integers divided
once); bench/clean_speed.py --unit compares them with the code before.
"""
from __future__ import annotations

import re
from collections import Counter
from itertools import accumulate, chain, compress, count, filterfalse, repeat
from operator import add, mul, sub

from pipeline.clean.words import UNSPACED_CLASS, has_unspaced, tokens

# (name, type, what it measures), in output order.
_SIGNALS: list[tuple[str, str, str]] = [
    ("n_chars", "int", "characters in the text"),
    ("n_lines", "int", "non-empty lines"),
    ("gopher_n_words", "int", "words (whitespace tokens that are not only punctuation)"),
    ("gopher_mean_word_len", "double", "mean characters per word (punctuation stripped)"),
    ("gopher_symbol_word_ratio", "double", "max(# count, ellipsis count) / words"),
    ("gopher_bullet_line_frac", "double", "fraction of lines starting with a bullet mark"),
    ("gopher_ellipsis_line_frac", "double", "fraction of lines ending with '...' or '…'"),
    ("gopher_alpha_word_frac", "double", "fraction of whitespace tokens with at least one letter"),
    ("gopher_stopword_count", "int", "occurrences of the language's stop words (en: the, be, to, of, and, that, have, with)"),
    ("gopher_dup_line_frac", "double", "fraction of lines that repeat an earlier line"),
    ("gopher_dup_para_frac", "double", "fraction of paragraphs that repeat an earlier paragraph"),
    ("gopher_dup_line_char_frac", "double", "fraction of line characters in repeated lines"),
    ("gopher_dup_para_char_frac", "double", "fraction of paragraph characters in repeated paragraphs"),
    ("gopher_top_2gram_char_frac", "double", "word chars covered by the most frequent repeated 2-gram"),
    ("gopher_top_3gram_char_frac", "double", "word chars covered by the most frequent repeated 3-gram"),
    ("gopher_top_4gram_char_frac", "double", "word chars covered by the most frequent repeated 4-gram"),
    ("gopher_dup_5gram_char_frac", "double", "word chars covered by any 5-gram occurring twice or more"),
    ("gopher_dup_6gram_char_frac", "double", "word chars covered by any 6-gram occurring twice or more"),
    ("gopher_dup_7gram_char_frac", "double", "word chars covered by any 7-gram occurring twice or more"),
    ("gopher_dup_8gram_char_frac", "double", "word chars covered by any 8-gram occurring twice or more"),
    ("gopher_dup_9gram_char_frac", "double", "word chars covered by any 9-gram occurring twice or more"),
    ("gopher_dup_10gram_char_frac", "double", "word chars covered by any 10-gram occurring twice or more"),
    ("c4_terminal_punct_line_frac", "double", "fraction of lines ending in a sentence mark (. ! ? 。！？ ...), "
     "closing quotes and brackets after it allowed, or in a closing quote"),
    ("c4_has_lorem_ipsum", "int", "1 if 'lorem ipsum' appears anywhere"),
    ("c4_has_curly_bracket", "int", "1 if '{' appears anywhere (C4's code/JS marker)"),
    ("c4_javascript_line_count", "int", "lines mentioning 'javascript'"),
    ("c4_policy_line_count", "int", "lines with terms-of-use / privacy / cookie policy phrases"),
    ("c4_n_sentences", "int", "sentences: runs of sentence marks (closers after them included); . ! ? need "
     "a space, the end or an unspaced script's character after them, 。！？ nothing"),
    ("fineweb_line_punct_frac", "double", "fraction of lines ending in terminal punctuation (FineWeb set, "
     "and a sentence mark before closing marks: 。」 ！』 ？）)"),
    ("fineweb_short_line_frac", "double", "fraction of short lines: 30 characters or fewer in English, "
     "as many words' worth in another script (short_line_chars of the calibration table)"),
    ("fineweb_dup_line_char_frac", "double",
     "same measure as gopher_dup_line_char_frac; its own column because FineWeb's threshold differs"),
    ("fineweb_list_frac", "double", "newlines per word: high for list-like pages (FineWeb list ratio)"),
]
SIGNAL_NAMES: list[str] = [name for name, _, _ in _SIGNALS]
SIGNAL_TYPES: dict[str, str] = {name: kind for name, kind, _ in _SIGNALS}
SIGNAL_DOCS: dict[str, str] = {name: doc for name, _, doc in _SIGNALS}

STOPWORDS_EN = frozenset(["the", "be", "to", "of", "and", "that", "have", "with"])
_BULLETS = ("•", "‣", "⁃", "◦", "●", "○", "▪", "▫", "■", "□", "►", "▶", "➢", "✓", "✔", "-", "*", "·")
_ELLIPSES = ("...", "…")
_C4_END = (".", "!", "?", '"', "”")
# FineWeb's set, plus the sentence marks of scripts that have their own: Devanagari/Bengali danda,
# Arabic question mark, Urdu full stop, Armenian, Ethiopic, Myanmar and Tibetan full stops
_FINEWEB_END = (".", "!", "?", '"', "”", "'", "’", "…", "。", "！", "？", ")", "»",
                "।", "॥", "؟", "۔", "։", "።", "။", "།", "．", "｡")
# Marks that close a quotation or a bracket: a sentence may end just before them (。」 ！』 ？） ." !”).
_CLOSERS = "\"'”’»›)]}」』）】》〉〕〗〙〛"
# Sentence-final marks. The full-width ones of Chinese and Japanese end a sentence whatever follows (no
# space is written after them); the others need a space, the end or a character of an unspaced script
# after them (3.14, e.g., example.com are not ends; 的变化.结果 in Chinese with half-width marks is).
_WIDE_END = "。！？｡"
_END_MARKS = ".!?．।॥؟۔։።။།"
_TERMINAL = tuple(_WIDE_END + _END_MARKS)
_C4_POLICY = ("terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies",
              "use cookies")
_PARA_SPLIT = re.compile(r"\n[ \t]*\n\s*")
_LETTER = re.compile(r"[^\W\d_]")
# Text without an unspaced script (English, ...): a mark, closers, then a space or the end (one regex with a
# leading character class, which the engine scans for quickly). Text with one: runs of 。！？ whatever follows,
# and . ! ? before a space, the end or an unspaced character.
_SENTENCE_END_SPACED = re.compile(f"[{re.escape(_END_MARKS)}][{re.escape(_CLOSERS)}]*(?:\\s|$)")
_SENTENCE_END = re.compile(f"[{_WIDE_END}]+[{re.escape(_CLOSERS)}]*"
                           f"|[{re.escape(_END_MARKS)}]+[{re.escape(_CLOSERS)}]*(?=\\s|$|{UNSPACED_CLASS})")


def ends_sentence(line: str) -> bool:
    """True when a (stripped) line ends in a sentence-final mark, closing quotes and brackets after it
    allowed: 。」 ！』 ？） ." end a sentence."""
    return line.rstrip(_CLOSERS).endswith(_TERMINAL)


def _zero_signals() -> dict[str, float | int]:
    return {name: (0 if SIGNAL_TYPES[name] == "int" else 0.0) for name in SIGNAL_NAMES}


def _dup_stats(items: list[str]) -> tuple[int, int, int]:
    """(repeated copies, their characters, all characters) for lines or paragraphs."""
    seen: set[str] = set()
    dup = dup_chars = total = 0
    for s in items:
        n = len(s)
        total += n
        if s in seen:
            dup += 1
            dup_chars += n
        else:
            seen.add(s)
    return dup, dup_chars, total


NUMPY_MIN_WORDS = 200  # measured: the numpy chain is as fast at 100-200 words, 1.2x at 200-400, 2-4x at 800+


def _ngram_signals(words: list[str], lens: list[int], total: int, out: dict) -> None:
    """Fill the n-gram signals (see _ngram_signals_py), with numpy on long pages."""
    if len(words) >= NUMPY_MIN_WORDS:
        _ngram_signals_np(words, lens, total, out)
    else:
        _ngram_signals_py(words, lens, total, out)


def _ngram_signals_np(words: list[str], lens: list[int], total: int, out: dict) -> None:
    """_ngram_signals_py with numpy arrays: the same chain of levels, the same candidates, the same integers
    (counts and character sums) divided once by `total`. The surviving n-grams are renumbered by np.unique's
    inverse (their rank among the level's distinct keys, < V) instead of by first occurrence: any numbering
    below V keeps the keys exact, and only their equality is used."""
    import numpy as np

    n_words = len(words)
    vocab: dict[str, int] = {}
    ids = np.fromiter(map(vocab.setdefault, words, count()), np.int64, n_words)
    prefix = np.zeros(n_words + 1, np.int64)
    np.cumsum(np.fromiter(lens, np.int64, n_words), out=prefix[1:])
    V = n_words
    pos = np.arange(n_words - 1, dtype=np.int64)
    keys = ids[:-1] * V + ids[1:]
    for n in range(2, 11):
        # np.unique(keys, return_inverse=True, return_counts=True), without its checks and copies
        order = keys.argsort()
        sk = keys[order]
        first = np.empty(len(sk), bool)
        first[0] = True
        np.not_equal(sk[1:], sk[:-1], out=first[1:])
        rank = first.cumsum() - 1
        if rank[-1] + 1 == len(keys):
            return
        inv = np.empty_like(rank)
        inv[order] = rank
        cnt = np.bincount(rank)
        per_pos = cnt[inv]
        is_dup = per_pos > 1
        dpos = pos[is_dup]
        if n <= 4:
            best = cnt.max()
            bpos = pos[per_pos == best]
            chars = (prefix[bpos + n] - prefix[bpos]).max()
            out[f"gopher_top_{n}gram_char_frac"] = int(best) * int(chars) / total
        else:
            ends = dpos + n
            starts = np.maximum(dpos, np.concatenate(([0], ends[:-1])))
            out[f"gopher_dup_{n}gram_char_frac"] = int((prefix[ends] - prefix[starts]).sum()) / total
        if n == 10:
            return
        extend = np.zeros(len(dpos), bool)  # dpos ascends: i + 1 is a repeat too when it comes next
        extend[:-1] = dpos[1:] == dpos[:-1] + 1
        pos = dpos[extend]
        if not len(pos):
            return
        keys = inv[is_dup][extend] * V + ids[pos + n]


def _ngram_signals_py(words: list[str], lens: list[int], total: int, out: dict) -> None:
    """Fill top-n-gram (n=2..4) and duplicated-n-gram (n=5..10) character fractions.

    Words become integer ids < V (V = number of words) and an n-gram at position i the exact integer key
    key_n[i] = dense_{n-1}[i] * V + id[i+n-1], where dense_{n-1} renumbers the (n-1)-grams below V: keys
    never collide and stay below V**2. Level n+1 only
    looks at positions i where the n-grams at i and i+1 are both repeated: an (n+1)-gram that occurs
    twice repeats both of its n-grams, so no repeat is missed, and clean prose leaves few candidates.
    Every pass over positions runs inside C (map, compress, Counter, accumulate).
    """
    n_words = len(words)
    if n_words < 2:
        return
    vocab: dict[str, int] = {}
    ids = list(map(vocab.setdefault, words, count()))  # first position of each distinct word
    prefix = list(accumulate(lens, initial=0))
    V = n_words
    pos = list(range(n_words - 1))
    keys = list(map(add, map(mul, ids[:-1], repeat(V)), ids[1:]))
    for n in range(2, 11):
        counts = Counter(keys)
        if len(counts) == len(keys):  # nothing repeats, so no longer n-gram repeats either
            return
        per_pos = list(map(counts.__getitem__, keys))
        is_dup = list(map((1).__lt__, per_pos))
        dpos = list(compress(pos, is_dup))  # ascending start positions of repeated n-grams
        if n <= 4:
            # the most frequent n-gram (ties: the one with the most characters) times its count
            best = max(counts.values())
            bpos = list(compress(pos, map(best.__eq__, per_pos)))
            chars = max(map(sub, map(prefix.__getitem__, map(add, bpos, repeat(n))),
                            map(prefix.__getitem__, bpos)))
            out[f"gopher_top_{n}gram_char_frac"] = best * chars / total
        else:
            # union of the spans [i, i+n) of repeated n-grams; each span starts where the previous ended
            starts = map(max, dpos, chain((0,), map(add, dpos, repeat(n))))
            ends = map(add, dpos, repeat(n))
            covered = sum(map(sub, map(prefix.__getitem__, ends), map(prefix.__getitem__, starts)))
            out[f"gopher_dup_{n}gram_char_frac"] = covered / total
        if n == 10:
            return
        dset = set(dpos)
        extend = list(map(dset.__contains__, map(add, dpos, repeat(1))))
        pos = list(compress(dpos, extend))
        if not pos:
            return
        # re-number the surviving n-grams densely (< V) so keys stay small ints instead of growing
        # into big ints (V ** n) on long repetitive pages
        dense: dict[int, int] = {}
        base = map(dense.setdefault, compress(compress(keys, is_dup), extend), count())
        keys = list(map(add, map(mul, base, repeat(V)), map(ids.__getitem__, map(add, pos, repeat(n)))))


SHORT_LINE_CHARS = 30  # FineWeb's short line, in English characters (about five words)


def compute_signals(text: str, lang: str | None = None,
                    stopwords: frozenset[str] | set[str] = STOPWORDS_EN,
                    short_line_chars: int = SHORT_LINE_CHARS) -> dict[str, float | int]:
    """All heuristic signals for one document (keys and order as in SIGNAL_NAMES); `lang` picks the
    word segmenter for scripts written without spaces, `stopwords` the words counted as stop words,
    `short_line_chars` the length of a short line in this language's characters (FineWeb's 30 English
    characters hold about as many words as 10 Chinese ones: the calibration table says it per language)."""
    out = _zero_signals()
    if not text:
        return out
    out["n_chars"] = len(text)
    lower = text.lower()

    # --- lines and paragraphs -------------------------------------------------------------------
    lines = list(filter(None, map(str.strip, text.split("\n"))))
    n_lines = len(lines)
    out["n_lines"] = n_lines
    if n_lines:
        bullets = ellipses = c4_end = fw_end = short = 0
        for s in lines:
            if s.startswith(_BULLETS):
                bullets += 1
            if s.endswith(_ELLIPSES):
                ellipses += 1
            if s.endswith(_FINEWEB_END):
                fw_end += 1
                if s.endswith(_C4_END) or ends_sentence(s):
                    c4_end += 1
            elif ends_sentence(s):  # a mark before a closer FineWeb's set does not hold: 。」 ！』
                fw_end += 1
                c4_end += 1
            if len(s) <= short_line_chars:
                short += 1
        out["gopher_bullet_line_frac"] = bullets / n_lines
        out["gopher_ellipsis_line_frac"] = ellipses / n_lines
        out["c4_terminal_punct_line_frac"] = c4_end / n_lines
        out["fineweb_line_punct_frac"] = fw_end / n_lines
        out["fineweb_short_line_frac"] = short / n_lines
        dup, dup_chars, total = _dup_stats(lines)
        out["gopher_dup_line_frac"] = dup / n_lines
        out["gopher_dup_line_char_frac"] = out["fineweb_dup_line_char_frac"] = dup_chars / total

        paras = [p for p in (p.strip() for p in _PARA_SPLIT.split(text)) if p]
        dup, dup_chars, total = _dup_stats(paras)
        out["gopher_dup_para_frac"] = dup / len(paras)
        out["gopher_dup_para_char_frac"] = dup_chars / total

        if "javascript" in lower:
            out["c4_javascript_line_count"] = sum(1 for s in lower.split("\n") if "javascript" in s)
        if any(p in lower for p in _C4_POLICY):
            out["c4_policy_line_count"] = sum(
                1 for s in lower.split("\n") if any(p in s for p in _C4_POLICY))

    # --- words -------------------------------------------------------------------------------------
    unspaced = has_unspaced(text)  # one scan: the segmenter and the sentence count both ask
    words, n_tokens = tokens(text, lang, unspaced)
    n_words = len(words)
    out["gopher_n_words"] = n_words
    if n_tokens:
        # pure-punctuation tokens have no letter; of the words, all-letter ones (most) obviously do
        other = list(filterfalse(str.isalpha, words))
        with_letter = n_words - len(other) + len(list(filter(_LETTER.search, other)))
        out["gopher_alpha_word_frac"] = with_letter / n_tokens
    if n_words:
        lens = list(map(len, words))
        total = sum(lens)
        out["gopher_mean_word_len"] = total / n_words
        ellipsis = text.count("...") + text.count("…")
        out["gopher_symbol_word_ratio"] = max(text.count("#"), ellipsis) / n_words
        out["gopher_stopword_count"] = sum(map(stopwords.__contains__, words))
        out["fineweb_list_frac"] = text.count("\n") / n_words
        _ngram_signals(words, lens, total, out)

    # --- C4 page markers -------------------------------------------------------------------------
    out["c4_has_lorem_ipsum"] = int("lorem ipsum" in lower)
    out["c4_has_curly_bracket"] = int("{" in text)
    out["c4_n_sentences"] = len((_SENTENCE_END if unspaced else _SENTENCE_END_SPACED).findall(text))
    return out
