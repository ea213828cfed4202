"""The kinds of `score.classifiers` entry in one place: Glassbox's own fastText models (pipeline/score/quality.py), a
fastText model trained elsewhere (the same class with its own label and preparation) and a Hugging Face model
(pipeline/score/hf.py). `check_classifier` is the config check of an entry against its files (no fastText, torch or
transformers imported); `get_classifier` is what the score stage's workers call, one load per process."""
from __future__ import annotations

import os
from pathlib import Path

from pipeline.models import ClassifierError, ModelError, ProcessCache, fasttext_labels
from pipeline.score.hf import HFClassifier, inspect_folder
from pipeline.score.quality import check_labels, get_classifier as get_own, get_fasttext
from pipeline.score.settings import FASTTEXT, GLASSBOX, HF, ClassifierSpec

_CACHE = ProcessCache()


def check_classifier(spec: ClassifierSpec) -> None:
    """ClassifierError naming the setting at fault: Glassbox's own model has __label__hq and __label__lq; another
    fastText model has its positive_label; a Hugging Face folder has a classification or regression head, the label
    and a maximum length."""
    if spec.kind == HF:
        head = inspect_folder(spec.model, spec.label(), spec.max_length, spec.clip)
        if not head.regression and spec.min_quality is not None and spec.min_quality > 1:
            raise ClassifierError("min_quality", f"must be <= 1 (a probability of {spec.label()!r}), got "
                                                 f"{spec.min_quality!r}")
        return
    if spec.kind != FASTTEXT:
        try:
            check_labels(spec.model)
        except ModelError as e:
            raise ClassifierError("model", str(e)) from None
        return
    try:
        labels = fasttext_labels(spec.model)
    except ModelError as e:
        raise ClassifierError("model", str(e)) from None
    if len(labels) < 2:
        raise ClassifierError("model", f"fastText model at {spec.model} has the labels {labels}: a classifier "
                                       "needs two or more")
    if spec.label() not in labels:
        raise ClassifierError("positive_label", f"{spec.label()!r} is not a label of the fastText model at "
                                                f"{spec.model}; its labels are {labels}")


def get_classifier(spec: ClassifierSpec, path: str | os.PathLike | None = None):
    """The process-wide classifier of an entry (`predict_proba(texts, langs)`), its model at `path` (where the
    executor finds the file; default spec.model)."""
    p = Path(path or spec.model)
    if spec.kind == HF:
        stamp = max((f.stat().st_mtime_ns for f in p.rglob("*") if f.is_file()), default=-1)  # a retrained model
        key = (str(p), stamp, spec.label(), spec.max_length, spec.batch_size, tuple(spec.clip or ()))
        return _CACHE.get(key, lambda: _loaded(HFClassifier(p, spec.label(), spec.max_length, spec.batch_size,
                                                            spec.clip)))
    if spec.kind == GLASSBOX and spec.max_chars is None:
        return get_own(p)   # exactly as before the kinds: one cached model per file
    label = spec.label() if spec.kind == FASTTEXT else None
    return get_fasttext(p, label, spec.text_prep(), spec.reads_chars())


def _loaded(clf):
    clf.load()  # fail here, with the clear message, rather than deep inside a batch
    return clf
