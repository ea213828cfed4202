"""What the clean stage can be told: its rules, languages and per-language overrides, checked by the
one config checker (glassbox/schema.py) as a config is read. Cross-field rules are the `check`
method of the dataclass; pipeline/config.py calls it and adds what needs the file system."""
from __future__ import annotations

from dataclasses import dataclass

from glassbox.schema import setting
from pipeline.clean.list_settings import CHINESE_SCRIPT_MODES, SafetyConfig, SpamSignalsConfig, UrlFilterConfig


# --- clean ---------------------------------------------------------------------------------------------------

OPS = ("<", "<=", ">", ">=")


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


def rules_problem(rules: list) -> str | None:
    """What is wrong with the first bad rule (unknown signal, bad op, non-numeric value, ...), or None."""
    import math

    from pipeline.clean.heuristics import SIGNAL_NAMES        # the signal names only: plain Python

    for i, r in enumerate(rules):
        where = f"rules[{i}] {r!r}"
        if not isinstance(r, dict):
            return f"{where}: each rule must be a mapping with signal, op, value, reason"
        missing, extra = {"signal", "op", "value", "reason"} - set(r), set(r) - {"signal", "op", "value", "reason"}
        if missing or extra:
            return f"{where}: missing keys {sorted(missing)}, unknown keys {sorted(extra)}"
        if r["signal"] not in SIGNAL_NAMES:
            return f"{where}: unknown signal {r['signal']!r}; known signals: {', '.join(SIGNAL_NAMES)}"
        if r["op"] not in OPS:
            return f"{where}: op must be one of {list(OPS)}, got {r['op']!r}"
        v = r["value"]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return f"{where}: value must be a finite number, got {v!r}"
        if not isinstance(r["reason"], str) or not r["reason"]:
            return f"{where}: reason must be a non-empty string"
    return None


def _language_codes(codes: list) -> str | None:
    if not codes:
        return "expected a non-empty list of language codes such as [en] (or null for every language)"
    return None if all(codes) else f"empty language code in {codes!r}"


PER_LANGUAGE_KEYS = ("stopwords", "min_lang_score", "short_line_chars", "rules")


def _calibration_problem(value: str) -> str | None:
    if value in ("", "builtin", "none") or value.endswith(".json"):
        return None
    return (f"expected builtin (the table shipped with Glassbox), none (the published English thresholds "
            f"everywhere) or the path of a FILE.json written by `python -m pipeline.clean.calibrate`, got {value!r}")


def _confusable_problem(groups: list) -> str | None:
    for g in groups:
        if not isinstance(g, list) or len(g) < 2 or not all(isinstance(x, str) and x for x in g):
            return f"each group must be a list of two or more language codes such as [bs, hr, sr], got {g!r}"
    return None


def per_language_problem(per_language: dict, rules: list[dict]) -> str | None:
    """What is wrong with `clean.per_language` (checked against the config's own rules), or None."""
    import math

    reasons = {r["reason"] for r in rules if isinstance(r, dict) and "reason" in r}
    for lang, over in per_language.items():
        where = f"per_language.{lang}"
        if not isinstance(over, dict):
            return f"{where}: expected a mapping with any of {', '.join(PER_LANGUAGE_KEYS)}"
        unknown = sorted(set(over) - set(PER_LANGUAGE_KEYS))
        if unknown:
            return f"{where}.{unknown[0]}: unknown key. Known keys: {', '.join(PER_LANGUAGE_KEYS)}"
        if "stopwords" in over and (not isinstance(over["stopwords"], list)
                                    or not all(isinstance(w, str) and w for w in over["stopwords"])):
            return f"{where}.stopwords: expected a list of words, got {over['stopwords']!r}"
        if "min_lang_score" in over:
            v = over["min_lang_score"]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
                return f"{where}.min_lang_score: expected a number in [0, 1], got {v!r}"
        if "short_line_chars" in over:
            v = over["short_line_chars"]
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                return f"{where}.short_line_chars: expected a whole number of characters >= 1, got {v!r}"
        for reason, v in (over.get("rules") or {}).items():
            if reason not in reasons:
                return (f"{where}.rules.{reason}: no rule has this reason; known reasons: "
                        f"{', '.join(sorted(reasons))}")
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                return f"{where}.rules.{reason}: value must be a finite number, got {v!r}"
    return None


@dataclass
class CleanConfig:
    """Clean-stage settings. `languages=None` admits every language."""
    languages: list[str] | None = setting(default_factory=lambda: ["en"], check=_language_codes)
    # lid.176 probability of the identified language (summed over a group it confuses, see `confusable`);
    # a calibrated language may need less (pipeline/clean/languages.py), never more
    min_lang_score: float = setting(0.65, ge=0, le=1)
    mask_pii: bool = True
    remove_boilerplate_lines: bool = True
    # fold: full-width ASCII letters, digits and symbols (ＡＢＣ１２３, U+FF01-FF5E) and the ideographic space
    # become ASCII in the stored text; Chinese punctuation (，。！？、；：「」『』《》（）) stays. keep: as written
    fullwidth: str = setting("keep", choices=("keep", "fold"))
    rules: list[dict] = setting(default_factory=lambda: [dict(r) for r in DEFAULT_RULES], check=rules_problem)
    # per-language stop words and thresholds: builtin, none, or a FILE.json from `python -m pipeline.clean.calibrate`
    calibration: str = setting("builtin", check=_calibration_problem)
    # overrides per language: {zh: {stopwords: [...], min_lang_score: 0.3, short_line_chars: 10,
    # rules: {gopher_short_words: 1.0}}}
    per_language: dict = setting(default_factory=dict)
    # with every language admitted (languages: null), a document whose language the identifier cannot
    # tell (below its label's threshold; lid.176 knows no Zulu, Xhosa, Shona, Sotho, ...) is kept as
    # `und` and judged by the rules without stop words; false: rejected as lang_low_score
    keep_undetermined: bool = True
    # languages the identifier confuses with each other (null: the calibration table's groups)
    confusable: list[list[str]] | None = setting(None, check=_confusable_problem)
    # content safety by keyword lists, URL blocklists, 繁/简 (pipeline/clean/list_settings.py; docs/chinese.md)
    safety: SafetyConfig = setting(default_factory=SafetyConfig)
    urls: UrlFilterConfig = setting(default_factory=UrlFilterConfig)
    # page-structure spam signals (pipeline/clean/spam_signals.py, docs/spam.md): off unless enabled or a rule rejects
    spam: SpamSignalsConfig = setting(default_factory=SpamSignalsConfig)
    # Chinese documents detected as traditional: keep, convert with OpenCC t2s, or reject (zh_traditional)
    chinese_script: str = setting("keep", choices=CHINESE_SCRIPT_MODES)

    def check(self) -> str | None:
        return per_language_problem(self.per_language, self.rules)
