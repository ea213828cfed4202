"""One id, one row: a stage's output, kept or rejected, never holds two rows with the same id.

A document's id is a hash of its source, provenance and content (pipeline/read/ids.py), so a record read
twice (two copies of one WARC under two names, overlapping crawl segments) comes out of the reader twice
with one id. The extract stage keeps the first copy in reading order, rejects the next and leaves out the
copies of a record that has its rejected row already (`read_again`, pipeline/extract/repeats.py); every
stage then checks its kept and rejected rows (`check_unique_ids`), as it checks that its counts balance.
Ids are the join key of rejected/, stats and the dedup decisions: two rows of one id would be counted,
scored and deduplicated as one document while the corpus holds two.

Plain pyarrow and numpy over the `id` column of the stage's Parquet files (32 bytes a row): below
`LOCAL_MAX_ROWS` one process holds them; beyond, pipeline/run/spark.py does the same with a Spark job.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.run.stats import AccountingError

LOCAL_MAX_ROWS = 5_000_000   # ids one process reads (about 0.3 GB); more go to a Spark job
EXAMPLES = 3                 # ids an error names


def _id_table(files: list[str], places: list[int] | None = None) -> pa.Table:
    """(id, input_file, f: the file's place in `files` or `places[k]`, r: the row's place in its file)."""
    parts = []
    for k, path in enumerate(files):
        names = pq.read_schema(path).names
        t = pq.read_table(path, columns=[c for c in ("id", "input_file") if c in names])
        n = t.num_rows
        parts.append(pa.table({
            "id": t.column("id").cast(pa.string()),
            "input_file": t.column("input_file").cast(pa.string()) if "input_file" in names else pa.nulls(n, pa.string()),
            "f": pa.array(np.full(n, k if places is None else places[k], dtype=np.int32)),
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


@dataclass
class ReadAgain:
    """What the extract stage does with the records it read more than once (`read_again`)."""
    # kept file -> [(row, id, input_file of the first kept copy)]: later kept copies, rejected as repeated_record
    repeated: dict[str, list[tuple[int, str, str | None]]] = field(default_factory=dict)
    # kept or rejected file -> rows left out: copies of a record whose id already has its row in rejected/
    left_out: dict[str, list[int]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.repeated or self.left_out)


def read_again(units: list[tuple[str, str | None]]) -> ReadAgain:
    """`units`: each unit's (kept file, rejected file or None), in reading order. One id, one row in the kept
    rows and one in the rejected rows: the first kept copy of an id stays kept; the rejected rows hold the
    first, in reading order, of its rows rejected for their own reason (not_html, a timeout...) and its later
    kept copies (as repeated_record); every other copy is left out. A record rejected at every reading is thus
    one row, counted once; a record read three times is one kept row and one repeated_record."""
    kept = _id_table([k for k, _ in units])
    rejected = [(r, i) for i, (_, r) in enumerate(units) if r]
    dropped = _id_table([r for r, _ in rejected], [i for _, i in rejected])
    t = pa.concat_tables([kept.append_column("kind", pa.array(np.zeros(kept.num_rows, np.int8))),
                          dropped.append_column("kind", pa.array(np.ones(dropped.num_rows, np.int8)))])
    many = list(repeated_values(t.column("id")))
    if not many:
        return ReadAgain()
    t = t.filter(pc.is_in(t.column("id"), value_set=pa.array(many, pa.string())))
    t = t.take(pc.sort_indices(t, [("id", "ascending"), ("f", "ascending"), ("kind", "ascending"), ("r", "ascending")]))
    plan = ReadAgain()
    last, origin, has_kept, has_rejected = None, None, False, False
    for i, where, f, r, kind in zip(*(t.column(c).to_pylist() for c in ("id", "input_file", "f", "r", "kind"))):
        if i != last:
            last, origin, has_kept, has_rejected = i, None, False, False
        file = units[f][kind]
        if kind == 0 and not has_kept:
            has_kept, origin = True, where
        elif not has_rejected:
            has_rejected = True
            if kind == 0:
                plan.repeated.setdefault(file, []).append((r, i, origin))
        else:
            plan.left_out.setdefault(file, []).append(r)
    return ReadAgain({k: sorted(v) for k, v in plan.repeated.items()}, {k: sorted(v) for k, v in plan.left_out.items()})


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
