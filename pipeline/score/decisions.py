"""Quality scores as signals, and the one place score thresholds turn into decisions.

The score stage adds one column per quality classifier (`quality_en`, `quality_zh`, ...: the fastText
probability of the reference-quality label), `quality` (the document's own language's score), `perplexity`
(KenLM on sentencepiece pieces) and `ppl_bucket` (head/middle/tail from per-language percentile cut-offs
computed over the corpus, as CCNet does). By default nothing is dropped on score alone: look at
`stats/score.json`, then set `min_quality` (per classifier if need be) or `drop_buckets`. A classifier's score
can also be cut into named buckets (`buckets:` fixed edges or quantiles of the run, written as a column), so
that a mixture weights buckets instead of dropping below one threshold; `cut` places a score in its bucket, for
perplexity's head/middle/tail and for these alike.
"""
from __future__ import annotations

import hashlib
from bisect import bisect_left

from pipeline.score.settings import BUCKETS, SPAM_AXIS, ScoreConfig

LOW_QUALITY = "low_quality"
RANDOM_DROP = "random_drop"
SPAM_CLASSIFIER = "spam_classifier"


def random_draw(doc_id: str, seed: int) -> float:
    """A number in [0, 1) fixed by the document's id and the seed: the same documents drop on every run."""
    h = hashlib.sha1(f"{seed}:{doc_id}".encode("utf-8")).digest()
    return int.from_bytes(h[:8], "big") / 2**64


def cut(value: float | None, edges: list[float] | tuple | None, names: list[str] | tuple) -> str | None:
    """The name of the bucket `value` falls in: names[0] up to and including edges[0], names[1] up to edges[1],
    ..., the last above the last edge; None when unscored or without edges (no document had a score)."""
    if value is None or edges is None:
        return None
    return names[bisect_left(edges, value)]


def bucket_for(perplexity: float | None, cutoffs: tuple[float, float] | None) -> str | None:
    """head (lowest perplexity, most reference-like) / middle / tail; None when unscored."""
    return cut(perplexity, cutoffs, BUCKETS)


def bucket_edges(cfg: ScoreConfig, quantiles: dict) -> dict[str, list[float] | None]:
    """Each bucketed classifier's cut points by bucket column: its fixed edges, or the quantiles of its scores in
    this run (`quantiles`, by score column: pipeline/score/distributions.py)."""
    return {bucket_col: (spec.edges if spec.edges is not None else quantiles.get(col))
            for col, bucket_col, spec in cfg.bucketed()}


def score_reason(quality: float | None, bucket: str | None, cfg: ScoreConfig, lang: str | None = None,
                 doc_id: str | None = None, spam: float | None = None) -> str | None:
    """Why a scored document is dropped, or None. Unscored documents (null) are never dropped on quality; the
    random drop (an ablation's control) applies to every document; `spam`, the score of its language's spam
    classifier, drops it at or above that classifier's max_score."""
    if cfg.random_drop and doc_id is not None and random_draw(doc_id, cfg.random_seed) < cfg.random_drop:
        return RANDOM_DROP
    if spam is not None:
        limit = cfg.classifiers[cfg.classifier_for(lang, SPAM_AXIS)].max_score
        if limit is not None and spam >= limit:
            return SPAM_CLASSIFIER
    # a threshold of 0 (the default) drops nothing, also on a regression head's scale, where scores may be negative
    threshold = cfg.threshold(cfg.classifier_for(lang))
    if quality is not None and threshold > 0 and quality < threshold:
        return LOW_QUALITY
    if bucket is not None and bucket in cfg.drop_buckets:
        return f"ppl_bucket_{bucket}"
    return None
