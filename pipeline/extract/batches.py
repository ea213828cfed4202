"""What the extract stage runs per work unit: any input file (or a byte range of a big WARC/WET file)
to one row per record, as Arrow batches. Web formats go through HTML extraction; JSONL, Parquet and
text are read as documents (pipeline/read/documents.py)."""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from pipeline.rows import ROW_KEYS
from pipeline.read.documents import read_jsonl, read_parquet, read_text

# One row per record seen by the extract stage (see pipeline.rows.ROW_KEYS).
_EXTRACT_TYPES = {"http_status": pa.int32(), "payload_bytes": pa.int64()}
EXTRACT_ARROW = pa.schema([(k, _EXTRACT_TYPES.get(k, pa.string())) for k in ROW_KEYS])

ROWS_PER_BATCH = 128


def read_source_file(path: str, source: str, fmt: str, extract_cfg, text_field: str = "text",
                     id_field: str = "id", start: int = 0, end: int | None = None,
                     engine: str | None = None, url_field: str = "url") -> Iterator[dict]:
    """Rows for one input file (or, for a gzipped WARC/WET, the byte range [start, end) of one),
    whatever its format; `engine` is the source's HTML extractor (default extract.engine)."""
    if fmt in ("warc", "wet"):
        from pipeline.extract.html import extract_file
        yield from extract_file(path, source, fmt, extract_cfg, start, end, engine)
    elif fmt == "jsonl":
        yield from read_jsonl(path, source, text_field, id_field, url_field)
    elif fmt == "parquet":
        yield from read_parquet(path, source, text_field, id_field, url_field)
    elif fmt == "text":
        yield from read_text(path, source)
    else:
        raise ValueError(f"unknown source format {fmt!r}")


def extract_batches(unit: dict, extract_cfg) -> Iterator[pa.RecordBatch]:
    """The records of one extract unit (a file, or a byte range of one) as Arrow batches."""
    rows = []
    for row in read_source_file(unit["path"], unit["source"], unit["format"], extract_cfg,
                                unit.get("text_field") or "text", unit.get("id_field") or "id",
                                unit.get("start", 0), unit.get("end"), unit.get("engine"),
                                unit.get("url_field") or "url"):
        rows.append(row)
        if len(rows) >= ROWS_PER_BATCH:
            yield pa.RecordBatch.from_pylist(rows, schema=EXTRACT_ARROW)
            rows = []
    if rows:
        yield pa.RecordBatch.from_pylist(rows, schema=EXTRACT_ARROW)
