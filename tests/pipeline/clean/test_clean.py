import re

import pytest

from conftest import SHARED_DATA, SHARED_SKIP
from glassbox.schema import ConfigError, build, validate
from pipeline.clean.stage import apply_rules, clean_batch, clean_document
from pipeline.clean.settings import DEFAULT_RULES, CleanConfig, rules_problem
from pipeline.clean.safety import SIGNALS as SAFETY_SIGNALS
from pipeline.clean.spam_signals import SIGNALS as SPAM_SIGNALS
from pipeline.clean.heuristics import SIGNAL_NAMES, compute_signals
from pipeline.clean.langid import default_model_path, get_identifier
from pipeline.config import parse_config

DATA = SHARED_DATA


class FixedLang:
    """Stands in for the fastText model where a test is about rules, not language ID."""
    def __init__(self, lang="en", score=0.99):
        self.lang, self.score = lang, score

    def predict(self, texts):
        return [(self.lang, self.score) for _ in texts]


def _wiki_prose(n_paras=3) -> str:
    path = DATA / "text" / "reference" / "wikitext-2-valid.txt"
    if not path.is_file():
        pytest.skip(f"{SHARED_SKIP}: {path}")
    paras = [p.strip() for p in path.read_text(encoding="utf-8").splitlines()
             if len(p.strip()) > 300 and not p.strip().startswith("=")][:n_paras]
    text = "\n\n".join(paras)
    # undo WikiText tokenisation: " @-@ " -> "-", " , " -> ", " ...
    text = re.sub(r" @(.)@ ", r"\1", text)
    text = re.sub(r" ([,.;:)'])", r"\1", text).replace("( ", "(")
    return text.replace("<unk>", "unk")


def test_default_rules_are_valid():
    assert rules_problem(DEFAULT_RULES) is None
    validate(CleanConfig(), "clean")
    assert {r["signal"] for r in DEFAULT_RULES} <= set(SIGNAL_NAMES)
    assert "c4_has_curly_bracket" not in {r["signal"] for r in DEFAULT_RULES}  # would drop all code


@pytest.mark.parametrize("bad, msg", [
    ({"signal": "gopher_nope", "op": "<", "value": 1, "reason": "x"}, "unknown signal 'gopher_nope'"),
    ({"signal": "n_chars", "op": "==", "value": 1, "reason": "x"}, "op must be one of"),
    ({"signal": "n_chars", "op": "<", "value": "5", "reason": "x"}, "value must be a finite number"),
    ({"signal": "n_chars", "op": "<", "value": True, "reason": "x"}, "value must be a finite number"),
    ({"signal": "n_chars", "op": "<", "value": float("nan"), "reason": "x"}, "finite number"),
    ({"signal": "n_chars", "op": "<", "value": 1}, "missing keys \\['reason'\\]"),
    ({"signal": "n_chars", "op": "<", "value": 1, "reason": ""}, "reason must be"),
    ("n_chars < 5", "must be a mapping"),
])
def test_bad_rule_is_named_with_its_index(bad, msg):
    problem = rules_problem([dict(DEFAULT_RULES[0]), bad])
    assert re.search(msg, problem) and problem.startswith("rules[1]"), problem
    with pytest.raises(ConfigError, match=r"^clean\.rules(: rules)?\[1\]"):
        build(CleanConfig, {"rules": [dict(DEFAULT_RULES[0]), bad]}, "clean")


def test_config_from_dict():
    cfg = build(CleanConfig, {"languages": ["en", "de"], "min_lang_score": 0.5}, "clean")
    assert cfg.languages == ["en", "de"] and cfg.rules == DEFAULT_RULES
    with pytest.raises(ConfigError, match="clean.min_lang_scor: unknown key .did you mean min_lang_score"):
        build(CleanConfig, {"min_lang_scor": 0.5}, "clean")
    for bad in (2.0, -0.5, float("nan")):       # a run with such a score would keep nothing, or everything
        with pytest.raises(ConfigError, match="clean.min_lang_score: must"):
            build(CleanConfig, {"min_lang_score": bad}, "clean")
    with pytest.raises(ConfigError, match="clean.languages: expected a list"):
        build(CleanConfig, {"languages": "en"}, "clean")
    cfg.rules.append({"signal": "n_chars", "op": "<", "value": 1, "reason": "x"})
    assert len(CleanConfig().rules) == len(DEFAULT_RULES)  # defaults are never shared/mutated


def test_apply_rules_first_match_in_order():
    rules = [{"signal": "n_chars", "op": ">", "value": 5, "reason": "long"},
             {"signal": "n_lines", "op": ">=", "value": 1, "reason": "has_lines"}]
    assert apply_rules({"n_chars": 10, "n_lines": 3}, rules) == "long"
    assert apply_rules({"n_chars": 1, "n_lines": 3}, rules) == "has_lines"
    assert apply_rules({"n_chars": 1, "n_lines": 0}, rules) is None


def test_wikipedia_prose_passes_defaults():
    text = _wiki_prose()
    s = compute_signals(text)
    assert apply_rules(s, DEFAULT_RULES) is None, {r["reason"]: s[r["signal"]] for r in DEFAULT_RULES}
    row = clean_batch([text], FixedLang(), CleanConfig())[0]
    assert row["reason"] is None and row["lines_removed"] == 0


def test_wikipedia_prose_passes_with_real_langid():
    if not default_model_path().is_file():
        pytest.skip("lid.176.ftz missing: run `make setup`")
    row = clean_batch([_wiki_prose()], get_identifier(), CleanConfig())[0]
    assert row["lang"] == "en" and row["lang_score"] > 0.65
    assert row["reason"] is None


