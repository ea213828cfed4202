"""What the score stage can be told: its models and the score rules, checked as a config is read."""
from __future__ import annotations

import re
from dataclasses import dataclass

from glassbox.schema import setting


# --- score ---------------------------------------------------------------------------------------------------

# Relative to where the job runs (the repository root for `make`), like source paths: under
# spark-submit the pipeline is imported from build/pipeline.zip, so __file__ cannot locate them.
DEFAULT_MODELS = "quality_models/default"
BUCKETS = ("head", "middle", "tail")
ANY_LANGUAGE = "*"
_COLUMN = re.compile(r"^quality_[a-z0-9_]+$")


def _increasing_pair(p: list) -> str | None:
    return None if len(p) == 2 and p[0] < p[1] else f"expected two increasing fractions such as [0.3, 0.6], got {p!r}"


def _languages(v: list) -> str | None:
    if not v or not all(v):
        return "name at least one language (lid.176 codes such as en, zh), or * for every language no other " \
               "classifier names"
    return None if len(set(v)) == len(v) else f"a language is named twice: {v}"


def _column(v: str) -> str | None:
    return None if not v or _COLUMN.match(v) else \
        f"a column name such as quality_en (quality_ then lower-case letters, digits or _), got {v!r}"


@dataclass
class ClassifierSpec:
    """One quality classifier: the documents of its languages get its score in `column` and in `quality`."""
    model: str = setting(why="a fastText model with the labels __label__hq and __label__lq "
                             "(glassbox train-classifier writes one)")
    languages: list[str] = setting(default_factory=list, check=_languages)
    column: str = setting("", check=_column)       # default: quality_<first language>
    min_quality: float | None = setting(None, ge=0, le=1)   # this model's threshold; default score.min_quality

    def check(self) -> str | None:
        if not self.column and self.languages == [ANY_LANGUAGE]:
            return "column: name the column of a classifier for every language (*), e.g. quality_any"
        return None


def default_classifiers() -> list[ClassifierSpec]:
    return [ClassifierSpec(f"{DEFAULT_MODELS}/quality_en.ftz", ["en"], "quality_en"),
            ClassifierSpec(f"{DEFAULT_MODELS}/quality_zh.ftz", ["zh"], "quality_zh")]


@dataclass
class ScoreConfig:
    classifiers: list[ClassifierSpec] = setting(default_factory=default_classifiers)
    kenlm_dir: str = DEFAULT_MODELS                  # holds <lang>.klm and <lang>.sp.model per language
    bucket_percentiles: list[float] = setting(default_factory=lambda: [0.3, 0.6], gt=0, lt=1,
                                              check=_increasing_pair)
    min_quality: float = setting(0.0, ge=0, le=1)    # reject when a document's quality is below this (0: never)
    drop_buckets: list[str] = setting(default_factory=list, choices=BUCKETS)  # e.g. [tail]
    # The control of a filter's ablation: drop this fraction of the documents at random (a hash of the id and
    # random_seed, so the same documents every run), whatever their scores.
    random_drop: float = setting(0.0, ge=0, lt=1)
    random_seed: int = setting(0, ge=0)

    def check(self) -> str | None:
        columns, claimed = [], {}
        for i, c in enumerate(self.classifiers):
            c.column = c.column or f"quality_{c.languages[0]}"
            if c.column in columns:
                return f"classifiers[{i}].column: {c.column} is written by another classifier too; name another"
            columns.append(c.column)
            for lang in c.languages:
                if lang in claimed:
                    return (f"classifiers[{i}].languages: {lang} is scored by classifiers[{claimed[lang]}] already: "
                            "each language has one classifier, whose score is its documents' quality")
                claimed[lang] = i
        return None

    def classifier_for(self, lang: str | None) -> int | None:
        """The index of the classifier that scores a language: the one naming it, else one naming *."""
        fallback = None
        for i, c in enumerate(self.classifiers):
            if lang in c.languages:
                return i
            if ANY_LANGUAGE in c.languages:
                fallback = i
        return fallback

    def threshold(self, i: int | None) -> float:
        """The minimum quality for documents scored by classifier `i` (None: unscored)."""
        if i is None:
            return 0.0
        own = self.classifiers[i].min_quality
        return self.min_quality if own is None else own
