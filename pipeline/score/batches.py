"""What the score stage runs inside Spark's Python workers: Arrow batches in, Arrow batches out, with
the models loaded once per worker process, not once per batch."""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from pipeline.rows import QUALITY, STATUS_COLUMNS
from pipeline.run.spark_files import resolve_model
from pipeline.score.settings import SPAM_AXIS, ScoreConfig


def score_columns(score_cfg: ScoreConfig) -> list[tuple[str, pa.DataType]]:
    """What the signal phase adds: each classifier's column, `quality` (the document's own language's score from
    its quality classifier: what min_quality, the stats, the report and dedup's keep-rule read; a spam
    classifier's score stays in its own column), and `perplexity`."""
    return [(c.column, pa.float64()) for c in score_cfg.classifiers] + [(QUALITY, pa.float64()),
                                                                       ("perplexity", pa.float64())]


def score_partition(score_cfg: ScoreConfig, input_schema: pa.Schema):
    """Add the classifier columns, quality and perplexity; a document in a language no model covers gets null."""
    out_schema = pa.schema(list(input_schema) + [pa.field(n, t) for n, t in score_columns(score_cfg)])

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pipeline.score.perplexity import available_languages, get_scorer
        from pipeline.score.classifiers import get_classifier

        classifiers = [get_classifier(c, resolve_model(c.model)) for c in score_cfg.classifiers]
        lm_langs = set(available_languages(score_cfg.kenlm_dir))
        # language -> index of its quality classifier and of its spam classifier (None: unscored), looked up once
        which: dict = {}
        spam_of: dict = {}
        for batch in batches:
            texts = batch.column("text").to_pylist()
            langs = batch.column("lang").to_pylist()
            n = len(texts)
            per_model: list[list] = [[None] * n for _ in classifiers]
            quality: list = [None] * n
            ppl: list = [None] * n
            for lang in set(langs):
                if lang not in which:
                    which[lang] = score_cfg.classifier_for(lang)
                    spam_of[lang] = score_cfg.classifier_for(lang, SPAM_AXIS)
            for k, clf in enumerate(classifiers):
                spam = score_cfg.classifiers[k].axis == SPAM_AXIS
                idx = [i for i, lang in enumerate(langs) if (spam_of if spam else which)[lang] == k]
                if idx:
                    for i, p in zip(idx, clf.predict_proba([texts[i] for i in idx], [langs[i] for i in idx])):
                        per_model[k][i] = p
                        if not spam:
                            quality[i] = p
            for lang in lm_langs & set(langs):
                idx = [i for i, l in enumerate(langs) if l == lang]
                for i, p in zip(idx, get_scorer(score_cfg.kenlm_dir, lang).score_batch([texts[i] for i in idx])):
                    ppl[i] = p
            added = [pa.array(col, pa.float64()) for col in per_model + [quality, ppl]]
            yield pa.RecordBatch.from_arrays(batch.columns + added, schema=out_schema)
    return run


def spam_scores(score_cfg: ScoreConfig, batch: pa.RecordBatch, langs: list) -> list:
    """Each document's score from the spam classifier of its language (None: none scores it)."""
    spam = [i for i, c in enumerate(score_cfg.classifiers) if c.axis == SPAM_AXIS]
    if not spam:
        return [None] * len(langs)
    values = {i: batch.column(score_cfg.classifiers[i].column).to_pylist() for i in spam}
    of = {lang: score_cfg.classifier_for(lang, SPAM_AXIS) for lang in set(langs)}
    return [None if of[lang] is None else values[of[lang]][r] for r, lang in enumerate(langs)]


def decide_columns(score_cfg: ScoreConfig) -> list[tuple[str, pa.DataType]]:
    """What the decide phase adds: ppl_bucket, each bucketed classifier's bucket column, then status, reason and
    detail."""
    return ([("ppl_bucket", pa.string())] + [(b, pa.string()) for _, b, _ in score_cfg.bucketed()] +
            [(c, pa.string()) for c in STATUS_COLUMNS])


def decide_score_partition(score_cfg: ScoreConfig, cutoffs: dict, input_schema: pa.Schema,
                           edges: dict | None = None):
    """Add ppl_bucket from the per-language cut-offs, each classifier's bucket column from `edges` (by bucket
    column: pipeline/score/decisions.py bucket_edges), then status/reason from the score rules."""
    out_schema = pa.schema(list(input_schema) + [pa.field(n, t) for n, t in decide_columns(score_cfg)])
    bucketed = score_cfg.bucketed()
    edges = edges or {}

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pipeline.score.decisions import bucket_for, cut, score_reason

        for batch in batches:
            cols = batch.select(["id", "lang", QUALITY, "perplexity"]).to_pydict()
            buckets = [bucket_for(p, cutoffs.get(lang)) for lang, p in zip(cols["lang"], cols["perplexity"])]
            named = []
            for col, bucket_col, spec in bucketed:
                where, names = edges.get(bucket_col), spec.labels()
                named.append(pa.array([cut(v, where, names) for v in batch.column(col).to_pylist()], pa.string()))
            spam = spam_scores(score_cfg, batch, cols["lang"])
            reasons = [score_reason(q, b, score_cfg, lang, doc, s)
                       for doc, lang, q, b, s in zip(cols["id"], cols["lang"], cols[QUALITY], buckets, spam)]
            yield pa.RecordBatch.from_arrays(
                batch.columns + [pa.array(buckets, pa.string())] + named +
                [pa.array(["rejected" if r else "kept" for r in reasons], pa.string()),
                 pa.array(reasons, pa.string()), pa.nulls(len(reasons), pa.string())],
                schema=out_schema)
    return run
