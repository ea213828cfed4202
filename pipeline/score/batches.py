"""What the score stage runs inside Spark's Python workers: Arrow batches in, Arrow batches out, with
the models loaded once per worker process, not once per batch."""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from pipeline.rows import STATUS_COLUMNS
from pipeline.run.spark_files import resolve_model

SCORE_COLUMNS = [("quality_ft", "double", pa.float64()), ("perplexity", "double", pa.float64())]


def score_partition(score_cfg, input_schema: pa.Schema):
    """Add quality_ft and perplexity; documents in a language a model does not cover get null."""
    out_schema = pa.schema(list(input_schema) + [pa.field(n, t) for n, _, t in SCORE_COLUMNS])

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pipeline.score.perplexity import available_languages, get_scorer
        from pipeline.score.quality import get_classifier

        classifier = get_classifier(resolve_model(score_cfg.fasttext_model))
        lm_langs = set(available_languages(score_cfg.kenlm_dir))
        ft_langs = set(score_cfg.fasttext_languages)
        for batch in batches:
            texts = batch.column("text").to_pylist()
            langs = batch.column("lang").to_pylist()
            quality: list = [None] * len(texts)
            ppl: list = [None] * len(texts)
            idx = [i for i, lang in enumerate(langs) if lang in ft_langs]
            for i, p in zip(idx, classifier.predict_proba([texts[i] for i in idx])):
                quality[i] = p
            for lang in lm_langs & set(langs):
                idx = [i for i, l in enumerate(langs) if l == lang]
                for i, p in zip(idx, get_scorer(score_cfg.kenlm_dir, lang).score_batch([texts[i] for i in idx])):
                    ppl[i] = p
            yield pa.RecordBatch.from_arrays(
                batch.columns + [pa.array(quality, pa.float64()), pa.array(ppl, pa.float64())],
                schema=out_schema)
    return run


def decide_score_partition(score_cfg, cutoffs: dict, input_schema: pa.Schema):
    """Add ppl_bucket from the per-language cut-offs, then status/reason from the score rules."""
    out_schema = pa.schema(list(input_schema) + [pa.field("ppl_bucket", pa.string())] +
                           [pa.field(c, pa.string()) for c in STATUS_COLUMNS])

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pipeline.score.decisions import bucket_for, score_reason

        for batch in batches:
            cols = batch.select(["lang", "quality_ft", "perplexity"]).to_pydict()
            buckets = [bucket_for(p, cutoffs.get(lang)) for lang, p in zip(cols["lang"], cols["perplexity"])]
            reasons = [score_reason(q, b, score_cfg) for q, b in zip(cols["quality_ft"], buckets)]
            yield pa.RecordBatch.from_arrays(
                batch.columns + [pa.array(buckets, pa.string()),
                                 pa.array(["rejected" if r else "kept" for r in reasons], pa.string()),
                                 pa.array(reasons, pa.string()), pa.nulls(len(reasons), pa.string())],
                schema=out_schema)
    return run
