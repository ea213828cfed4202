"""The clean stage for a batch of documents: normalise, drop boilerplate lines, mask PII, identify the
language, compute heuristic signals, and decide (the one place thresholds are applied).

A rule `{"signal": s, "op": op, "value": v, "reason": r}` means: reject with reason r when
`signals[s] op v`. Rules are checked in order and the first that fires is the recorded reason; the
language rules come before all of them.
"""
from __future__ import annotations

import operator
from typing import Protocol

from pipeline.heuristics import compute_signals
from pipeline.normalize import clean_lines, normalize_text
from pipeline.pii import mask_pii
from pipeline.settings import CleanConfig

# The rule operators of pipeline/settings.py (OPS) as functions.
OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}

class Identifier(Protocol):
    def predict(self, texts: list[str]) -> list[tuple[str, float]]: ...


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
