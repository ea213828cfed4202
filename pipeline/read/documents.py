"""Readers for sources that need no HTML extraction (JSONL, Parquet, plain text); the extract stage
dispatches to them per input file (pipeline/extract/batches.py).

Every reader yields one row per input record in the stage row shape (`ROW_KEYS`): a document
(`kept`), a record that cannot become one (`rejected`, e.g. empty text) or bytes that could not be
read (`unreadable`). Nothing is dropped without a row saying why.
"""
from __future__ import annotations

import gzip
import json
import os
import zlib
from typing import Iterator

from pipeline.read.ids import doc_id
from pipeline.rows import KEPT, REJECTED, UNREADABLE, make_row
from pipeline.read.storage import open_input

GZIP_MAGIC = b"\x1f\x8b"


def _open_maybe_gzip(path: str):
    fh = open_input(path)
    head = fh.read(2)
    fh.seek(0)
    return gzip.GzipFile(fileobj=fh) if head == GZIP_MAGIC else fh


def _unreadable(source: str, path: str, reason: str, detail: str, where: object) -> dict:
    return make_row(id=doc_id(source, os.path.basename(path), where, reason), source=source,
                input_file=path, status=UNREADABLE, reason=reason, detail=detail[:300])


def _json_value(value: object) -> object:
    """What JSON cannot hold as it is (Parquet timestamps, decimals, bytes), as text."""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def _metadata(fields: dict, skip: tuple[str, ...]) -> str | None:
    """A record's fields other than text, id and url as one JSON object (None when it has none): a dump's
    timestamp, language score or crawl name stays with the document through to dedup/."""
    rest = {k: v for k, v in fields.items() if k not in skip}
    return json.dumps(rest, ensure_ascii=False, default=_json_value) if rest else None


def _url(value: object) -> str | None:
    return None if value is None or value == "" else str(value)


def _text_row(source: str, path: str, source_id: str | None, text: object, where: object,
              url: str | None = None, metadata: str | None = None) -> dict:
    """A row for one record of a text-bearing source; `where` locates it when it has no id. The url is
    provenance, not identity: the id stays that of the record's id (or place) and text."""
    if not isinstance(text, str):
        return make_row(id=doc_id(source, source_id or f"{os.path.basename(path)}:{where}", content=b""),
                    source=source, source_id=source_id, url=url, input_file=path, metadata=metadata,
                    status=REJECTED, reason="missing_text", detail=f"text field is {type(text).__name__}")
    key = source_id if source_id is not None else f"{os.path.basename(path)}:{where}"
    status, reason = (KEPT, None) if text.strip() else (REJECTED, "empty_text")
    return make_row(id=doc_id(source, key, content=text), source=source, source_id=source_id, text=text, url=url,
                input_file=path, metadata=metadata, status=status, reason=reason,
                payload_bytes=len(text.encode("utf-8")))


def read_jsonl(path: str, source: str, text_field: str = "text", id_field: str = "id",
               url_field: str = "url") -> Iterator[dict]:
    skip = (text_field, id_field, url_field)
    line_no = 0
    try:
        with _open_maybe_gzip(path) as fh:
            for line_no, raw in enumerate(fh, 1):
                if not raw.strip():
                    continue
                try:
                    obj = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError) as e:
                    yield _unreadable(source, path, "bad_json", f"line {line_no}: {e}", line_no)
                    continue
                if not isinstance(obj, dict):
                    yield _unreadable(source, path, "bad_json", f"line {line_no}: not an object", line_no)
                    continue
                sid = obj.get(id_field)
                yield _text_row(source, path, None if sid is None else str(sid), obj.get(text_field), line_no,
                                _url(obj.get(url_field)), _metadata(obj, skip))
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        yield _unreadable(source, path, "truncated_gzip", f"after line {line_no}: {e}", f"gz{line_no}")
    except OSError as e:
        yield _unreadable(source, path, "unreadable_file", str(e), "open")


def read_text(path: str, source: str) -> Iterator[dict]:
    """A plain-text file is one document (a book, a paper, a dump of one page)."""
    try:
        with _open_maybe_gzip(path) as fh:
            data = fh.read()
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        yield _unreadable(source, path, "truncated_gzip", str(e), "gz")
        return
    except OSError as e:
        yield _unreadable(source, path, "unreadable_file", str(e), "open")
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        from pipeline.read.charset import decode_html  # same detection chain as web pages
        decoded = decode_html(data, None)
        if decoded is None:
            yield make_row(id=doc_id(source, os.path.basename(path), content=data), source=source,
                       input_file=path, status=REJECTED, reason="undecodable", payload_bytes=len(data))
            return
        text = decoded[0]
    yield _text_row(source, path, None, text, "file")


def read_parquet(path: str, source: str, text_field: str = "text", id_field: str = "id",
                 url_field: str = "url") -> Iterator[dict]:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(open_input(path))
    except Exception as e:  # pyarrow raises several types for a corrupt footer
        yield _unreadable(source, path, "bad_parquet", f"{type(e).__name__}: {e}", "footer")
        return
    names = pf.schema_arrow.names
    if text_field not in names:
        yield _unreadable(source, path, "missing_text_field",
                          f"no column {text_field!r}; columns: {', '.join(names[:20])}", "schema")
        return
    skip = (text_field, id_field, url_field)
    rest = [n for n in names if n not in skip]  # every other column goes into metadata
    row_no = 0
    try:
        for batch in pf.iter_batches(batch_size=1024):
            texts = batch.column(text_field).to_pylist()
            n = len(texts)
            ids = batch.column(id_field).to_pylist() if id_field in names else [None] * n
            urls = batch.column(url_field).to_pylist() if url_field in names else [None] * n
            others = {c: batch.column(c).to_pylist() for c in rest}
            for i, (text, sid, url) in enumerate(zip(texts, ids, urls)):
                meta = _metadata({c: v[i] for c, v in others.items()}, skip) if rest else None
                yield _text_row(source, path, None if sid is None else str(sid), text, row_no, _url(url), meta)
                row_no += 1
    except Exception as e:
        yield _unreadable(source, path, "bad_parquet", f"after row {row_no}: {type(e).__name__}: {e}",
                          f"row{row_no}")
