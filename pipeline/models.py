"""What the scoring models share: one error type for a model file that is missing or unusable.

The quality classifier (pipeline/quality.py) and the perplexity model (pipeline/perplexity.py) both
raise `ModelError`, so a job can catch one type and print one kind of message.
"""
from __future__ import annotations

import os
from pathlib import Path


class ModelError(RuntimeError):
    """A model file is missing, unreadable or not the model it claims to be."""


def require_file(path: str | os.PathLike, what: str) -> Path:
    """`path` as a Path if it is a file; else ModelError naming the file and the make target."""
    p = Path(path)
    if not p.is_file():
        raise ModelError(f"{what} not found at {p}: run `make quality-models` to build it")
    return p


def open_fasttext(path: str | os.PathLike):
    """A fastText model, loaded through the private constructor: `load_model` prints a warning to
    stderr on every load, i.e. once per Spark executor process."""
    import fasttext

    try:
        return fasttext.FastText._FastText(model_path=str(path))
    except AttributeError:  # a fastText release without the private class
        return fasttext.load_model(str(path))
