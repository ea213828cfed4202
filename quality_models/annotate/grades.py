"""A model's reply to a rubric, read as a grade in [0, 5]: plain Python, no server.

Models answer in many shapes ("Score: 4", "**Educational score: 3**", "4/5", "评分：4", "得分: 3 分", a bare "2",
JSON {"score": 4}); they also reason aloud before concluding, so every explicit grade statement is found and the
LAST one wins. A grade stated after its label ("Score: 4", "评分：4", "Grade 2") outranks a bare number on a scale
("4/5", "4 分") anywhere in the reply: in "Score: 4 (about 1/3 of the page is ads)", "Score: 4. Dated 3/4/2019." or
"Score: 3\nThe author scored 95 分" the labelled 4 and 3 are the grades; bare fractions and 分 count only when no
label states one. A number that is not stated as a grade (a year, a count in the reasoning, a date) is never read
as one.
A stated grade outside [0, 5] (or on another scale, "7/10") is `out_of_range`, no statement at all `no_grade`;
both keep the grade null, and the caller keeps the raw reply.
"""
from __future__ import annotations

import re

GRADED, NO_GRADE, OUT_OF_RANGE, ERROR = "graded", "no_grade", "out_of_range", "error"
STATUSES = (GRADED, NO_GRADE, OUT_OF_RANGE, ERROR)
LOW, HIGH, SCALE = 0.0, 5.0, 5.0

_ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
              "九": 9, "十": 10}
_EN_WORDS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
             "nine": 9, "ten": 10}
_NUM = r"[-−]?\d+(?:\.\d+)?|[零〇一二两三四五六七八九十]|zero|one|two|three|four|five|six|seven|eight|nine|ten"
_DENOM = r"(?:\s*(?:/|out\s+of|of)\s*(?P<den>\d+))?"
_MARK = r"[\s*_`#>\"'「」【】\[\]]*"       # markdown emphasis, quotes and brackets around labels and numbers
_LABEL = (r"(?:final\s+|overall\s+|total\s+)?(?:educational\s+(?:value|score|grade|rating)|score|grade|rating|"
          r"points)|final\s+answer|评分|得分|分数|打分|评级|等级|分值|总分")
_SEP = r"\s*(?:[:：=]|\bis\b|为|是)"
# a label, a separator, the number: "Score: 4", "**Grade**: 3/5", "评分：4分", "{"score": 4}"
_STATED = re.compile(rf"(?:{_LABEL}){_MARK}{_SEP}{_MARK}(?P<num>{_NUM}){_DENOM}", re.I)
# a label and the number with only space between, then the end of a clause: "Grade 2", "Score 4." (not
# "Grade 3 students")
_BARE_LABEL = re.compile(rf"\b(?:score|grade|rating){_MARK}\s(?P<num>{_NUM}){_DENOM}{_MARK}(?=$|[.。!！,，;；)）\n])",
                         re.I)
# "4/5", "3 out of 5" (not a date: "3/4/2019")
_FRACTION = re.compile(rf"(?<![\d.])(?<!\d/)(?P<num>{_NUM})\s*(?:/|out\s+of)\s*(?P<den>\d+)(?!\d|\.\d|/\d)", re.I)
# "4 分", "得 3 分", "给4分" (a number and the scale's unit, not "满分5分"; digits only: "十分重要" is "very important")
_ZH_POINTS = re.compile(r"(?<!满分)(?<!满分\s)(?<!满分为)(?<!满分是)(?<![\d.])(?P<num>\d+(?:\.\d+)?)\s*分"
                        r"(?![钟之数享别析类开布])")
# the whole reply is one number, perhaps marked up: "2", "**3**", "4."
_ALONE = re.compile(rf"^{_MARK}(?P<num>{_NUM}){_DENOM}{_MARK}[.。]?{_MARK}$", re.I)
_LABELLED = (_STATED, _BARE_LABEL)        # a label states the grade: these outrank ...
_UNLABELLED = (_FRACTION, _ZH_POINTS)     # ... a bare number on a scale, read only when no label states one


def _value(token: str) -> float:
    token = token.lower().replace("−", "-")
    if token in _ZH_DIGITS:
        return float(_ZH_DIGITS[token])
    if token in _EN_WORDS:
        return float(_EN_WORDS[token])
    return float(token)


def parse_grade(reply) -> tuple[float | None, str]:
    """(grade, status) for one reply: (4.0, "graded"), (None, "out_of_range") or (None, "no_grade")."""
    if not isinstance(reply, str) or not reply.strip():
        return None, NO_GRADE
    text = reply.strip()
    found = []                                    # (end offset, number, denominator) of every grade statement
    m = _ALONE.match(text)
    if m:
        found.append((m.end(), m.group("num"), m.group("den")))
    else:
        for patterns in (_LABELLED, _UNLABELLED):
            for rx in patterns:
                for m in rx.finditer(text):
                    found.append((m.end("num"), m.group("num"), m.groupdict().get("den")))
            if found:             # a labelled statement: a later "1/3", "3/4/2019" or "95 分" is not the grade
                break
    if not found:
        return None, NO_GRADE
    _, num, den = max(found, key=lambda f: f[0])  # the last statement in the reply
    value = _value(num)
    if den is not None and float(den) != SCALE:
        return None, OUT_OF_RANGE
    if not LOW <= value <= HIGH:
        return None, OUT_OF_RANGE
    return (int(value) if value.is_integer() else value), GRADED
