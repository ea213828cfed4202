"""Quality scores as signals, and the one place score thresholds turn into decisions.

The score stage adds one column per quality classifier (`quality_en`, `quality_zh`, ...: the fastText
probability of the reference-quality label), `quality` (the document's own language's score), `perplexity`
(KenLM on sentencepiece pieces) and `ppl_bucket` (head/middle/tail from per-language percentile cut-offs
computed over the corpus, as CCNet does). By default nothing is dropped on score alone: look at
`stats/score.json`, then set `min_quality` (per classifier if need be) or `drop_buckets`.
"""
from __future__ import annotations

import hashlib

from pipeline.score.settings import ScoreConfig

LOW_QUALITY = "low_quality"
RANDOM_DROP = "random_drop"


def random_draw(doc_id: str, seed: int) -> float:
    """A number in [0, 1) fixed by the document's id and the seed: the same documents drop on every run."""
    h = hashlib.sha1(f"{seed}:{doc_id}".encode("utf-8")).digest()
    return int.from_bytes(h[:8], "big") / 2**64


def bucket_for(perplexity: float | None, cutoffs: tuple[float, float] | None) -> str | None:
    """head (lowest perplexity, most reference-like) / middle / tail; None when unscored."""
    if perplexity is None or cutoffs is None:
        return None
    low, high = cutoffs
    if perplexity <= low:
        return "head"
    return "middle" if perplexity <= high else "tail"


def score_reason(quality: float | None, bucket: str | None, cfg: ScoreConfig, lang: str | None = None,
                 doc_id: str | None = None) -> str | None:
    """Why a scored document is dropped, or None. Unscored documents (null) are never dropped on quality; the
    random drop (an ablation's control) applies to every document."""
    if cfg.random_drop and doc_id is not None and random_draw(doc_id, cfg.random_seed) < cfg.random_drop:
        return RANDOM_DROP
    if quality is not None and quality < cfg.threshold(cfg.classifier_for(lang)):
        return LOW_QUALITY
    if bucket is not None and bucket in cfg.drop_buckets:
        return f"ppl_bucket_{bucket}"
    return None
