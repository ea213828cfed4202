"""Document perplexity under a sentencepiece-tokenized KenLM n-gram model (the CCNet recipe).

Plain Python over one document or a batch; the scoring job wires it into Spark and calls
`get_scorer` once per executor process. A language has a model when `<model_dir>/<lang>.klm` and
`<model_dir>/<lang>.sp.model` both exist (`quality_models/train_kenlm.py` writes the pair).

How a document is scored:
  1. every line is normalised with `normalize_for_lm` (the same function prepares the training
     text, so model and input always agree);
  2. each non-empty line is cut into sentencepiece pieces, and KenLM scores the pieces as one
     sentence with begin- and end-of-sentence markers;
  3. perplexity = 10 ** (-(sum of log10 probabilities) / (sum over lines of pieces + 1)),
     the +1 being the end-of-sentence token each line predicts.
Text with no scorable line gets None, never a made-up number.

Normalisation choices (`normalize_for_lm`):
  - lower-case;
  - accents stripped: Unicode NFD, combining marks (category Mn) dropped, then NFC again so that
    scripts that decompose into non-mark parts (Hangul) come back whole. This merges "café" and
    "cafe", as CCNet does; for scripts whose vowel signs are combining marks (Devanagari, Thai, ...)
    it loses information, but training and scoring lose the same information, so perplexities stay
    comparable within a language;
  - every decimal digit becomes 0 (numbers carry little signal and blow up the vocabulary);
  - typographic quotes, dashes and ellipses become their ASCII forms; control and format characters
    (zero-width spaces, BOMs) are dropped; runs of whitespace become one space.
"""
from __future__ import annotations

import re
import threading
import unicodedata
from pathlib import Path
from typing import Iterable

# One error type for every scoring model, so a job catches one type (a RuntimeError subclass).
from pipeline.models import ModelError

MAKE_TARGET = "make quality-models"
_KLM_MAGIC = b"mmap lm "  # start of every file build_binary writes

__all__ = ["ModelError", "PerplexityScorer", "available_languages", "get_scorer", "normalize_for_lm",
           "model_paths", "MAKE_TARGET"]



# --- normalisation -----------------------------------------------------------------------------------

_PUNCT = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u00b4": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"', "\u00ab": '"',
    "\u00bb": '"',
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-",
    "\u2212": "-",
    "\u2026": "...",
})
_DIGIT = re.compile(r"\d")  # str patterns match every Unicode decimal digit (category Nd)
_SPACE = re.compile(r"\s+")


def _keep(ch: str) -> bool:
    cat = unicodedata.category(ch)
    return cat != "Mn" and (cat not in ("Cc", "Cf") or ch in "\t\n")


class _DropTable(dict):
    """A str.translate table that drops what `_keep` refuses, filled as characters are first seen:
    the per-character test runs once per distinct character, not once per character of the corpus
    (it was two thirds of the score stage's time)."""

    def __missing__(self, code: int):
        value = code if _keep(chr(code)) else None
        self[code] = value
        return value


_DROP = _DropTable()


def normalize_for_lm(line: str) -> str:
    """One line of text -> the form the language model is trained and queried on (see module doc)."""
    line = unicodedata.normalize("NFD", line.lower().translate(_PUNCT))
    line = line.translate(_DROP)
    line = unicodedata.normalize("NFC", line)
    line = _DIGIT.sub("0", line)
    return _SPACE.sub(" ", line).strip()


def normalized_lines(text: str) -> list[str]:
    r"""`normalize_for_lm` of each of text's lines (empty ones included), in one pass over the whole text: the
    per-line calls cost more than the work on a page of short lines (a third of the score stage). The same
    result: the lines are cut first, as `splitlines` cuts them, and joined with "\n", which no step changes or
    crosses (not a cased letter for the final sigma, a starter for NFD and NFC, kept by _DROP). The character
    maps run as one `str.replace` per distinct character that needs it, not as `str.translate` through a dict
    (a lookup per character of the page: three times slower here)."""
    lines = text.splitlines()
    if not lines:
        return []
    text = "\n".join(lines).lower()
    if not text.isascii():   # the typographic marks, combining marks and format characters are all non-ASCII
        for ch in _PUNCT_CHARS.intersection(text):
            text = text.replace(ch, _PUNCT[ord(ch)])
        text = unicodedata.normalize("NFD", text)
        text = _remove(text, set(text))
        text = unicodedata.normalize("NFC", text)
    else:
        text = _remove(text, set(text))   # ASCII control characters
    for ch in set(text):
        if ch.isdecimal() and ch != "0":   # re's \d in a str pattern: the decimal digits (category Nd)
            text = text.replace(ch, "0")
    return [" ".join(line.split()) for line in text.split("\n")]   # str.split and re's \s: the same spaces


_PUNCT_CHARS = frozenset(map(chr, _PUNCT))


