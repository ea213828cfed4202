"""Content safety by keyword lists: per language, per category, a density signal and a calibrated threshold.

Each language has one Aho-Corasick automaton (ahocorasick-rs) over its terms, built once per worker process from
the built-in list (lists/safety/<lang>.tsv, see lists/NOTICE) and the user's files (`clean.safety.lists`). A list
line is `category<TAB>term`; the categories are CATEGORIES (politics is never in a built-in list: a user may add
their own file), plus `allow`: an ordinary word that contains a term (性质, 一次性, 奶茶). Matching is on the
lower-cased text, leftmost-longest, so a match inside an allow word is not counted. A term of a space-separated
script counts only on word boundaries ("anal" is not in "analysis"); a term with Han, kana, Thai... characters
counts wherever it occurs (those scripts have no spaces to bound it).

The signal `safety_<category>` is matches per 1,000 characters of the document (at least MIN_CHARS counted); a document whose density in a
rejecting category (`clean.safety.reject`) exceeds its language's threshold is rejected with reason
`safety_<category>`. Thresholds: lists/safety/thresholds.json (pipeline/clean/safety_calibrate.py), then
`clean.safety.thresholds.<lang>.<category>` in the config.

A language written with another's list (LIST_LANGUAGE: Cantonese yue and Wu wuu, which lid.176 tells from
Mandarin but which are written in the same characters, pipeline/clean/script.py) is checked with that language's
lists, built-in and the user's, and its thresholds row; the user's own `lists`/`thresholds` entries under the
language's code are added on top.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from pipeline.clean.lists import LISTS_DIR, ListError, builtin, pinned, read_lines

CATEGORIES = ("porn", "gambling", "ads", "drugs", "illegal_trade", "obscene", "politics")
DEFAULT_REJECT = ("porn", "gambling", "ads", "drugs", "illegal_trade", "obscene")
ALLOW = "allow"
SIGNALS = [f"safety_{c}" for c in CATEGORIES]
_INDEX = {c: i for i, c in enumerate(CATEGORIES)}
MIN_CHARS = 500      # the shortest denominator of a density
# Languages checked with another language's list and thresholds row: the one place that says so (the list
# lookup, the thresholds and their calibration all read it through list_language).
LIST_LANGUAGE = {"yue": "zh", "wuu": "zh"}


def list_language(lang: str | None) -> str:
    """The language whose list (safety/<it>.tsv) and thresholds row a document of `lang` is checked with."""
    lang = lang or ""
    return LIST_LANGUAGE.get(lang, lang)


def _joins(c: str) -> bool:
    """True when c would continue a word of a spaced script: a letter or digit, but not a character of a script
    written without spaces (bet365亚洲 holds the term bet365: Han text runs into Latin brand names unspaced)."""
    return c.isalnum() and (c < "\u2e80" or "\uac00" <= c <= "\ud7af")


def _spaced(term: str) -> bool:
    """True when every letter of the term belongs to a script written with spaces (match on word boundaries)."""
    from pipeline.clean.words import has_unspaced
    return not has_unspaced(term)


def read_list(path: str | Path) -> list[tuple[str, str]]:
    """(category, term) of every line of a list file; a bad line is a ListError naming the file and line."""
    out = []
    for n, line in read_lines(path):
        cat, tab, term = line.partition("\t")
        cat, term = cat.strip(), term.strip()
        if not tab or not term:
            raise ListError(f"{path}:{n}: expected 'category<TAB>term', got {line!r}")
        if cat not in _INDEX and cat != ALLOW:
            raise ListError(f"{path}:{n}: unknown category {cat!r}; known: {', '.join(CATEGORIES + (ALLOW,))}")
        out.append((cat, term.lower()))
    if not out:
        raise ListError(f"{path}: the list is empty; give at least one 'category<TAB>term' line or remove the file")
    return out


class Matcher:
    """Keyword densities of one language (ahocorasick-rs, leftmost-longest: about 30 MB/s on one core here)."""

    def __init__(self, entries: list[tuple[str, str]]):
        import ahocorasick_rs

        seen: dict[str, int] = {}
        for cat, term in entries:
            seen.setdefault(term, -1 if cat == ALLOW else _INDEX[cat])   # the first list to name a term wins
        self.terms = list(seen)
        self.codes = list(seen.values())
        self.spaced = [_spaced(t) for t in self.terms]
        self.n_terms = sum(c >= 0 for c in self.codes)
        self.auto = ahocorasick_rs.AhoCorasick(self.terms, matchkind=ahocorasick_rs.MatchKind.LeftmostLongest) \
            if self.terms else None

    def matches(self, text: str):
        """(category index, term) of every counted match: leftmost-longest, allow words and terms of a spaced
        script that are not bounded by non-letters skipped."""
        if not text or not self.n_terms:
            return
        low = text.lower()
        n = len(low)
        codes, spaced, terms = self.codes, self.spaced, self.terms
        for i, start, end in self.auto.find_matches_as_indexes(low):
            code = codes[i]
            if code < 0:
                continue
            if spaced[i] and ((start > 0 and _joins(low[start - 1])) or (end < n and _joins(low[end]))):
                continue
            yield code, terms[i]

    def counts(self, text: str) -> list[int]:
        """Matches per category (CATEGORIES order)."""
        out = [0] * len(CATEGORIES)
        for code, _ in self.matches(text):
            out[code] += 1
        return out

    def densities(self, text: str) -> dict[str, float]:
        """Matches per 1,000 characters, a text shorter than MIN_CHARS counted as MIN_CHARS long (a single
        ordinary hit in a 200-character abstract is not a page full of spam)."""
        per = 1000.0 / max(MIN_CHARS, len(text))
        return {c: k * per for c, k in zip(CATEGORIES, self.counts(text))}


def builtin_languages() -> list[str]:
    return sorted(Path(rel).stem for rel in pinned()
                  if rel.startswith("safety/") and rel.endswith(".tsv") and rel.count("/") == 1)


class Lists:
    """The lists of one clean config (`clean.safety`), a matcher per language built on first use."""

    def __init__(self, cfg=None):
        self.builtin = getattr(cfg, "builtin", True)
        self.extra: dict = getattr(cfg, "lists", None) or {}
        self._matchers: dict[tuple[Path, ...], Matcher | None] = {}

    def files(self, lang: str | None) -> list[Path]:
        """The list files a document of `lang` is checked with: those of its list language (list_language),
        then the user's files for the language's own code."""
        lang = lang or ""
        base = list_language(lang)
        files = []
        if self.builtin and f"safety/{base}.tsv" in pinned():
            files.append(builtin(f"safety/{base}.tsv"))
            if f"safety/allow/{base}.txt" in pinned():
                files.append(builtin(f"safety/allow/{base}.txt"))
            if f"safety/brands/{base}.tsv" in pinned():     # the brand names spam injects (issue 38)
                files.append(builtin(f"safety/brands/{base}.tsv"))
        own = self.extra.get(lang, []) if lang != base else []
        files += [Path(p) for p in self.extra.get("*", []) + self.extra.get(base, []) + own]
        return files

    def matcher(self, lang: str | None) -> Matcher | None:
        files = tuple(self.files(lang))          # languages sharing a list share its automaton
        if files not in self._matchers:
            entries = [e for f in files for e in read_list(f)]
            self._matchers[files] = Matcher(entries) if entries else None
        return self._matchers[files]


@lru_cache(maxsize=4)
def builtin_thresholds() -> dict:
    return json.loads(builtin("safety/thresholds.json").read_text(encoding="utf-8"))["thresholds"]


class Safety:
    """Signals and decision of the content-safety rule for one clean config."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.lists = Lists(cfg)
        self.reject = [c for c in cfg.reject]
        self._limits: dict[str, dict[str, float]] = {}

    def limits(self, lang: str | None) -> dict[str, float]:
        lang = lang or ""
        if lang not in self._limits:
            table, base, user = builtin_thresholds(), list_language(lang), self.cfg.thresholds
            row = {**table["*"], **table.get(base, {}), **user.get("*", {}), **user.get(base, {}),
                   **(user.get(lang, {}) if lang != base else {})}
            self._limits[lang] = {c: float(row[c]) for c in self.reject}
        return self._limits[lang]

    def signals(self, text: str, lang: str | None) -> dict[str, float]:
        m = self.lists.matcher(lang)
        if m is None:
            return dict.fromkeys(SIGNALS, 0.0)
        return {f"safety_{c}": v for c, v in m.densities(text).items()}

    def reason(self, signals: dict, lang: str | None) -> str | None:
        for c, limit in self.limits(lang).items():
            if signals[f"safety_{c}"] > limit:
                return f"safety_{c}"
        return None


def check_config(cfg, base: Path | None = None) -> None:
    """Read every list file a safety config names (ListError on a bad one), before Spark starts."""
    for lang, paths in (cfg.lists or {}).items():
        for p in paths:
            read_list(p)
    if cfg.builtin:
        for lang in builtin_languages():
            builtin(f"safety/{lang}.tsv")
        builtin("safety/thresholds.json")


__all__ = ["CATEGORIES", "DEFAULT_REJECT", "LIST_LANGUAGE", "SIGNALS", "ListError", "Lists", "Matcher", "Safety",
           "read_list", "list_language", "LISTS_DIR", "check_config"]
