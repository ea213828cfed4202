"""One id, one row: a stage's output never holds two rows with the same id.

A document's id is a hash of its source, provenance and content (pipeline/read/ids.py), so a record read
twice (two copies of one WARC under two names, overlapping crawl segments) comes out of the reader twice
with one id. The extract stage keeps the first copy in reading order and rejects the later ones
(`later_copies`, pipeline/extract/repeats.py); every stage then checks its output (`check_unique_ids`), as
it checks that its counts balance. Ids are the join key of rejected/, stats and the dedup decisions: two
rows of one id would be counted, scored and deduplicated as one document while the corpus holds two.

Plain pyarrow and numpy over the `id` column of the stage's Parquet files (32 bytes a row): below
`LOCAL_MAX_ROWS` one process holds them; beyond, pipeline/run/spark.py does the same with a Spark job.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.run.stats import AccountingError

LOCAL_MAX_ROWS = 5_000_000   # ids one process reads (about 0.3 GB); more go to a Spark job
EXAMPLES = 3                 # ids an error names


def _id_table(files: list[str]) -> pa.Table:
    """(id, input_file, f: the file's place in `files`, r: the row's place in its file)."""
    parts = []
    for k, path in enumerate(files):
        names = pq.read_schema(path).names
        t = pq.read_table(path, columns=[c for c in ("id", "input_file") if c in names])
        n = t.num_rows
        parts.append(pa.table({
            "id": t.column("id").cast(pa.string()),
            "input_file": t.column("input_file").cast(pa.string()) if "input_file" in names else pa.nulls(n, pa.string()),
            "f": pa.array(np.full(n, k, dtype=np.int32)),
            "r": pa.array(np.arange(n, dtype=np.int64))}))
    if not parts:
        return pa.table({"id": pa.array([], pa.string()), "input_file": pa.array([], pa.string()),
                         "f": pa.array([], pa.int32()), "r": pa.array([], pa.int64())})
    return pa.concat_tables(parts)


def later_copies(files: list[str]) -> dict[str, list[tuple[int, str, str | None]]]:
    """`files` in the order their records were read. For every row whose id an earlier row already has
    (in an earlier file, or higher up in the same one): {file: [(row, id, input_file of the first copy)]},
    rows in order. The first copy of every id is not listed: it stays."""
    t = _id_table(files)
    if t.num_rows < 2:
        return {}
    t = t.take(pc.sort_indices(t, [("id", "ascending"), ("f", "ascending"), ("r", "ascending")]))
    ids = t.column("id").to_numpy(zero_copy_only=False)
    first = np.ones(len(ids), dtype=bool)
    first[1:] = ids[1:] != ids[:-1]
    if first.all():
        return {}
    head = np.maximum.accumulate(np.where(first, np.arange(len(ids)), 0))  # each row's first copy
    origin = t.column("input_file").to_pylist()
    fs, rs = t.column("f").to_numpy(), t.column("r").to_numpy()
    out: dict[str, list[tuple[int, str, str | None]]] = {}
    for i in np.flatnonzero(~first).tolist():
        out.setdefault(files[int(fs[i])], []).append((int(rs[i]), str(ids[i]), origin[head[i]]))
    return {f: sorted(rows) for f, rows in out.items()}


def repeated_values(ids: pa.Array | pa.ChunkedArray) -> dict[str, int]:
    """Every value that occurs more than once, with its number of rows."""
    if len(ids) < 2:
        return {}
    counts = pc.value_counts(ids)
    many = pc.greater(counts.field("counts"), 1)
    return dict(zip(counts.field("values").filter(many).to_pylist(), counts.field("counts").filter(many).to_pylist()))


def repeated_ids(files: list[str]) -> dict[str, int]:
    """Every id that occurs more than once in `files`, with its number of rows (empty: one id, one row)."""
    return repeated_values(_id_table(files).column("id"))


def check_unique(stage: str, repeated: dict[str, int], where: str) -> None:
    """Fail the stage when its output holds an id twice: a bug upstream, not a user's mistake, so it stops the
    run before the stage is recorded as finished."""
    if repeated:
        shown = ", ".join(f"{i} ({n} rows)" for i, n in sorted(repeated.items())[:EXAMPLES])
        raise AccountingError(f"stage {stage}: ids occur in more than one row of {where} (e.g. {shown}); "
                              "one id must be one row")