def test_spam_page_rejected_for_repetition():
    page = "Home\nAbout us\n" + "Click here to buy cheap watches at the best price\n" * 20 + "© 2024 Watches"
    text, info = clean_document(page, FixedLang(), CleanConfig())
    assert info["lines_removed"] == 2          # "Home" and the copyright line
    assert info["reason"] == "gopher_dup_lines"


@pytest.mark.parametrize("text, reason", [
    ("Buy now!", "gopher_too_few_words"),
    ("", "gopher_too_few_words"),
    ("\n".join(f"- item number {i} of the list with some words" for i in range(30)), "gopher_bullet_lines"),
    (" ".join(f"keyword{i}" for i in range(80)) + ".", "gopher_few_stopwords"),
    ("Price list:\n" + "\n".join(f"{i}.99 {i * 3} {i}/{i + 1}" for i in range(60)), "gopher_few_alpha_words"),
])
def test_reasons(text, reason):
    assert clean_batch([text], FixedLang(), CleanConfig())[0]["reason"] == reason


def test_lorem_ipsum_rejected():
    text = _wiki_prose(2) + "\n\nLorem ipsum dolor sit amet, consectetur adipiscing elit."
    assert clean_batch([text], FixedLang(), CleanConfig())[0]["reason"] == "c4_lorem_ipsum"


def test_language_rules_come_first():
    text = _wiki_prose(2) + "\n\n" + "spam spam spam spam " * 200
    cfg = CleanConfig()
    assert clean_batch([text], FixedLang("fr", 0.99), cfg)[0]["reason"] == "lang_not_allowed"
    assert clean_batch([text], FixedLang("en", 0.30), cfg)[0]["reason"] == "lang_low_score"
    assert clean_batch([text], FixedLang("en", 0.99), cfg)[0]["reason"].startswith("gopher_")
    # a language the config does not admit never meets its rules: no heuristic signals; a low score keeps them
    outside = clean_batch([text], FixedLang("fr", 0.99), cfg)[0]
    low = clean_batch([text], FixedLang("en", 0.30), cfg)[0]
    assert all(outside[name] is None for name in SIGNAL_NAMES) and outside["url_block"] is None
    assert low["gopher_n_words"] > 200 and low["gopher_dup_5gram_char_frac"] > 0.5
    good = _wiki_prose()
    assert clean_batch([good], FixedLang("fr", 0.99), CleanConfig(languages=["fr"]))[0]["reason"] is None
    assert clean_batch([good], FixedLang("xx", 0.99), CleanConfig(languages=None))[0]["reason"] is None
    # no identifier: no language columns and no language rule
    row = clean_batch([good], None, cfg)[0]
    assert row["lang"] is None and row["reason"] is None


def test_batch_row_shape_and_pii():
    good = _wiki_prose()
    texts = [good + "\n\nWrite to editor@example.org or visit 203.0.113.7.", "", good]
    rows = clean_batch(texts, FixedLang(), CleanConfig())
    assert len(rows) == 3
    expected = {"text", "lang", "lang_score", "lines_removed", "pii_emails", "pii_ips", "reason",
                "url_block", "zh_script", *SIGNAL_NAMES, *SAFETY_SIGNALS, *SPAM_SIGNALS}
    assert all(set(r) == expected for r in rows)
    assert rows[0]["pii_emails"] == 1 and rows[0]["pii_ips"] == 1
    assert "<EMAIL>" in rows[0]["text"] and "<IP>" in rows[0]["text"]
    assert rows[1]["text"] == "" and rows[1]["reason"] == "gopher_too_few_words"
    raw = clean_batch(texts[:1], FixedLang(), CleanConfig(mask_pii=False))[0]
    assert "editor@example.org" in raw["text"] and raw["pii_emails"] == 0


def test_empty_text_with_real_model():
    if not default_model_path().is_file():
        pytest.skip("lid.176.ftz missing: run `make setup`")
    row = clean_batch([""], get_identifier(), CleanConfig())[0]
    assert (row["lang"], row["lang_score"], row["reason"]) == ("unknown", 0.0, "lang_not_allowed")


def test_boilerplate_switch():
    text = "Skip to content\n\n" + _wiki_prose()
    assert clean_batch([text], FixedLang(), CleanConfig())[0]["lines_removed"] == 1
    row = clean_batch([text], FixedLang(), CleanConfig(remove_boilerplate_lines=False))[0]
    assert row["lines_removed"] == 0 and row["text"].startswith("Skip to content")


def test_fullwidth_fold_reaches_the_stored_text():
    """clean.fullwidth: fold rewrites full-width ASCII in the text the stage writes; keep leaves it."""
    abstract = ("结果 治疗组治疗后降压疗效、中医证候疗效、ＥＴ－１、ＮＯ、ｖＷＦ均有明显改善，与对照组比较差异有统计学意义"
                "（Ｐ＜０．０５）。结论 在西医常规治疗基础上加用补肾活血汤治疗有较好的疗效。")  # a CSL abstract, its marks widened
    folded = clean_batch([abstract], FixedLang("zh"), CleanConfig(languages=["zh"], fullwidth="fold"))[0]["text"]
    assert "ET-1、NO、vWF" in folded and "（P<0.05）。" in folded
    kept = clean_batch([abstract], FixedLang("zh"), CleanConfig(languages=["zh"]))[0]["text"]
    assert kept == abstract
    with pytest.raises(ConfigError, match="clean.fullwidth"):
        parse_config({"sources": {"x": {"format": "text", "paths": ["x.txt"]}}, "clean": {"fullwidth": "nfkc"}})
