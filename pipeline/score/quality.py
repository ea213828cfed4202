"""fastText quality classifier: probability that a document reads like the reference text.

The model is trained by `quality_models/train_fasttext.py` (positives: reference prose such as
Wikipedia; negatives: extracted web text) and shipped small at `quality_models/default/quality_ft.ftz`
(`GLASSBOX_QUALITY_MODEL` points elsewhere). Training and scoring both pass text through `preprocess`,
so the two sides can never see different tokens.

Spark executors call `get_classifier(path)` per batch: the model loads once per process and is cached.
fastText 0.9.3 under numpy 2 raises on `model.predict("one string")`; we always predict on lists.
"""
from __future__ import annotations

import os
import re
import threading
from pathlib import Path

from pipeline.models import ModelError, load_fasttext

HQ_LABEL = "__label__hq"
LQ_LABEL = "__label__lq"
_CACHE: dict[tuple[str, int], "QualityClassifier"] = {}
_CACHE_LOCK = threading.Lock()

# Every non-word, non-space character becomes its own token: reference text that was tokenized
# ("word , word") and raw web text ("word, word") then give fastText the same tokens, so the
# classifier cannot learn the tokenization of its training files instead of their quality.
_PUNCT = re.compile(r"([^\w\s])")


def preprocess(text: str) -> str:
    """The one text normalization for training and scoring: lower-case, punctuation split off as
    tokens, all whitespace (newlines included: fastText reads one example per line) collapsed."""
    return " ".join(_PUNCT.sub(r" \1 ", text.lower()).split())


def default_model_path() -> Path:
    """`$GLASSBOX_QUALITY_MODEL` if set, else `<repo>/quality_models/default/quality_ft.ftz`."""
    env = os.environ.get("GLASSBOX_QUALITY_MODEL")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "quality_models" / "default" / "quality_ft.ftz"


class QualityClassifier:
    """`predict_proba(texts) -> [P(hq) or None]`; the model loads on first use."""

    def __init__(self, model_path: str | os.PathLike | None = None, max_chars: int = 20_000):
        self.model_path = Path(model_path) if model_path is not None else default_model_path()
        # fastText averages word vectors, so a long document's first 20k characters score it as well
        # as all of it would, and the cost stays bounded on giant pages.
        self.max_chars = max_chars
        self._model = None

    def load(self):
        if self._model is None:
            model = load_fasttext(self.model_path)
            labels = set(model.get_labels())
            if HQ_LABEL not in labels:
                raise ModelError(f"fastText model at {self.model_path} has no {HQ_LABEL} label "
                                 f"(labels: {sorted(labels)}): it is not a quality classifier")
            self._model = model
        return self._model

    def predict_proba(self, texts: list[str | None]) -> list[float | None]:
        """Probability of `__label__hq` per text; None for missing, empty or whitespace-only text."""
        prepared: list[str] = []
        where: list[int] = []
        for i, t in enumerate(texts):
            if t:
                p = preprocess(t[: self.max_chars])
                if p:
                    prepared.append(p)
                    where.append(i)
        out: list[float | None] = [None] * len(texts)
        if not prepared:
            return out
        labels, probs = self.load().predict(prepared, k=2)
        for i, labs, ps in zip(where, labels, probs):
            score = 0.0  # hq absent from the top 2 of a two-label model: no mass left for it
            for lab, p in zip(labs, ps):
                if lab == HQ_LABEL:
                    score = float(p)
                    break
            out[i] = min(max(score, 0.0), 1.0)
        return out


def get_classifier(model_path: str | os.PathLike | None = None) -> QualityClassifier:
    """The process-wide classifier for a model file (one load per executor process).

    The cache key includes the file's modification time, so a retrained model is picked up."""
    p = Path(model_path) if model_path is not None else default_model_path()
    key = (str(p), p.stat().st_mtime_ns if p.is_file() else -1)
    clf = _CACHE.get(key)
    if clf is None:
        with _CACHE_LOCK:
            clf = _CACHE.get(key)
            if clf is None:
                clf = QualityClassifier(p)
                clf.load()  # fail here, with the clear message, rather than deep inside a batch
                _CACHE[key] = clf
    return clf
