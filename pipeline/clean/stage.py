"""The clean stage for a batch of documents: normalise, drop boilerplate lines, mask PII, identify the
language, compute heuristic signals, and decide (the one place thresholds are applied).

A rule `{"signal": s, "op": op, "value": v, "reason": r}` means: reject with reason r when
`signals[s] op v`. Rules are checked in order and the first that fires is the recorded reason; the
language rules come before all of them.
"""
from __future__ import annotations

import operator
from typing import Protocol

from pipeline.clean.heuristics import SIGNAL_NAMES, compute_signals
from pipeline.clean.languages import Profiles
from pipeline.clean.boilerplate import clean_lines
from pipeline.clean.normalize import fold_fullwidth, normalize_text
from pipeline.clean.pii import mask_pii
from pipeline.clean.lists_step import ListSteps
from pipeline.clean.settings import CleanConfig
from pipeline.clean.words import SEGMENTED_LANGUAGES, has_unspaced, script_counts

# The rule operators of pipeline/clean/settings.py (OPS) as functions.
OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}

class Identifier(Protocol):
    def predict(self, texts: list[str]) -> list[tuple[str, float]]: ...


def apply_rules(signals: dict, rules) -> str | None:
    """The reason of the first rule that fires, or None (keep)."""
    for r in rules:
        if OPS[r["op"]](signals[r["signal"]], r["value"]):
            return r["reason"]
    return None


UNDETERMINED = "und"  # ISO 639-2's code for a language that cannot be told

# Scripts that one language of lid.176 writes (pipeline/clean/words.py script_counts keys -> language).
SCRIPT_LANGUAGE = {"zh": "zh", "ja": "ja", "ko": "ko", "th": "th", "lo": "lo", "km": "km", "my": "my", "bo": "bo",
                   "ka": "ka", "hy": "hy", "Grek": "el", "Hebr": "he", "ta": "ta", "te": "te", "gu": "gu",
                   "pa": "pa", "kn": "kn", "ml": "ml", "si": "si"}
_PRIOR_CHARS = 2_000  # as much text as the identifier reads


def script_language(text: str) -> tuple[str | None, float]:
    """(the language a text's dominant script names, that script's share of the text's units), or
    (None, share) when the dominant script is shared by many languages (Latin, Cyrillic, Arabic, ...).
    Han with kana is Japanese; Han and kana count together as one script."""
    counts = script_counts(text[:_PRIOR_CHARS])
    total = sum(counts.values())
    if not total:
        return None, 0.0
    han, kana = counts.pop("zh", 0), counts.pop("ja", 0)
    if han or kana:
        counts["ja" if kana >= 0.1 * (han + kana) else "zh"] = han + kana
    script, n = max(counts.items(), key=lambda kv: kv[1])
    return SCRIPT_LANGUAGE.get(script), n / total


def identify(top: list[tuple[str, float]], text: str, profiles: Profiles) -> tuple[str, float]:
    """(language, score) of a text from the identifier's top labels: the score of the best label is summed
    over the labels it is confused with (bs/hr/sr, nb/no, ms/id, ...). When that score is below the
    language's threshold, or a text in a script without spaces got a label of another script, the script
    decides where only one language writes it (a Chinese article full of English terms is Chinese)."""
    lang, _ = top[0]
    group = profiles.group(lang)
    score = sum(p for label, p in top if label in group)
    if score < profiles.get(lang).min_lang_score or (has_unspaced(text) and lang not in SEGMENTED_LANGUAGES):
        slang, share = script_language(text)
        if slang is not None and share >= 0.5 and slang != lang:
            sgroup = profiles.group(slang)
            return slang, max(share, sum(p for label, p in top if label in sgroup))
        if slang == lang:
            return lang, max(score, share)
    return lang, score


LANG_NOT_ALLOWED = "lang_not_allowed"
# A document in a language the config does not admit never meets its language's rules: its heuristic signals are
# null rather than computed (on a multilingual crawl kept to [en, zh], half the clean stage's signal work went to
# pages dropped for their language; FineWeb and DataTrove filter on language first for the same reason). Admitting
# a language is a config change that reruns the clean stage; a `lang_low_score` page keeps its signals, since its
# threshold may move.
NO_SIGNALS = dict.fromkeys(SIGNAL_NAMES)


