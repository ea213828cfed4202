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
_COLUMN = re.compile(r"^(quality|spam)_[a-z0-9_]+$")
# What a classifier scores. quality: the probability of reference-like text, its documents' `quality` (min_quality
# drops below it). spam: the probability of spam, a column of its own that never feeds `quality` (max_score drops at
# or above it, reason spam_classifier). One classifier of each axis per language.
QUALITY_AXIS, SPAM_AXIS = "quality", "spam"
AXES = (QUALITY_AXIS, SPAM_AXIS)


def _increasing_pair(p: list) -> str | None:
    return None if len(p) == 2 and p[0] < p[1] else f"expected two increasing fractions such as [0.3, 0.6], got {p!r}"


def _languages(v: list) -> str | None:
    if not v or not all(v):
        return "name at least one language (lid.176 codes such as en, zh), or * for every language no other " \
               "classifier names"
    return None if len(set(v)) == len(v) else f"a language is named twice: {v}"


def _column(v: str) -> str | None:
    return None if not v or _COLUMN.match(v) else \
        f"a column name such as quality_en or spam_zh (quality_ or spam_, then lower-case letters, digits or _), " \
        f"got {v!r}"


# The kinds of classifier the score stage runs (docs/quality.md): Glassbox's own fastText models (__label__hq and
# __label__lq, the project's preprocessing), a fastText model trained elsewhere, a Hugging Face sequence-classification
# or regression model from a local folder.
GLASSBOX, FASTTEXT, HF = "glassbox", "fasttext", "hf"
KINDS = (GLASSBOX, FASTTEXT, HF)
# How a fastText model's text is prepared: Glassbox's own (pipeline/score/quality.py preprocess), DCLM's (lines joined
# with spaces, case kept), or none (only the newlines fastText cannot take become spaces).
PREPROCESS = ("glassbox", "dclm", "none")
HQ = "__label__hq"
FASTTEXT_MAX_CHARS = 20_000   # a fastText model reads this many characters by default (pipeline/score/quality.py)


def strictly_increasing(v: list | None) -> str | None:
    """The check of a list of cut points (score buckets here, mixsearch/split.py's too)."""
    if v is None:
        return None
    if not v:
        return "give at least one cut point"
    bad = next((i for i in range(1, len(v)) if not v[i - 1] < v[i]), None)
    return None if bad is None else f"must increase strictly, got {v!r} ({v[bad - 1]!r} then {v[bad]!r})"


def _bucket_column(v: str) -> str | None:
    return None if not v or _COLUMN.match(v) else \
        f"a column name such as quality_en_bucket (quality_ or spam_, then lower-case letters, digits or _), got {v!r}"


@dataclass
class BucketSpec:
    """A classifier's score cut into named buckets, written as a string column (Nemotron-CC's way: a mixture weights
    buckets instead of dropping everything under one threshold). The cut points are fixed (`edges`) or quantiles of
    the scores of this classifier's documents in the run (`quantiles`, computed as the perplexity buckets' are). A
    score equal to a cut point falls in the lower bucket."""
    column: str = setting("", check=_bucket_column)     # default: <classifier column>_bucket
    edges: list[float] | None = setting(None, check=strictly_increasing)
    quantiles: list[float] | None = setting(None, gt=0, lt=1, check=strictly_increasing)
    names: list[str] | None = setting(None)             # default: 0, 1, ... from the lowest scores up

    def cuts(self) -> list[float] | None:
        return self.edges if self.edges is not None else self.quantiles

    def labels(self) -> list[str]:
        return self.names if self.names is not None else [str(i) for i in range(len(self.cuts() or []) + 1)]

    def check(self) -> str | None:
        if (self.edges is None) == (self.quantiles is None):
            return ("edges: give either edges (fixed cut points, e.g. [0.1, 0.5, 0.9]) or quantiles (fractions of "
                    "this classifier's documents, e.g. [0.2, 0.4, 0.6, 0.8]), not both or neither")
        n = len(self.cuts()) + 1
        if self.names is not None:
            if len(self.names) != n:
                return f"names: {n - 1} cut points make {n} buckets; name {n}, got {len(self.names)}: {self.names}"
            if not all(self.names) or len(set(self.names)) != n:
                return f"names: every bucket needs its own non-empty name, got {self.names}"
        return None


