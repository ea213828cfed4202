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
import struct
import threading
from pathlib import Path

from pipeline.models import ModelError, open_fasttext, require_file

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
    return Path(__file__).resolve().parents[1] / "quality_models" / "default" / "quality_ft.ftz"


# --- a structural check of the fastText binary format --------------------------------------------
# fastText's own loader trusts the file: a truncated model makes it loop while its memory grows,
# instead of failing. Walking the layout here (it mirrors FastText::saveModel of fastText 0.9) turns
# a damaged file into a ModelError before fastText ever reads it.
_FT_MAGIC = 793712314
_FT_VERSIONS = (11, 12)


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ModelError(f"truncated at byte {len(self.data)} (needs {self.pos + max(n, 0)})")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def unpack(self, fmt: str):
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt)))


def _skip_product_quantizer(r: _Reader) -> None:
    dim, _nsubq, _dsub, _lastdsub = r.unpack("4i")
    r.take(4 * dim * 256)  # centroids: dim × ksub floats


def _skip_matrix(r: _Reader, quantized: bool) -> None:
    if not quantized:
        m, n = r.unpack("2q")
        r.take(4 * m * n)
        return
    (qnorm,) = r.unpack("?")
    m, _n = r.unpack("2q")
    (codesize,) = r.unpack("i")
    r.take(codesize)
    _skip_product_quantizer(r)
    if qnorm:
        r.take(m)
        _skip_product_quantizer(r)


def check_fasttext_file(path: str | os.PathLike) -> None:
    """Raise ModelError unless `path` holds one complete fastText model (.bin or .ftz)."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ModelError(f"fastText model at {path} is unreadable: {e.strerror or e}") from None
    r = _Reader(data)
    try:
        magic, version = r.unpack("2i")
        if magic != _FT_MAGIC or version not in _FT_VERSIONS:
            raise ModelError("not a fastText model (bad magic number or version)")
        r.take(12 * 4 + 8)  # Args: twelve int32 and the sampling threshold (double)
        size, _nwords, _nlabels = r.unpack("3i")
        _ntokens, prune_size = r.unpack("2q")
        for _ in range(size):
            end = data.find(b"\0", r.pos)
            if end < 0:
                raise ModelError("truncated inside the dictionary")
            r.pos = end + 1
            r.take(8 + 1)  # count (int64), entry type (int8)
        r.take(8 * max(prune_size, 0))
        (quant_input,) = r.unpack("?")
        _skip_matrix(r, quant_input)
        (quant_output,) = r.unpack("?")
        _skip_matrix(r, quant_output)
    except ModelError as e:
        raise ModelError(f"fastText model at {path} is corrupt: {e}") from None
    except (struct.error, OverflowError, MemoryError, ValueError) as e:
        raise ModelError(f"fastText model at {path} is corrupt: {e}") from None
    if r.pos != len(data):
        raise ModelError(f"fastText model at {path} is corrupt: {len(data) - r.pos} unexpected "
                         "bytes after the model")


def load_fasttext(path: str | os.PathLike, what: str = "fastText quality model"):
    """Load a fastText model quietly, or raise ModelError naming the file and `make quality-models`."""
    p = require_file(path, what)
    check_fasttext_file(p)
    try:
        return open_fasttext(p)
    except (ValueError, RuntimeError, MemoryError) as e:
        raise ModelError(f"{what} at {p} could not be loaded ({e}): run `make quality-models` "
                         "to rebuild it") from None


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
