"""What the clean stage knows per language: stop words, rule thresholds, the language-ID confidence it
needs, and which languages the identifier confuses with each other.

Three layers, later ones win:
1. the published defaults (pipeline/clean/settings.py DEFAULT_RULES, Gopher's English stop words, the global
   `clean.min_lang_score`), which is all a language without calibration gets (its stop-word rule is off:
   Gopher's English stop words say nothing about another language);
2. the calibration table: the one built in (pipeline/clean/language_table.json, data written by
   `python -m pipeline.clean.calibrate` from reference prose; its method is recorded in it), or a user's own
   (`clean.calibration: FILE.json`, written by the same command), or none (`clean.calibration: none`: the
   published defaults everywhere);
3. `clean.per_language.<lang>` in the config: `stopwords`, `min_lang_score`, `short_line_chars` and `rules`
   (reason -> value).

English is one calibration among many: its table row keeps the published thresholds unless the
calibration found a reason to move one.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from pipeline.clean.heuristics import SHORT_LINE_CHARS, STOPWORDS_EN


@dataclass(frozen=True)
class LanguageProfile:
    lang: str
    stopwords: frozenset[str]
    rules: tuple[dict, ...]                  # the clean rules with this language's values
    min_lang_score: float
    calibrated: bool = False
    short_line_chars: int = SHORT_LINE_CHARS  # FineWeb's short line in this language's characters
    changed: dict = field(default_factory=dict, compare=False)  # reason -> (default, this language's value)


def load_table(calibration: str) -> dict:
    """The calibration table: {"method": ..., "languages": {lang: row}, "confusable": [[...], ...]}."""
    if calibration in ("", "builtin"):
        return builtin_table()
    if calibration == "none":
        return {"method": {}, "languages": {}, "confusable": []}
    return _read_table(calibration)


BUILTIN_TABLE = "language_table.json"  # package data beside this module


@lru_cache(maxsize=1)
def builtin_table() -> dict:
    """The table shipped with Glassbox, read as package data: executors import pipeline/ from a zip
    (build/pipeline.zip), where the file has no path of its own."""
    text = resources.files(__package__).joinpath(BUILTIN_TABLE).read_text(encoding="utf-8")
    return _checked(json.loads(text), BUILTIN_TABLE)


@lru_cache(maxsize=8)
def _read_table(path: str) -> dict:
    with open(path, encoding="utf-8") as fh:
        return _checked(json.load(fh), path)


def _checked(table, path: str) -> dict:
    if not isinstance(table, dict) or not isinstance(table.get("languages"), dict):
        raise ValueError(f"{path}: not a calibration table (expected the JSON that `python -m pipeline.clean.calibrate` "
                         f"writes, with a 'languages' mapping)")
    return table


class Profiles:
    """Per-language profiles for one clean config, built on first use of each language."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.table = load_table(cfg.calibration)
        self._cache: dict[str | None, LanguageProfile] = {}
        groups = [list(g) for g in self.table.get("confusable", [])] if cfg.confusable is None else cfg.confusable
        self.group_of: dict[str, frozenset[str]] = {}
        for g in groups:
            for lang in g:
                self.group_of[lang] = self.group_of.get(lang, frozenset()) | frozenset(g)

    def group(self, lang: str) -> frozenset[str]:
        return self.group_of.get(lang, frozenset((lang,)))

    def get(self, lang: str | None) -> LanguageProfile:
        prof = self._cache.get(lang)
        if prof is None:
            prof = self._cache[lang] = self._build(lang)
        return prof

    def _build(self, lang: str | None) -> LanguageProfile:
        cfg = self.cfg
        row = self.table["languages"].get(lang, {}) if lang else {}
        over = (cfg.per_language or {}).get(lang, {}) if lang else {}
        values = {**row.get("rules", {}), **over.get("rules", {})}
        if "stopwords" in over:
            stop = frozenset(w.lower() for w in over["stopwords"])
        elif "stopwords" in row:
            stop = frozenset(row["stopwords"])
        else:
            stop = STOPWORDS_EN if lang in (None, "en") else frozenset()
        rules, changed = [], {}
        for r in cfg.rules:
            if r["reason"] in values and values[r["reason"]] != r["value"]:
                changed[r["reason"]] = (r["value"], values[r["reason"]])
                r = {**r, "value": values[r["reason"]]}
            if r["signal"] == "gopher_stopword_count" and not stop:
                continue  # no stop words known for this language: the rule would reject everything
            rules.append(r)
        score = over.get("min_lang_score", min(cfg.min_lang_score, row.get("min_lang_score", cfg.min_lang_score)))
        return LanguageProfile(lang or "", stop, tuple(rules), score, calibrated=bool(row), changed=changed,
                               short_line_chars=over.get("short_line_chars",
                                                         row.get("short_line_chars", SHORT_LINE_CHARS)))