@dataclass
class ClassifierSpec:
    """One classifier: the documents of its languages get its score in `column` and, on the quality axis, in
    `quality`."""
    # kind glassbox: a fastText model with __label__hq and __label__lq (glassbox train-classifier writes one);
    # fasttext: any fastText .bin/.ftz; hf: a local Hugging Face model folder
    model: str = setting()
    languages: list[str] = setting(default_factory=list, check=_languages)
    column: str = setting("", check=_column)       # default: quality_<first language>
    # this model's threshold (default score.min_quality; 0 drops nothing); at most 1 for a probability
    min_quality: float | None = setting(None, ge=0)
    kind: str = setting(GLASSBOX, choices=KINDS)
    positive_label: str = ""          # the label whose probability is the score (fasttext: default __label__hq)
    preprocess: str | None = setting(None, choices=PREPROCESS)   # fastText kinds; default glassbox / dclm
    max_chars: int | None = setting(None, ge=0)   # fastText kinds: characters read (default 20,000; 0: all)
    max_length: int | None = setting(None, ge=1)  # hf: tokens read (default the model's own maximum)
    batch_size: int = setting(32, ge=1)           # hf: documents per forward pass
    clip: list[float] | None = setting(None, check=strictly_increasing)   # hf regression: [low, high], e.g. [0, 5]
    buckets: BucketSpec | None = None
    axis: str = setting(QUALITY_AXIS, choices=AXES)   # spam: a spam score, its own column, never `quality`
    max_score: float | None = setting(None, ge=0)    # spam axis: reject at or above it (default: never)

    def check(self) -> str | None:
        if not self.column and self.languages == [ANY_LANGUAGE]:
            return f"column: name the column of a classifier for every language (*), e.g. {self.axis}_any"
        if self.column and not self.column.startswith(f"{self.axis}_"):
            return (f"column: a {self.axis} classifier's column starts with {self.axis}_ (so that nobody reads a "
                    f"{'spam' if self.axis == SPAM_AXIS else 'quality'} score for the other), got {self.column!r}")
        if self.axis == SPAM_AXIS and self.min_quality is not None:
            return ("min_quality: a spam classifier's score is not a quality; it rejects at or above max_score "
                    "(e.g. max_score: 0.5)")
        if self.axis == QUALITY_AXIS and self.max_score is not None:
            return "max_score: applies to axis: spam; a quality classifier drops below min_quality"
        if self.max_score is not None and self.kind != HF and self.max_score > 1:
            return f"max_score: must be <= 1 (a probability), got {self.max_score!r}"
        if self.kind != HF:
            for key in ("max_length", "clip"):
                if getattr(self, key) is not None:
                    return f"{key}: applies to kind hf (a Hugging Face model), not to a fastText model; remove it"
            if self.min_quality is not None and self.min_quality > 1:
                return f"min_quality: must be <= 1 (a probability), got {self.min_quality!r}"
        if self.kind == GLASSBOX:
            if self.positive_label not in ("", HQ):
                return (f"positive_label: Glassbox's own models score {HQ}; for a model with other labels set "
                        "kind: fasttext")
            if self.preprocess not in (None, "glassbox"):
                return ("preprocess: Glassbox's own models read text prepared their way (glassbox); for a model "
                        "trained elsewhere set kind: fasttext")
        if self.kind == FASTTEXT:
            self.positive_label = self.positive_label or HQ
            self.preprocess = self.preprocess or "dclm"
        if self.kind == HF:
            for key in ("preprocess", "max_chars"):
                if getattr(self, key) is not None:
                    return (f"{key}: applies to fastText models; a Hugging Face model's own tokenizer prepares its "
                            "text, cut at max_length tokens")
            if self.clip is not None and len(self.clip) != 2:
                return f"clip: expected [low, high], e.g. [0, 5], got {self.clip!r}"
        return None

    def reads_chars(self) -> int | None:
        """How many characters of a document a fastText kind reads (None: all)."""
        n = FASTTEXT_MAX_CHARS if self.max_chars is None else self.max_chars
        return n or None

    def text_prep(self) -> str:
        """The preprocessing of a fastText kind, also for a spec built in code without the config check."""
        return self.preprocess or ("glassbox" if self.kind == GLASSBOX else "dclm")

    def label(self) -> str:
        return self.positive_label or (HQ if self.kind != HF else "")


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
            c.column = c.column or f"{c.axis}_{c.languages[0]}"
            if c.column in columns:
                return f"classifiers[{i}].column: {c.column} is written by another classifier too; name another"
            columns.append(c.column)
        for i, c in enumerate(self.classifiers):
            if c.buckets is not None:
                c.buckets.column = c.buckets.column or f"{c.column}_bucket"
                if c.buckets.column in columns:
                    return (f"classifiers[{i}].buckets.column: {c.buckets.column} is another classifier's or "
                            "bucket's column; name another")
                columns.append(c.buckets.column)
        for i, c in enumerate(self.classifiers):
            for lang in c.languages:
                if (c.axis, lang) in claimed:
                    return (f"classifiers[{i}].languages: {lang} is scored by classifiers[{claimed[c.axis, lang]}] "
                            f"already: each language has one {c.axis} classifier"
                            + (", whose score is its documents' quality" if c.axis == QUALITY_AXIS else ""))
                claimed[c.axis, lang] = i
        return None

    def bucketed(self) -> list[tuple[str, str, BucketSpec]]:
        """(score column, bucket column, spec) of every classifier cut into buckets."""
        return [(c.column, c.buckets.column or f"{c.column}_bucket", c.buckets)
                for c in self.classifiers if c.buckets is not None]

    def classifier_for(self, lang: str | None, axis: str = QUALITY_AXIS) -> int | None:
        """The index of the classifier of `axis` that scores a language: the one naming it, else one naming *."""
        fallback = None
        for i, c in enumerate(self.classifiers):
            if c.axis != axis:
                continue
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
