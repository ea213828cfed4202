"""繁/简: which script a Chinese document is written in, its conversion to simplified characters, and the
character fold of the dedup and decontamination keys.

The character sets come from OpenCC's own tables (lists/opencc/TSCharacters.txt and STCharacters.txt, see
lists/NOTICE): a character is *traditional* when TSCharacters maps it only to other characters (髮 -> 发), and
*simplified* when STCharacters maps it only to other characters (发 -> 髮 發). A character listed as one of
its own forms (干 -> 幹 乾 干: 干 is written in both scripts) tells nothing and is not counted.

`chinese_script(text)` counts both kinds (one Aho-Corasick scan) and says:
- traditional: at least MIN_TELLING telling characters, of which at least SHARE are traditional;
- simplified:  the same, simplified;
- mixed:       telling characters of both kinds, neither reaching SHARE (a page quoting the other script,
               or a careless conversion);
- neutral:     fewer than MIN_TELLING telling characters (a short or mostly non-Han text): either script.
The thresholds were chosen on the UD Chinese GSD / GSDSimp test splits (the same sentences in both scripts,
tests/data/zh_script/) and measured on their dev splits (bench/zh_lists.py).

Conversion (`clean.chinese_script: to_simplified`) uses OpenCC 1.4.2's `t2s` (phrase-aware, pinned in
pyproject.toml: 1.4.0's t2s turned 坏 into 坯 in already-simplified text, BYVoid/OpenCC#1390), and only on a
document detected as traditional: a simplified document is never run through it.

`fold_char(ch)` is the character-level fold every dedup and decontamination key uses (pipeline/clean/words.py
`key_units`): each traditional character becomes TSCharacters' first simplified form, so a 繁体 mirror and its
简体 page have one key. Applied to both sides of every comparison, it needs no phrase context to be consistent.
"""
from __future__ import annotations

from functools import lru_cache

from pipeline.clean.lists import ListError, builtin, read_lines

TRADITIONAL, SIMPLIFIED, MIXED, NEUTRAL = "traditional", "simplified", "mixed", "neutral"
SCRIPTS = (TRADITIONAL, SIMPLIFIED, MIXED, NEUTRAL)
MIN_TELLING = 3      # telling characters needed to say anything
SHARE = 0.8          # share of the telling characters one script needs

_CHINESE = ("zh", "yue", "wuu")   # languages written in Han characters the policy applies to


def _read_table(rel: str) -> dict[str, list[str]]:
    path = builtin(rel)
    table: dict[str, list[str]] = {}
    for n, line in read_lines(path):
        key, tab, values = line.partition("\t")
        if not tab or not key or not values.split(" "):
            raise ListError(f"{path}:{n}: expected 'character<TAB>forms', got {line!r}")
        table[key] = values.split(" ")
    return table


@lru_cache(maxsize=1)
def tables() -> tuple[frozenset[str], frozenset[str], dict[int, str]]:
    """(traditional-only characters, simplified-only characters, the fold as a str.translate table)."""
    ts = _read_table("opencc/TSCharacters.txt")
    st = _read_table("opencc/STCharacters.txt")
    trad = {c for c, forms in ts.items() if len(c) == 1 and c not in forms}
    simp = {c for c, forms in st.items() if len(c) == 1 and c not in forms}
    both = trad & simp
    fold = {ord(c): forms[0] for c, forms in ts.items() if len(c) == 1 and forms[0] != c and len(forms[0]) == 1}
    return frozenset(trad - both), frozenset(simp - both), fold


@lru_cache(maxsize=1)
def _finder():
    """One Aho-Corasick automaton over the telling characters (ahocorasick-rs: about 30 MB/s on one core here,
    where a regex character class of 4,000 characters ran at 0.8 MB/s): pattern index < n_trad is traditional."""
    import ahocorasick_rs

    trad, simp, _ = tables()
    chars = sorted(trad) + sorted(simp)
    return ahocorasick_rs.AhoCorasick(chars), len(trad)


def telling_counts(text: str) -> tuple[int, int]:
    """(traditional-only characters, simplified-only characters) in the text."""
    finder, n_trad = _finder()
    found = finder.find_matches_as_indexes(text)
    nt = sum(1 for i, _, _ in found if i < n_trad)
    return nt, len(found) - nt


def classify(n_trad: int, n_simp: int) -> str:
    total = n_trad + n_simp
    if total < MIN_TELLING:
        return NEUTRAL
    if n_trad >= SHARE * total:
        return TRADITIONAL
    if n_simp >= SHARE * total:
        return SIMPLIFIED
    return MIXED


def chinese_script(text: str) -> str:
    """traditional, simplified, mixed or neutral (see the module doc)."""
    return classify(*telling_counts(text))


def is_chinese(lang: str | None) -> bool:
    return lang in _CHINESE


@lru_cache(maxsize=1)
def _t2s():
    import opencc  # OpenCC 1.4.2's C++ library, loaded on the first traditional document only
    return opencc.OpenCC("t2s")


def to_simplified(text: str) -> str:
    """OpenCC t2s of a text; call it only on text detected as traditional (see the module doc)."""
    return _t2s().convert(text)


def fold_char(ch: str) -> str:
    """The key form of one character: its simplified form when it is a traditional one, else itself."""
    return tables()[2].get(ord(ch), ch)
