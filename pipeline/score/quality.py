"""fastText quality classifiers: the probability that a document reads like the reference prose a model was
trained on, one model per language (or group of languages), as `score.classifiers` names them.

Models are trained by `glassbox train-classifier` (quality_models/train.py); the defaults for English and Chinese
live in quality_models/default/ with their cards. Training and scoring both pass text through `preprocess`, so
the two sides can never see different tokens, and `preprocess` reaches the text through the word layer
(pipeline/clean/words.py: Chinese, Japanese and Thai segmented into words), so a Chinese paragraph is words,
not one unknown token per clause.

A fastText model trained elsewhere (`kind: fasttext`, e.g. DCLM's) is scored the same way with its own
`positive_label` and its own text preparation (`preprocess: dclm | none | glassbox`, PREPARE below); a Hugging Face
model (`kind: hf`) lives in pipeline/score/hf.py, and pipeline/score/classifiers.py picks and checks the kind.

Spark executors call `get_classifier(path)` per batch: the model loads once per process and is cached.
fastText 0.9.3 under numpy 2 raises on `model.predict("one string")`; we always predict on lists.
"""
from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from pipeline.clean.words import segment_lines
from pipeline.models import ModelError, ProcessCache, fasttext_labels, load_fasttext

HQ_LABEL = "__label__hq"
LQ_LABEL = "__label__lq"
LABELS = (HQ_LABEL, LQ_LABEL)
# Positives of several kinds may each be a class of their own (`class=` in train-classifier): `__label__hq_<kind>`.
# The score is then 1 - P(LQ_LABEL): prose and instruction answers need not share one region of the vector space
# to stand apart from the web (docs/quality.md, "Two positive classes").
HQ_CLASS_PREFIX = HQ_LABEL + "_"
FIX = "train one with `glassbox train-classifier` (docs/quality.md) or run `make quality-models`"
# fastText averages word vectors, so a long document's first 20k characters score it as well as all of it
# would, and the cost stays bounded on giant pages.
MAX_CHARS = 20_000
_CACHE = ProcessCache()   # keyed by (path, mtime)


# A line break is a token of its own: a page of short lines (menus, lists, captions) and a paragraph of prose
# differ in it, and fastText reads one example per line, so the break itself cannot stay.
NEWLINE = "<nl>"


def preprocess(text: str, lang: str | None = None) -> str:
    """The one text normalization for training and scoring: NFKC (full-width letters, digits and marks
    fold to their ordinary forms), then per line the words and punctuation marks of the word layer,
    lower-cased, one space between them and NEWLINE between lines (blank lines dropped). `lang` picks the
    segmenter where a script serves several languages (kanji as Japanese for ja)."""
    return f" {NEWLINE} ".join(" ".join(line) for line in segment_lines(unicodedata.normalize("NFKC", text), lang))


def _dclm(text: str, lang: str | None = None) -> str:
    """DCLM's own preparation (mlfoundations/dclm, baselines/mappers/enrichers/
    quality_prediction_enrichers_calc_fasttext.py, classify_fasttext_hq_prob): the stripped text's lines joined
    with one space; case, punctuation and spacing kept."""
    return " ".join(text.strip().splitlines())


def _as_is(text: str, lang: str | None = None) -> str:
    """The text as it is, but for the newlines fastText refuses (it predicts one line at a time)."""
    return text.replace("\n", " ")


# preprocess setting -> how a fastText model's text is prepared
PREPARE = {"glassbox": preprocess, "dclm": _dclm, "none": _as_is}


def own_labels(labels: list[str]) -> bool:
    """Glassbox's own quality labels: LQ_LABEL and one or more positive classes (HQ_LABEL, `__label__hq_<kind>`)."""
    positives = [lab for lab in labels if lab != LQ_LABEL]
    return LQ_LABEL in labels and bool(positives) and all(
        lab == HQ_LABEL or (lab.startswith(HQ_CLASS_PREFIX) and len(lab) > len(HQ_CLASS_PREFIX)) for lab in positives)


