"""quality_models/annotate/grades.py: the shapes a grading model answers in, read as a grade; the last explicit
statement wins, and a labelled statement outranks a bare number on a scale; numbers that are not stated as grades,
and grades off the 0-5 scale, are never read as one."""
import pytest

from quality_models.annotate.grades import NO_GRADE, OUT_OF_RANGE, parse_grade

GRADES = [
    ("Score: 4", 4), ("score:4", 4), ("SCORE = 2", 2), ("**Educational score: 3**", 3), ("**Score:** 5", 5),
    ("Educational value: 4", 4), ("Grade: 1", 1), ("Grade 2", 2), ("The final score is 3.", 3), ("Rating: 0", 0),
    ("4/5", 4), ("I would give it 3 out of 5.", 3), ("Score: 4/5", 4), ("Total points: 3", 3), ("2", 2),
    ("**3**", 3), ("5.", 5), ('{"score": 4}', 4), ('```json\n{"score": 1, "reason": "ads"}\n```', 1),
    ("Score: 3.5", 3.5), ("Final answer: 2", 2), ("Score: four", 4), ("### Score\n\nScore: 0", 0),
    ("评分：4", 4), ("得分: 3 分", 3), ("评分：四分", 4), ("最终评分为 5", 5), ("分数：2", 2), ("满分5分，我给3分", 3),
    ("这篇文章可以得 4 分。", 4), ("打分：1", 1), ("评分: **2**", 2),
    # reasoning before the conclusion: the last statement wins
    ("Score: 2 at first sight, but after reading the proofs, Score: 4", 4),
    ("It is not a 5/5 text; 3/5 fits better.", 3),
    ("The text covers 1990 census data for 3 counties. Score: 1", 1),
    ("理由：这是一篇1998年的新闻，共3段，没有讲解。\n评分：1", 1),
]
# a stated grade, then a number that is not one: a share, a date, a score in the text (each read as out_of_range
# when the last match of any pattern won)
STATED_THEN_A_NUMBER = [
    ("Educational score: 4 (about 1/3 of the page is ads)", 4), ("Score: 4. The page is dated 3/4/2019.", 4),
    ("评分：4\n理由：约1/2是广告", 4), ("Score: 3\nThe author scored 95 分 in the exam.", 3),
    ("Score: 2 (a quarter, 1/4, is a table of 7 out of 10 prices)", 2), ("**Grade**: 5 — 12/2019 edition", 5),
    ("得分：3\n说明：页面中有 60 分的广告，另有 2/7 为导航", 3),
    # the last labelled statement still wins over an earlier one, whatever bare numbers follow
    ("Score: 1 at first, then Score: 3. About 1/3 is navigation.", 3),
]
NOT_GRADES = [
    ("", NO_GRADE), ("   ", NO_GRADE), (None, NO_GRADE), ("I cannot grade this document.", NO_GRADE),
    ("The text mentions the year 1990 and 3 cats.", NO_GRADE), ("Grade 3 students learn fractions here.", NO_GRADE),
    ("Score: N/A", NO_GRADE), ("Score:", NO_GRADE), ("这篇文章十分重要。", NO_GRADE), ("读完需要5分钟", NO_GRADE),
    ("三分之一的内容是广告", NO_GRADE), ("Step 1: read the text. Step 2: decide.", NO_GRADE),
    ("Score: 7", OUT_OF_RANGE), ("Score: -1", OUT_OF_RANGE), ("7/10", OUT_OF_RANGE), ("Score: 8/10", OUT_OF_RANGE),
    ("12", OUT_OF_RANGE), ('{"score": 11}', OUT_OF_RANGE), ("评分：8分", OUT_OF_RANGE), ("Score: 5.5", OUT_OF_RANGE),
    ("Score: 3, no wait, Score: 6", OUT_OF_RANGE), (["Score: 4"], NO_GRADE),
    ("The page is dated 3/4/2019 and lists 3 cats.", NO_GRADE),        # a date is no fraction
    ("Score: 9. About 1/5 of the page is ads.", OUT_OF_RANGE),          # nor is a share after a stated grade
]


@pytest.mark.parametrize("reply, grade", GRADES)
def test_a_stated_grade_is_read(reply, grade):
    assert parse_grade(reply) == (grade, "graded")


@pytest.mark.parametrize("reply, status", NOT_GRADES)
def test_no_grade_or_out_of_range_is_null_with_its_status(reply, status):
    assert parse_grade(reply) == (None, status)


@pytest.mark.parametrize("reply, grade", STATED_THEN_A_NUMBER)
def test_a_stated_grade_outranks_a_later_number(reply, grade):
    assert parse_grade(reply) == (grade, "graded")


def test_enough_forms_are_covered():
    assert len(GRADES) >= 36 and len(STATED_THEN_A_NUMBER) >= 8 and len(NOT_GRADES) >= 24
    assert sum(any("\u4e00" <= c <= "\u9fff" for c in r) for r, _ in GRADES) >= 8    # Chinese replies