def language_reason(lang: str | None, score: float | None, cfg: CleanConfig,
                    profiles: Profiles | None = None) -> tuple[str | None, str | None]:
    """(`lang_not_allowed` / `lang_low_score` or None, the language recorded). No identifier (lang None)
    means no language rule. A label outside `languages` whose confusion group holds an admitted language
    is recorded as that language (Bosnian identified as Croatian, with [bs] admitted, stays Bosnian). With
    every language admitted, a score below the language's threshold records `und` (see keep_undetermined)."""
    if lang is None:
        return None, None
    profiles = profiles or profiles_for(cfg)
    if cfg.languages is not None and lang not in cfg.languages:
        admitted = [x for x in cfg.languages if x in profiles.group(lang)]
        if not admitted:
            return LANG_NOT_ALLOWED, lang
        lang = admitted[0]
    if score < profiles.get(lang).min_lang_score:
        if cfg.languages is None and cfg.keep_undetermined:
            return None, UNDETERMINED
        return "lang_low_score", lang
    return None, lang


_PROFILES: list = [None, None]  # (config, its profiles): one clean config per executor in practice


def profiles_for(cfg: CleanConfig) -> Profiles:
    if _PROFILES[0] is not cfg and _PROFILES[0] != cfg:   # equal configs unpickled per task share them
        _PROFILES[:] = [cfg, Profiles(cfg)]
    return _PROFILES[1]


def clean_batch(texts: list[str], identifier: Identifier | None, cfg: CleanConfig,
                urls: list[str | None] | None = None) -> list[dict]:
    """One dict per input: text (cleaned), lang, lang_score, lines_removed, pii_emails, pii_ips, every
    signal (the heuristic ones null under `lang_not_allowed`), and reason (None = keep). Language ID runs once,
    batched, on the cleaned texts; the signals and thresholds are then those of each document's language. `urls`
    (one per text, or None) feed the URL blocklists; the list steps (pipeline/clean/lists_step.py) add zh_script,
    url_block and the safety signals."""
    profiles = profiles_for(cfg)
    steps = ListSteps.of(cfg)
    rows: list[dict] = []
    for text in texts:
        t = normalize_text(text or "")
        if cfg.fullwidth == "fold":
            t = fold_fullwidth(t)
        t, removed = clean_lines(t, cfg)
        n_emails = n_ips = 0
        if cfg.mask_pii:
            t, n_emails, n_ips = mask_pii(t)
        rows.append({"text": t, "lang": None, "lang_score": None, "lines_removed": removed,
                     "pii_emails": n_emails, "pii_ips": n_ips})
    if identifier is not None:
        found = [r["text"] for r in rows]
        tops = (identifier.predict_top(found, 3) if hasattr(identifier, "predict_top")
                else [[x] for x in identifier.predict(found)])
        for row, top in zip(rows, tops):
            row["lang"], row["lang_score"] = identify(top, row["text"], profiles) if top[0][0] != "unknown" else top[0]
    for row, url in zip(rows, urls or [None] * len(rows)):
        reason, lang = language_reason(row["lang"], row["lang_score"], cfg, profiles)
        row["lang"] = lang
        listed = steps.before_rules(row, lang, url)  # always: it writes its columns on every row
        if reason == LANG_NOT_ALLOWED:
            row.update(NO_SIGNALS)
            row["reason"] = reason
            continue
        reason = reason or listed
        profile = profiles.get(lang)
        row.update(compute_signals(row["text"], lang, profile.stopwords, profile.short_line_chars))
        row["reason"] = reason or apply_rules(row, profile.rules) or steps.safety_reason(row, lang)
    return rows


def clean_document(text: str, identifier: Identifier | None, cfg: CleanConfig) -> tuple[str, dict]:
    """Single-document form of `clean_batch`: (cleaned text, everything else)."""
    row = clean_batch([text], identifier, cfg)[0]
    return row.pop("text"), row
