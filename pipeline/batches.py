"""What runs inside Spark's Python workers: Arrow batches in, Arrow batches out.

Each factory returns a function from Arrow batches to Arrow batches, run by a stage's work units
(pipeline/units.py) or by `DataFrame.mapInArrow`. They close over plain config objects (pickled to
executors) and load models once per worker process, not once per batch.
"""
from __future__ import annotations

import os
from typing import Callable, Iterator

import pyarrow as pa

from pipeline.rows import ROW_KEYS, STATUS_COLUMNS
from pipeline.sources import read_source_file

# One row per record seen by the extract stage (see pipeline.rows.ROW_KEYS).
_EXTRACT_TYPES = {"http_status": pa.int32(), "payload_bytes": pa.int64()}
EXTRACT_ARROW = pa.schema([(k, _EXTRACT_TYPES.get(k, pa.string())) for k in ROW_KEYS])

ROWS_PER_BATCH = 128


def extract_batches(unit: dict, extract_cfg) -> Iterator[pa.RecordBatch]:
    """The records of one extract unit (a file, or a byte range of one) as Arrow batches."""
    rows = []
    for row in read_source_file(unit["path"], unit["source"], unit["format"], extract_cfg,
                                unit.get("text_field") or "text", unit.get("id_field") or "id",
                                unit.get("start", 0), unit.get("end")):
        rows.append(row)
        if len(rows) >= ROWS_PER_BATCH:
            yield pa.RecordBatch.from_pylist(rows, schema=EXTRACT_ARROW)
            rows = []
    if rows:
        yield pa.RecordBatch.from_pylist(rows, schema=EXTRACT_ARROW)


def _spark_type(kind: str) -> tuple[str, pa.DataType]:
    return ("int", pa.int32()) if kind == "int" else ("double", pa.float64())


def clean_columns() -> list[tuple[str, str, pa.DataType]]:
    """(name, Spark type, Arrow type) of the columns the clean stage adds, in order."""
    from pipeline.heuristics import SIGNAL_NAMES, SIGNAL_TYPES

    cols = [("lang", "string", pa.string()), ("lang_score", "double", pa.float64()),
            ("lines_removed", "int", pa.int32()), ("pii_emails", "int", pa.int32()),
            ("pii_ips", "int", pa.int32())]
    cols += [(name, *_spark_type(SIGNAL_TYPES[name])) for name in SIGNAL_NAMES]
    cols += [(c, "string", pa.string()) for c in STATUS_COLUMNS]
    return cols


def _resolve_model(path: str) -> str:
    """On a cluster the model travels with `spark-submit --files`; locally it is in models/."""
    if os.path.exists(path):
        return path
    from pyspark import SparkFiles

    shipped = SparkFiles.get(os.path.basename(path))
    return shipped if os.path.exists(shipped) else path


def clean_partition(clean_cfg, lid_model_path: str, input_schema: pa.Schema):
    """Clean text, add signal columns and decide keep/reject, one Arrow batch at a time."""
    added = clean_columns()
    out_schema = pa.schema(list(input_schema) + [pa.field(n, t) for n, _, t in added])

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pipeline.clean import clean_batch
        from pipeline.langid import get_identifier

        identifier = get_identifier(_resolve_model(lid_model_path))
        for batch in batches:
            if batch.num_rows == 0:
                continue
            results = clean_batch(batch.column("text").to_pylist(), identifier, clean_cfg)
            arrays = []
            for field in input_schema:
                if field.name == "text":
                    arrays.append(pa.array([r["text"] for r in results], type=field.type))
                else:
                    arrays.append(batch.column(field.name))
            for name, _, typ in added:
                if name == "status":
                    arrays.append(pa.array(["rejected" if r["reason"] else "kept" for r in results], typ))
                elif name == "detail":
                    arrays.append(pa.nulls(len(results), typ))
                else:
                    arrays.append(pa.array([r[name] for r in results], typ))
            yield pa.RecordBatch.from_arrays(arrays, schema=out_schema)
    return run


SCORE_COLUMNS = [("quality_ft", "double", pa.float64()), ("perplexity", "double", pa.float64())]


def score_partition(score_cfg, input_schema: pa.Schema):
    """Add quality_ft and perplexity; documents in a language a model does not cover get null."""
    out_schema = pa.schema(list(input_schema) + [pa.field(n, t) for n, _, t in SCORE_COLUMNS])

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pipeline.kenlm_scoring import available_languages, get_scorer
        from pipeline.quality import get_classifier

        classifier = get_classifier(_resolve_model(score_cfg.fasttext_model))
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
        from pipeline.scoring import bucket_for, score_reason

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
