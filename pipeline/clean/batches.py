"""What the clean stage runs inside Spark's Python workers: Arrow batches in, Arrow batches out, with
the language-ID model loaded once per worker process."""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from pipeline.rows import ENGINE, STATUS_COLUMNS, TEXT_ALT
from pipeline.run.spark_files import resolve_model

ENGINES_PASSED = "engines_passed"  # which extractors' texts passed the rules (pipeline/clean/union.py)


def _spark_type(kind: str) -> tuple[str, pa.DataType]:
    return ("int", pa.int32()) if kind == "int" else ("double", pa.float64())


def clean_columns() -> list[tuple[str, str, pa.DataType]]:
    """(name, Spark type, Arrow type) of the columns the clean stage adds, in order."""
    from pipeline.clean.heuristics import SIGNAL_NAMES, SIGNAL_TYPES
    from pipeline.clean.lists_step import COLUMNS as LIST_COLUMNS

    cols = [("lang", "string", pa.string()), ("lang_score", "double", pa.float64()),
            ("lines_removed", "int", pa.int32()), ("pii_emails", "int", pa.int32()),
            ("pii_ips", "int", pa.int32())]
    cols += [(name, *_spark_type(SIGNAL_TYPES[name])) for name in SIGNAL_NAMES]
    cols += [(name, kind, pa.string() if kind == "string" else pa.float64()) for name, kind in LIST_COLUMNS]
    cols += [(ENGINES_PASSED, "string", pa.string())]
    cols += [(c, "string", pa.string()) for c in STATUS_COLUMNS]
    return cols


def clean_schema(input_schema: pa.Schema) -> pa.Schema:
    """The clean stage's rows: the input's columns but the second extractor's text, then its own."""
    return pa.schema([f for f in input_schema if f.name != TEXT_ALT] +
                     [pa.field(n, t) for n, _, t in clean_columns()])


def clean_partition(clean_cfg, lid_model_path: str, input_schema: pa.Schema):
    """Clean text, add signal columns and decide keep/reject, one Arrow batch at a time. Rows with a
    second extractor's text (extract.engine: union) keep the first text that passes."""
    added = clean_columns()
    out_schema = clean_schema(input_schema)
    names = input_schema.names

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pipeline.clean.stage import clean_batch
        from pipeline.clean.langid import get_identifier
        from pipeline.clean.union import union_batch

        identifier = get_identifier(resolve_model(lid_model_path))
        for batch in batches:
            if batch.num_rows == 0:
                continue
            urls = batch.column("url").to_pylist() if "url" in names else None
            results = clean_batch(batch.column("text").to_pylist(), identifier, clean_cfg, urls)
            n = len(results)
            engines = batch.column(ENGINE).to_pylist() if ENGINE in names else [None] * n
            alts = batch.column(TEXT_ALT).to_pylist() if TEXT_ALT in names else [None] * n

            def clean_alts(rows: list[int]) -> list[dict]:
                return clean_batch([alts[i] for i in rows], identifier, clean_cfg,
                                   [urls[i] for i in rows] if urls else None)
            results, engines, passed = union_batch(results, alts, engines, clean_alts)
            arrays = []
            for field in input_schema:
                if field.name == "text":
                    arrays.append(pa.array([r["text"] for r in results], type=field.type))
                elif field.name == ENGINE:
                    arrays.append(pa.array(engines, type=field.type))
                elif field.name != TEXT_ALT:
                    arrays.append(batch.column(field.name))
            for name, _, typ in added:
                if name == "status":
                    arrays.append(pa.array(["rejected" if r["reason"] else "kept" for r in results], typ))
                elif name == "detail":
                    arrays.append(pa.array([r.get("detail") for r in results], typ))
                elif name == ENGINES_PASSED:
                    arrays.append(pa.array(passed, typ))
                else:
                    arrays.append(pa.array([r[name] for r in results], typ))
            yield pa.RecordBatch.from_arrays(arrays, schema=out_schema)
    return run
