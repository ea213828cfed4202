"""What the pipeline's models share: one error type for a model file that is missing or unusable, and one
fastText loader (language ID and the quality classifier).

The language identifier (pipeline/clean/langid.py), the quality classifier (pipeline/score/quality.py) and the
perplexity model (pipeline/score/perplexity.py) all raise `ModelError`, so a job can catch one type and print
one kind of message.
"""
from __future__ import annotations

import mmap
import os
import struct
import threading
from pathlib import Path


class ModelError(RuntimeError):
    """A model file is missing, unreadable or not the model it claims to be."""


class ClassifierError(ModelError):
    """A classifier the config names cannot serve, because of the setting `key` (model, positive_label, ...)."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


def require_file(path: str | os.PathLike, what: str, fix: str = "run `make quality-models` to build it") -> Path:
    """`path` as a Path if it is a file; else ModelError naming the file and how to get it."""
    p = Path(path)
    if not p.is_file():
        raise ModelError(f"{what} not found at {p}: {fix}")
    return p


def open_fasttext(path: str | os.PathLike):
    """A fastText model, loaded through the private constructor: `load_model` prints a warning to
    stderr on every load, i.e. once per Spark executor process."""
    import fasttext

    try:
        return fasttext.FastText._FastText(model_path=str(path))
    except AttributeError:  # a fastText release without the private class
        return fasttext.load_model(str(path))


# --- a structural check of the fastText binary format --------------------------------------------
# fastText's own loader trusts the file: a truncated model makes it loop while its memory grows,
# instead of failing. Walking the layout here (it mirrors FastText::saveModel of fastText 0.9) turns
# a damaged file into a ModelError before fastText ever reads it.
_FT_MAGIC = 793712314
_FT_VERSIONS = (11, 12)


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def skip(self, n: int) -> None:
        if n < 0 or self.pos + n > len(self.data):
            raise ModelError(f"truncated at byte {len(self.data)} (needs {self.pos + max(n, 0)})")
        self.pos += n

    def take(self, n: int) -> bytes:
        start = self.pos
        self.skip(n)
        return self.data[start:self.pos]

    def unpack(self, fmt: str):
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt)))


def _skip_product_quantizer(r: _Reader) -> None:
    dim, _nsubq, _dsub, _lastdsub = r.unpack("4i")
    r.skip(4 * dim * 256)  # centroids: dim × ksub floats


def _skip_matrix(r: _Reader, quantized: bool) -> None:
    if not quantized:
        m, n = r.unpack("2q")
        r.skip(4 * m * n)
        return
    (qnorm,) = r.unpack("?")
    m, _n = r.unpack("2q")
    (codesize,) = r.unpack("i")
    r.skip(codesize)
    _skip_product_quantizer(r)
    if qnorm:
        r.skip(m)
        _skip_product_quantizer(r)


def check_fasttext_file(path: str | os.PathLike) -> None:
    """Raise ModelError unless `path` holds one complete fastText model (.bin or .ftz)."""
    _walk_fasttext(path)


def fasttext_labels(path: str | os.PathLike) -> list[str]:
    """The labels of a complete fastText model, read from its dictionary without fastText itself (a config
    check stays light); ModelError for a missing or damaged file."""
    require_file(path, "fastText model", "check the path")
    return _walk_fasttext(path)


def _walk_fasttext(path: str | os.PathLike) -> list[str]:
    """The structural walk; returns the dictionary's labels (entry type 1) in file order."""
    labels: list[str] = []
    # Mapped, not read: a model trained elsewhere can be gigabytes (DCLM's bigram .bin is about 7 GB), and the
    # walk touches its header and dictionary only.
    try:
        with open(path, "rb") as f:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if os.fstat(f.fileno()).st_size else b""
    except OSError as e:
        raise ModelError(f"fastText model at {path} is unreadable: {e.strerror or e}") from None
    try:
        return _walk(path, data, labels)
    finally:
        if isinstance(data, mmap.mmap):
            data.close()


def _walk(path, data, labels: list[str]) -> list[str]:
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
            word = data[r.pos:end]
            r.pos = end + 1
            _count, entry_type = r.unpack("qb")  # count (int64), entry type (int8: 0 word, 1 label)
            if entry_type == 1:
                labels.append(word.decode("utf-8", "replace"))
        r.skip(8 * max(prune_size, 0))
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
    return labels


def load_fasttext(path: str | os.PathLike, what: str = "fastText quality model",
                  fix: str = "run `make quality-models` to build it"):
    """The one way the pipeline loads a fastText model (language ID, quality): quietly, after the structural
    check, or a ModelError naming the model, the file and ``fix``."""
    p = require_file(path, what, fix)
    check_fasttext_file(p)
    try:
        return open_fasttext(p)
    except (ValueError, RuntimeError, MemoryError) as e:
        raise ModelError(f"{what} at {p} could not be loaded ({e}): {fix}") from None


class ProcessCache:
    """One loaded model per key and process (an executor's Python worker loads each file once, whichever of its
    threads asks first); `make` builds and loads it, so a bad file fails there with its clear message."""

    def __init__(self):
        self._models: dict = {}
        self._lock = threading.Lock()

    def get(self, key, make):
        model = self._models.get(key)
        if model is None:
            with self._lock:
                model = self._models.get(key)
                if model is None:
                    model = self._models[key] = make()
        return model

