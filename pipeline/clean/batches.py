"""What the clean stage runs inside Spark's Python workers: Arrow batches in, Arrow batches out, with
the language-ID model loaded once per worker process."""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from pipeline.rows import STATUS_COLUMNS
from pipeline.run.spark_files import resolve_model


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
    cols += [(c, "string", pa.string()) for c in STATUS_COLUMNS]
    return cols



def clean_partition(clean_cfg, lid_model_path: str, input_schema: pa.Schema):
    """Clean text, add signal columns and decide keep/reject, one Arrow batch at a time."""
    added = clean_columns()
    out_schema = pa.schema(list(input_schema) + [pa.field(n, t) for n, _, t in added])

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pipeline.clean.stage import clean_batch
        from pipeline.clean.langid import get_identifier

        identifier = get_identifier(resolve_model(lid_model_path))
        for batch in batches:
            if batch.num_rows == 0:
                continue
            urls = batch.column("url").to_pylist() if "url" in batch.schema.names else None
            results = clean_batch(batch.column("text").to_pylist(), identifier, clean_cfg, urls)
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