def check_labels(path: str | os.PathLike) -> None:
    """ModelError unless the file is a fastText model with the quality labels (read from the file, without
    fastText: a config check imports nothing heavy)."""
    labels = fasttext_labels(path)
    if not own_labels(labels):
        raise ModelError(f"fastText model at {path} has the labels {sorted(labels)}, not {LQ_LABEL} and "
                         f"{HQ_LABEL} (or {HQ_CLASS_PREFIX}<kind> classes): it is not a quality classifier ({FIX})")


class QualityClassifier:
    """`predict_proba(texts, langs) -> [P(positive label) or None]`; the model loads on first use. By default
    Glassbox's own model (`__label__hq`/`__label__lq`, `preprocess`; with positive classes 1 - P(`__label__lq`));
    `positive_label` and `prepare` (a key of PREPARE) serve a fastText model trained elsewhere."""

    def __init__(self, model_path: str | os.PathLike, max_chars: int | None = MAX_CHARS,
                 positive_label: str | None = None, prepare: str = "glassbox"):
        self.model_path = Path(model_path)
        self.max_chars = max_chars
        self.own = positive_label is None           # Glassbox's own: the quality labels (own_labels)
        self.positive_label = HQ_LABEL if positive_label is None else positive_label
        self.prepare = PREPARE[prepare]
        self._model = None
        self._k = 2
        self._complement = False   # score = 1 - P(positive_label): our own model with several positive classes

    def load(self):
        if self._model is None:
            model = load_fasttext(self.model_path, "fastText quality model", FIX)
            if self.own:
                check_labels(self.model_path)
            elif self.positive_label not in model.get_labels():
                raise ModelError(f"fastText model at {self.model_path} has no label {self.positive_label!r} "
                                 f"(its labels: {model.get_labels()})")
            # another model may have more labels, and so may our own with positive classes: ask for them all
            self._k = 2 if self.own and len(model.get_labels()) == 2 else -1
            if self.own and self._k == -1:
                self.positive_label, self._complement = LQ_LABEL, True
            self._model = model
        return self._model

    def predict_proba(self, texts: list[str | None], langs: list[str | None] | None = None) -> list[float | None]:
        """Probability of the positive label per text; None for missing, empty or whitespace-only text."""
        langs = langs if langs is not None else [None] * len(texts)
        prepared: list[str] = []
        where: list[int] = []
        prepare, cut = self.prepare, self.max_chars
        for i, (t, lang) in enumerate(zip(texts, langs)):
            if t:
                p = prepare(t[:cut] if cut else t, lang)
                if p and not p.isspace():
                    prepared.append(p)
                    where.append(i)
        out: list[float | None] = [None] * len(texts)
        if not prepared:
            return out
        model = self.load()
        positive, complement = self.positive_label, self._complement
        labels, probs = model.predict(prepared, k=self._k)
        for i, labs, ps in zip(where, labels, probs):
            score = 0.0  # the label absent from the answer: no probability mass left for it
            for lab, p in zip(labs, ps):
                if lab == positive:
                    score = float(p)
                    break
            out[i] = min(max(1.0 - score if complement else score, 0.0), 1.0)
        return out


def get_classifier(model_path: str | os.PathLike) -> QualityClassifier:
    """The process-wide classifier for one of Glassbox's own model files (one load per executor process).

    The cache key includes the file's modification time, so a retrained model is picked up."""
    p = Path(model_path)
    key = (str(p), p.stat().st_mtime_ns if p.is_file() else -1)
    return _CACHE.get(key, lambda: _loaded(QualityClassifier(p)))


def get_fasttext(model_path: str | os.PathLike, positive_label: str | None, prepare: str,
                 max_chars: int | None) -> QualityClassifier:
    """The process-wide classifier for a fastText model trained elsewhere (`kind: fasttext`)."""
    p = Path(model_path)
    key = ("fasttext", str(p), p.stat().st_mtime_ns if p.is_file() else -1, positive_label, prepare, max_chars)
    return _CACHE.get(key, lambda: _loaded(QualityClassifier(p, max_chars, positive_label, prepare)))


def _loaded(clf: QualityClassifier) -> QualityClassifier:
    clf.load()  # fail here, with the clear message, rather than deep inside a batch
    return clf
