"""Work units: the pieces a stage is cut into, each run whole by one task and recorded when done.

A unit is an input file, a byte range of a big gzipped WARC, or one Parquet file of the previous
stage. Running it streams its rows through the stage's transform (Arrow batches, memory flat) and
writes two Parquet files, the kept documents and the dropped rows, then a small JSON marker with
the unit's counts. The marker is written last and atomically: a unit with a marker is finished
and its files are whole; a unit without one is redone from scratch after a crash.

Plain Python and pyarrow (no Spark): the stage runner (pipeline/run/runner.py) schedules units on Spark.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
from typing import Callable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.rows import BOOKKEEPING_COLUMNS, KEPT, UNREADABLE

WRITE_ROWS = 2048          # rows buffered per Parquet row group
WRITE_BYTES = 32 << 20     # ... or this many bytes, whichever comes first
READ_ROWS = 512            # rows per Arrow batch read from a Parquet unit


def parquet_files(folder: str) -> list[str]:
    """The data files of a Parquet folder, as Spark reads it (names starting with _ or . are not data)."""
    return sorted(os.path.join(folder, f) for f in os.listdir(folder)
                  if f.endswith(".parquet") and not f.startswith(("_", ".")))


def unit_name(*key: object) -> str:
    """A stable file-safe name for a unit, from what identifies it (path, byte range)."""
    h = hashlib.sha256("\x1f".join(str(k) for k in key).encode("utf-8", "surrogatepass"))
    return "part-" + h.hexdigest()[:20]


class UnitDirs:
    """Where a stage's units write: <work>/out, <work>/rejected, <work>/units (markers), <work>/tmp."""

    def __init__(self, work_dir: str):
        self.work = work_dir
        self.out = os.path.join(work_dir, "out")
        self.rejected = os.path.join(work_dir, "rejected")
        self.units = os.path.join(work_dir, "units")
        self.tmp = os.path.join(work_dir, "tmp")

    def make(self) -> "UnitDirs":
        for d in (self.out, self.rejected, self.units, self.tmp):
            os.makedirs(d, exist_ok=True)
        return self

    def marker(self, name: str) -> str:
        return os.path.join(self.units, name + ".json")


def text_bytes(batch: pa.RecordBatch | pa.Table, col: str = "text") -> int:
    if col not in batch.schema.names or batch.num_rows == 0:
        return 0
    return int(pc.sum(pc.binary_length(batch.column(col))).as_py() or 0)


