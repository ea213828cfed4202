"""quality_models/annotate/rubric.py: the shipped rubrics by language, a user's own checked for its placeholder
when it is read, the document put in as is (braces in a rubric are no format fields), long documents cut."""
import pytest

from quality_models.annotate.rubric import ANY, PLACEHOLDER, RubricError, choose, for_language, load, shipped, truncate


def test_shipped_rubrics_for_english_and_chinese():
    r = shipped()
    assert set(r) == {"en", "zh"}
    assert r["en"].name == "glassbox-edu-en" and len(r["en"].sha256) == 64
    for lang, rub in r.items():
        assert rub.text.count(PLACEHOLDER) == 1 and "0" in rub.text and "5" in rub.text
    assert "评分" in r["zh"].text and "Score:" in r["en"].text
    assert for_language(r, "zh") is r["zh"] and for_language(r, "fr") is None


def test_a_rubric_of_ones_own(tmp_path):
    mine = tmp_path / "mine.md"
    mine.write_text('Grade this from 0 to 5 and answer {"score": N}.\n\n{document}\n')
    r = choose([str(mine)])
    assert set(r) == {ANY} and for_language(r, "fr").name == "mine"
    assert r[ANY].prompt("A {weird} text.") == 'Grade this from 0 to 5 and answer {"score": N}.\n\nA {weird} text.\n'
    per_lang = choose([f"zh={mine}"])
    assert per_lang["zh"].name == "mine" and per_lang["en"].name == "glassbox-edu-en"


def test_a_rubric_without_the_placeholder_is_refused_clearly(tmp_path):
    bad = tmp_path / "bad.md"
    bad.write_text("Grade the text from 0 to 5: {text}\n")
    with pytest.raises(RubricError, match=r"bad.md: no \{document\} placeholder; write \{document\} where"):
        load(bad)
    with pytest.raises(RubricError, match="no such file"):
        choose([str(tmp_path / "nope.md")])
    good = tmp_path / "good.md"
    good.write_text("{document}")
    with pytest.raises(RubricError, match="a second rubric for en"):
        choose([f"en={good}", f"en={good}"])


def test_truncation_cuts_at_a_break_near_the_limit():
    assert truncate("short", 100) == ("short", False)
    text = "word " * 100
    cut, was = truncate(text, 52)
    assert was and cut == ("word " * 10).strip()
    assert truncate("x" * 100, 10) == ("x" * 10, True)
    zh, was = truncate("一二三四五六七八九。" * 10, 95)
    assert was and zh == "一二三四五六七八九。" * 9