def _remove(text: str, chars) -> str:
    for ch in chars:
        if _DROP[ord(ch)] is None:
            text = text.replace(ch, "")
    return text


# --- model files -----------------------------------------------------------------------------------

def model_paths(model_dir: str | Path, lang: str) -> tuple[Path, Path]:
    """-> (sentencepiece model, KenLM binary) paths for one language."""
    d = Path(model_dir)
    return d / f"{lang}.sp.model", d / f"{lang}.klm"


def available_languages(model_dir: str | Path) -> list[str]:
    """Languages with both a `.klm` and a `.sp.model` in model_dir, sorted; [] if the folder is absent."""
    d = Path(model_dir)
    if not d.is_dir():
        return []
    langs = []
    for klm in d.glob("*.klm"):
        lang = klm.name[: -len(".klm")]
        if lang and (d / f"{lang}.sp.model").is_file():
            langs.append(lang)
    return sorted(langs)


def _missing(path: Path) -> ModelError:
    return ModelError(f"perplexity model file missing: {path} (run `{MAKE_TARGET}` to build it)")


def _corrupt(path: Path, err: BaseException) -> ModelError:
    msg = str(err).strip().splitlines()[0][:200] if str(err).strip() else type(err).__name__
    return ModelError(f"perplexity model file cannot be loaded: {path} ({msg}); "
                      f"rebuild it with `{MAKE_TARGET}`")


class PerplexityScorer:
    """Scores text with `<model_dir>/<lang>.sp.model` + `<model_dir>/<lang>.klm`.

    The files are opened on first use (or by `load()`); a missing or unreadable file raises
    ModelError naming the file and `make quality-models`.
    """

    def __init__(self, model_dir: str | Path, lang: str):
        self.model_dir = Path(model_dir)
        self.lang = lang
        self.sp_path, self.lm_path = model_paths(model_dir, lang)
        self._sp = None
        self._lm = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"PerplexityScorer({str(self.model_dir)!r}, {self.lang!r})"

    def load(self) -> "PerplexityScorer":
        if self._lm is not None:
            return self
        with self._lock:
            if self._lm is not None:
                return self
            for p in (self.sp_path, self.lm_path):
                if not p.is_file():
                    raise _missing(p)
            import kenlm
            import sentencepiece as spm
            try:
                sp = spm.SentencePieceProcessor(model_file=str(self.sp_path))
                if sp.get_piece_size() == 0:
                    raise ValueError("empty vocabulary")
            except Exception as e:  # sentencepiece raises OSError/RuntimeError on bad bytes
                raise _corrupt(self.sp_path, e) from e
            try:
                with open(self.lm_path, "rb") as f:
                    head = f.read(len(_KLM_MAGIC))
            except OSError as e:
                raise _corrupt(self.lm_path, e) from e
            if head != _KLM_MAGIC:
                # kenlm would try to parse anything else as ARPA text: slow, noisy, and not what we ship.
                raise _corrupt(self.lm_path, ValueError("not a KenLM binary model"))
            try:
                lm = kenlm.Model(str(self.lm_path))
            except Exception as e:  # kenlm raises OSError with its C++ message
                raise _corrupt(self.lm_path, e) from e
            self._sp = sp
            self._lm = lm
        return self

    @property
    def order(self) -> int:
        return self.load()._lm.order

    def tokenize(self, line: str) -> list[str]:
        """Pieces of one already-normalised line."""
        return self.load()._sp.encode(line, out_type=str)

    def log10_prob(self, text: str) -> tuple[float, int]:
        """-> (sum of log10 probabilities, number of predicted tokens) over text's non-empty lines."""
        self.load()
        sp, lm = self._sp, self._lm
        total, n = 0.0, 0
        for line in normalized_lines(text):
            if not line:
                continue
            pieces = [p for p in sp.encode(line, out_type=str) if p and not p.isspace()]
            if not pieces:
                continue
            total += lm.score(" ".join(pieces), bos=True, eos=True)
            n += len(pieces) + 1
        return total, n

    def perplexity(self, text: str | None) -> float | None:
        """Document perplexity (see module doc); None for None, empty or whitespace-only text."""
        if not text:
            return None
        total, n = self.log10_prob(text)
        if n == 0:
            return None
        return float(10.0 ** (-total / n))

    def score_batch(self, texts: Iterable[str | None]) -> list[float | None]:
        return [self.perplexity(t) for t in texts]


_CACHE: dict[tuple[str, str], PerplexityScorer] = {}
_CACHE_LOCK = threading.Lock()


def get_scorer(model_dir: str | Path, lang: str) -> PerplexityScorer:
    """A loaded scorer, cached per process: Spark executors call this for every batch."""
    key = (str(Path(model_dir).resolve()), lang)
    with _CACHE_LOCK:
        scorer = _CACHE.get(key)
        if scorer is None:
            scorer = PerplexityScorer(model_dir, lang).load()
            _CACHE[key] = scorer
    return scorer