class _Sink:
    """One Parquet file written in row groups of WRITE_ROWS, to a temporary name until `commit`."""

    def __init__(self, final: str, tmp_dir: str, schema: pa.Schema, always: bool):
        self.final, self.schema, self.always = final, schema, always
        self.tmp = os.path.join(tmp_dir, f"{os.path.basename(final)}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
        self._writer = None
        self._pending: list[pa.RecordBatch] = []
        self._rows = self._bytes = 0
        self.rows = 0

    def add(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        self._pending.append(batch)
        self._rows += batch.num_rows
        self._bytes += batch.nbytes
        if self._rows >= WRITE_ROWS or self._bytes >= WRITE_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.tmp, self.schema, compression="zstd")
        if self._pending:
            self._writer.write_table(pa.Table.from_batches(self._pending, schema=self.schema))
            self.rows += self._rows
        self._pending, self._rows, self._bytes = [], 0, 0

    def commit(self) -> None:
        if self._pending or self.always:
            self._flush()
        if self._writer is None:
            return  # nothing to write (an empty dropped-rows file is not written)
        self._writer.close()
        written = pq.read_metadata(self.tmp).num_rows
        if written != self.rows:
            raise IOError(f"{self.final}: wrote {self.rows} rows but the file holds {written}")
        os.replace(self.tmp, self.final)

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.close()
        if os.path.exists(self.tmp):
            os.remove(self.tmp)


def run_unit(unit: dict, batches: Iterator[pa.RecordBatch], out_schema: pa.Schema, dirs: UnitDirs,
             fingerprint: str, size_column: str | None = None, input_counts: dict | None = None) -> dict:
    """Write a unit's rows: kept documents (status columns dropped) to out/, the others to
    rejected/, then its marker. `out_schema` is the schema of `batches`; without a `status` column
    every row is kept. `size_column` sums the input size from the rows (extract: payload_bytes);
    otherwise `input_counts` (records_in, bytes_in, filled while `batches` is consumed) says it."""
    t0 = time.time()
    name = unit["name"]
    has_status = "status" in out_schema.names
    kept_schema = pa.schema([f for f in out_schema if f.name not in BOOKKEEPING_COLUMNS])
    kept = _Sink(os.path.join(dirs.out, name + ".parquet"), dirs.tmp, kept_schema, always=True)
    dropped = _Sink(os.path.join(dirs.rejected, name + ".parquet"), dirs.tmp, out_schema, always=False)
    reasons: dict[tuple[str, str], int] = {}
    rows_seen = size_in = bytes_out = 0
    try:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            rows_seen += batch.num_rows
            if size_column:
                size_in += int(pc.sum(pc.fill_null(batch.column(size_column), 0)).as_py() or 0)
            if not has_status:
                keep = batch
            else:
                mask = pc.equal(batch.column("status"), KEPT)
                keep = batch.filter(mask)
                drop = batch.filter(pc.invert(mask))
                if drop.num_rows:
                    dropped.add(drop)
                    for st, rs in zip(drop.column("status").to_pylist(), drop.column("reason").to_pylist()):
                        reasons[(st, rs or "unknown")] = reasons.get((st, rs or "unknown"), 0) + 1
                keep = keep.select(kept_schema.names)
            bytes_out += text_bytes(keep)
            kept.add(keep)
        kept.commit()
        dropped.commit()
    except BaseException:
        kept.abort()
        dropped.abort()
        raise
    counts = input_counts or {}
    marker = {
        "unit": name, "fingerprint": fingerprint, "input": unit.get("path"),
        "range": [unit.get("start", 0), unit.get("end")] if unit.get("end") is not None else None,
        "records_in": int(counts.get("records_in", rows_seen)),
        "bytes_in": int(size_in if size_column else counts.get("bytes_in", 0)),
        "records_out": kept.rows, "bytes_out": bytes_out,
        "rejected": {r: n for (s, r), n in sorted(reasons.items()) if s != UNREADABLE},
        "unreadable": {r: n for (s, r), n in sorted(reasons.items()) if s == UNREADABLE},
        "wall_s": round(time.time() - t0, 3), "weight": unit.get("weight", 0),
    }
    write_json_atomic(dirs.marker(name), marker, dirs.tmp)
    return marker


def write_json_atomic(path: str, obj: dict, tmp_dir: str | None = None) -> None:
    tmp = os.path.join(tmp_dir or os.path.dirname(path), f".{os.path.basename(path)}.{uuid.uuid4().hex[:8]}")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, sort_keys=True, default=lambda o: o.item() if hasattr(o, "item") else str(o))
    os.replace(tmp, path)


def finished_units(dirs: UnitDirs, fingerprint: str, require_output: bool = True) -> dict[str, dict]:
    """Markers of the units finished earlier under this fingerprint (unit name -> marker); with
    `require_output`, only those whose output file is still in the work folder (not yet committed)."""
    out = {}
    if not os.path.isdir(dirs.units):
        return out
    for fn in os.listdir(dirs.units):
        if not fn.endswith(".json"):
            continue
        try:
            with open(os.path.join(dirs.units, fn), encoding="utf-8") as fh:
                m = json.load(fh)
        except (OSError, ValueError):
            continue  # a torn marker is no marker: the unit runs again
        if m.get("fingerprint") == fingerprint and (
                not require_output or os.path.exists(os.path.join(dirs.out, m["unit"] + ".parquet"))):
            out[m["unit"]] = m
    return out


def parquet_batches(path: str, counts: dict, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
    """Batches of a Parquet unit, counting records_in and text bytes_in as they pass."""
    pf = pq.ParquetFile(path)
    for batch in pf.iter_batches(batch_size=READ_ROWS, columns=columns):
        counts["records_in"] = counts.get("records_in", 0) + batch.num_rows
        counts["bytes_in"] = counts.get("bytes_in", 0) + text_bytes(batch)
        yield batch


def parquet_unit(path: str, transform_factory: Callable[[pa.Schema], tuple[Callable, pa.Schema]],
                 unit: dict, dirs: UnitDirs, fingerprint: str) -> dict:
    """Run a Parquet-file unit through `transform_factory(input schema) -> (fn, output schema)`."""
    schema = pq.read_schema(path)
    fn, out_schema = transform_factory(schema)
    counts: dict = {"records_in": 0, "bytes_in": 0}
    return run_unit(unit, fn(parquet_batches(path, counts)), out_schema, dirs, fingerprint,
                    input_counts=counts)


def replace_dir(src: str, dst: str) -> None:
    """Swap a finished folder into place; the old one is removed only after the new one is there."""
    if not os.path.exists(src):
        return  # already moved by an earlier, interrupted commit
    old = dst.rstrip("/") + ".__old"
    shutil.rmtree(old, ignore_errors=True)
    if os.path.exists(dst):
        os.rename(dst, old)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    os.rename(src, dst)
    shutil.rmtree(old, ignore_errors=True)
