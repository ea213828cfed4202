"""Quality scores as signals, and the one place score thresholds turn into decisions.

The score stage adds `quality_ft` (fastText probability of the reference-quality label),
`perplexity` (KenLM on sentencepiece pieces) and `ppl_bucket` (head/middle/tail from per-language
percentile cut-offs computed over the corpus, as CCNet does). By default nothing is dropped on
score alone: look at `stats/score.json`, then set `min_quality` or `drop_buckets`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

# Relative to where the job runs (the repository root for `make`), like source paths: under
# spark-submit this module is imported from build/pipeline.zip, so __file__ cannot locate them.
DEFAULT_MODELS = "quality_models/default"
BUCKETS = ("head", "middle", "tail")


@dataclass
class ScoreConfig:
    fasttext_model: str = f"{DEFAULT_MODELS}/quality_ft.ftz"
    fasttext_languages: list[str] = field(default_factory=lambda: ["en"])  # what the classifier knows
    kenlm_dir: str = DEFAULT_MODELS               # holds <lang>.klm and <lang>.sp.model per language
    bucket_percentiles: list[float] = field(default_factory=lambda: [0.3, 0.6])
    min_quality: float = 0.0                      # reject when quality_ft < this (0: never)
    drop_buckets: list[str] = field(default_factory=list)  # e.g. [tail]


def bucket_for(perplexity: float | None, cutoffs: tuple[float, float] | None) -> str | None:
    """head (lowest perplexity, most reference-like) / middle / tail; None when unscored."""
    if perplexity is None or cutoffs is None:
        return None
    low, high = cutoffs
    if perplexity <= low:
        return "head"
    return "middle" if perplexity <= high else "tail"


def score_reason(quality: float | None, bucket: str | None, cfg: ScoreConfig) -> str | None:
    """Why a scored document is dropped, or None. Unscored documents (null) are never dropped."""
    if quality is not None and quality < cfg.min_quality:
        return "low_quality_ft"
    if bucket is not None and bucket in cfg.drop_buckets:
        return f"ppl_bucket_{bucket}"
    return None


def validate_score_config(cfg: ScoreConfig) -> None:
    """Raise ValueError naming the setting; run before Spark starts."""
    p = cfg.bucket_percentiles
    if len(p) != 2 or not all(isinstance(x, (int, float)) for x in p) or not 0 < p[0] < p[1] < 1:
        raise ValueError(f"bucket_percentiles: expected two increasing fractions such as [0.3, 0.6], got {p!r}")
    for b in cfg.drop_buckets:
        if b not in BUCKETS:
            raise ValueError(f"drop_buckets: {b!r} is not one of {', '.join(BUCKETS)}")
    if not 0 <= cfg.min_quality <= 1:
        raise ValueError(f"min_quality: a probability between 0 and 1, got {cfg.min_quality}")
    if not Path(cfg.fasttext_model).is_file():
        raise ValueError(f"fasttext_model: {cfg.fasttext_model} not found; run `make quality-models` "
                         "or point it at a model trained with quality_models/train_fasttext.py")
    if not Path(cfg.kenlm_dir).is_dir():
        raise ValueError(f"kenlm_dir: {cfg.kenlm_dir} is not a directory; run `make quality-models`")
