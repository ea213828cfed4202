"""The clean stage for a batch of documents: normalise, drop boilerplate lines, mask PII, identify the
language, compute heuristic signals, and decide (the one place thresholds are applied).

A rule `{"signal": s, "op": op, "value": v, "reason": r}` means: reject with reason r when
`signals[s] op v`. Rules are checked in order and the first that fires is the recorded reason; the
language rules come before all of them.
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

from pipeline.heuristics import SIGNAL_NAMES, compute_signals
from pipeline.normalize import clean_lines, normalize_text
from pipeline.pii import mask_pii

OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _rule(signal: str, op: str, value: float, reason: str) -> dict:
    return {"signal": signal, "op": op, "value": value, "reason": reason}


# Published defaults. The Gopher word rules assume English: a config that admits other languages
# should drop or relax gopher_few_stopwords and the word-length rules.
DEFAULT_RULES: list[dict] = [
    # Gopher quality filter (Rae et al. 2021, A.1.1)
    _rule("gopher_n_words", "<", 50, "gopher_too_few_words"),
    _rule("gopher_n_words", ">", 100_000, "gopher_too_many_words"),
    _rule("gopher_mean_word_len", "<", 3, "gopher_short_words"),
    _rule("gopher_mean_word_len", ">", 10, "gopher_long_words"),
    _rule("gopher_symbol_word_ratio", ">", 0.1, "gopher_symbol_ratio"),
    _rule("gopher_bullet_line_frac", ">", 0.9, "gopher_bullet_lines"),
    _rule("gopher_ellipsis_line_frac", ">", 0.3, "gopher_ellipsis_lines"),
    _rule("gopher_alpha_word_frac", "<", 0.8, "gopher_few_alpha_words"),
    _rule("gopher_stopword_count", "<", 2, "gopher_few_stopwords"),
    # Gopher repetition filter (Rae et al. 2021, table A1)
    _rule("gopher_dup_line_frac", ">", 0.3, "gopher_dup_lines"),
    _rule("gopher_dup_para_frac", ">", 0.3, "gopher_dup_paras"),
    _rule("gopher_dup_line_char_frac", ">", 0.2, "gopher_dup_line_chars"),
    _rule("gopher_dup_para_char_frac", ">", 0.2, "gopher_dup_para_chars"),
    _rule("gopher_top_2gram_char_frac", ">", 0.20, "gopher_top_2gram"),
    _rule("gopher_top_3gram_char_frac", ">", 0.18, "gopher_top_3gram"),
    _rule("gopher_top_4gram_char_frac", ">", 0.16, "gopher_top_4gram"),
    _rule("gopher_dup_5gram_char_frac", ">", 0.15, "gopher_dup_5gram"),
    _rule("gopher_dup_6gram_char_frac", ">", 0.14, "gopher_dup_6gram"),
    _rule("gopher_dup_7gram_char_frac", ">", 0.13, "gopher_dup_7gram"),
    _rule("gopher_dup_8gram_char_frac", ">", 0.12, "gopher_dup_8gram"),
    _rule("gopher_dup_9gram_char_frac", ">", 0.11, "gopher_dup_9gram"),
    _rule("gopher_dup_10gram_char_frac", ">", 0.10, "gopher_dup_10gram"),
    # C4 (Raffel et al. 2020). The curly-bracket rule is left out on purpose: it removes all code.
    _rule("c4_has_lorem_ipsum", ">=", 1, "c4_lorem_ipsum"),
    # FineWeb (Penedo et al. 2024)
    _rule("fineweb_line_punct_frac", "<", 0.12, "fineweb_few_punct_lines"),
    _rule("fineweb_short_line_frac", ">", 0.67, "fineweb_short_lines"),
    _rule("fineweb_dup_line_char_frac", ">", 0.1, "fineweb_dup_line_chars"),
]


class Identifier(Protocol):
    def predict(self, texts: list[str]) -> list[tuple[str, float]]: ...


@dataclass
class CleanConfig:
    """Clean-stage settings. `languages=None` admits every language."""
    languages: list[str] | None = field(default_factory=lambda: ["en"])
    min_lang_score: float = 0.65
    mask_pii: bool = True
    remove_boilerplate_lines: bool = True
    rules: list[dict] = field(default_factory=lambda: [dict(r) for r in DEFAULT_RULES])

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "CleanConfig":
        """Build from a config mapping, naming any unknown key; the result is validated."""
        d = dict(d or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"clean config: unknown key(s) {unknown}; known keys are {sorted(known)}")
        cfg = cls(**d)
        cfg.validate()
        return cfg

    def validate(self) -> None:
        """Raise ValueError naming the bad field, before any Spark work starts."""
        if self.languages is not None and (
                isinstance(self.languages, str) or not all(isinstance(x, str) for x in self.languages)):
            raise ValueError(f"clean config: languages must be a list of codes like ['en'], got {self.languages!r}")
        if not _is_number(self.min_lang_score) or not 0.0 <= self.min_lang_score <= 1.0:
            raise ValueError(f"clean config: min_lang_score must be a number in [0, 1], got {self.min_lang_score!r}")
        validate_rules(self.rules)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def validate_rules(rules: list[dict]) -> None:
    """Raise ValueError naming the first bad rule (unknown signal, bad op, non-numeric value, ...)."""
    if not isinstance(rules, list):
        raise ValueError(f"clean rules must be a list of dicts, got {type(rules).__name__}")
    for i, r in enumerate(rules):
        where = f"clean rules[{i}] {r!r}"
        if not isinstance(r, dict):
            raise ValueError(f"{where}: each rule must be a dict with signal, op, value, reason")
        missing = {"signal", "op", "value", "reason"} - set(r)
        extra = set(r) - {"signal", "op", "value", "reason"}
        if missing or extra:
            raise ValueError(f"{where}: missing keys {sorted(missing)}, unknown keys {sorted(extra)}")
        if r["signal"] not in SIGNAL_NAMES:
            raise ValueError(f"{where}: unknown signal {r['signal']!r}; known signals: {', '.join(SIGNAL_NAMES)}")
        if r["op"] not in OPS:
            raise ValueError(f"{where}: op must be one of {list(OPS)}, got {r['op']!r}")
        if not _is_number(r["value"]):
            raise ValueError(f"{where}: value must be a finite number, got {r['value']!r}")
        if not isinstance(r["reason"], str) or not r["reason"]:
            raise ValueError(f"{where}: reason must be a non-empty string")


def apply_rules(signals: dict, rules: list[dict]) -> str | None:
    """The reason of the first rule that fires, or None (keep)."""
    for r in rules:
        if OPS[r["op"]](signals[r["signal"]], r["value"]):
            return r["reason"]
    return None


def language_reason(lang: str | None, score: float | None, cfg: CleanConfig) -> str | None:
    """`lang_not_allowed` / `lang_low_score`, or None. No identifier (lang None) means no language rule."""
    if lang is None:
        return None
    if cfg.languages is not None and lang not in cfg.languages:
        return "lang_not_allowed"
    if score < cfg.min_lang_score:
        return "lang_low_score"
    return None


def clean_batch(texts: list[str], identifier: Identifier | None, cfg: CleanConfig) -> list[dict]:
    """One dict per input: text (cleaned), lang, lang_score, lines_removed, pii_emails, pii_ips, every
    signal, and reason (None = keep). Language ID runs once, batched, on the cleaned texts."""
    rows: list[dict] = []
    for text in texts:
        t = normalize_text(text or "")
        t, removed = clean_lines(t, cfg)
        n_emails = n_ips = 0
        if cfg.mask_pii:
            t, n_emails, n_ips = mask_pii(t)
        row = {"text": t, "lang": None, "lang_score": None, "lines_removed": removed,
               "pii_emails": n_emails, "pii_ips": n_ips}
        row.update(compute_signals(t))
        rows.append(row)
    if identifier is not None:
        for row, (lang, score) in zip(rows, identifier.predict([r["text"] for r in rows])):
            row["lang"], row["lang_score"] = lang, score
    for row in rows:
        row["reason"] = (language_reason(row["lang"], row["lang_score"], cfg)
                         or apply_rules(row, cfg.rules))
    return rows


def clean_document(text: str, identifier: Identifier | None, cfg: CleanConfig) -> tuple[str, dict]:
    """Single-document form of `clean_batch`: (cleaned text, everything else)."""
    row = clean_batch([text], identifier, cfg)[0]
    return row.pop("text"), row
