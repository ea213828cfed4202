"""Quality scores as signals, and the one place score thresholds turn into decisions.

The score stage adds `quality_ft` (fastText probability of the reference-quality label),
`perplexity` (KenLM on sentencepiece pieces) and `ppl_bucket` (head/middle/tail from per-language
percentile cut-offs computed over the corpus, as CCNet does). By default nothing is dropped on
score alone: look at `stats/score.json`, then set `min_quality` or `drop_buckets`.
"""
from __future__ import annotations

from pipeline.score.settings import ScoreConfig

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
