"""Records read twice leave the extract stage once (pipeline/run/repeats.py says why ids must be unique).

Two copies of one WARC under two names, a re-delivered crawl segment, overlapping inputs: the reader
gives the same record the same id wherever it reads it. After every unit has run, the stage looks at the
ids of all of them in reading order (input path, then byte range, then row): the first copy stays, every
later one moves to rejected/ as `repeated_record` with `duplicate_of` = its id and the file it was first
read from in `detail`. This is the second, cheap phase of the stage (a Parquet read and write per unit
with a repeat, a hard link for the others), resumable like the first; nothing after extract ever sees
two rows of one id, so clean, score and dedup never count, score or merge a document twice.
"""
from __future__ import annotations

import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.extract.batches import EXTRACT_ARROW
from pipeline.rows import REJECTED, REPEATED_RECORD
from pipeline.run.repeats import LOCAL_MAX_ROWS, later_copies
from pipeline.run.units import UnitDirs, text_bytes, write_json_atomic


def find_later_copies(spark, units: list[dict], markers: list[dict], out_dir: str
                      ) -> dict[str, list[tuple[int, str, str | None]]]:
    """The first phase's later copies ({kept file: [(row, id, first input file)]}), its files taken in
    reading order (input path, byte range): in this process, or by a Spark job for a big output."""
    files = [os.path.join(out_dir, u["name"] + ".parquet") for u in sorted(units, key=lambda u: (u["path"], u["start"]))]
    if sum(m["records_out"] for m in markers) <= LOCAL_MAX_ROWS:
        return later_copies(files)
    from pipeline.run.spark import later_copies_spark
    return later_copies_spark(spark, files)


def second_units(units: list[dict], markers: list[dict], out_dir: str, rejected_dir: str,
                 later: dict[str, list[tuple[int, str, str | None]]]) -> list[dict]:
    """The second phase's units: one per first-phase unit, with its files, its marker and its later copies
    (`later`: file -> [(row, id, first input file)], from `later_copies`)."""
    by_name = {m["unit"]: m for m in markers}
    out = []
    for u in units:
        path = os.path.join(out_dir, u["name"] + ".parquet")
        rej = os.path.join(rejected_dir, u["name"] + ".parquet")
        out.append({"name": u["name"], "path": path, "rejected": rej if os.path.exists(rej) else None,
                    "marker": by_name[u["name"]], "later": later.get(path, []), "weight": u.get("weight", 0)})
    return out


def _link(src: str, dst: str) -> None:
    try:
        if os.path.exists(dst):
            os.remove(dst)
        os.link(src, dst)
    except OSError:  # another file system: copy
        shutil.copyfile(src, dst)


def _write(table: pa.Table, final: str, tmp_dir: str) -> None:
    tmp = os.path.join(tmp_dir, os.path.basename(final) + f".{os.getpid()}")
    pq.write_table(table, tmp, compression="zstd")
    if pq.read_metadata(tmp).num_rows != table.num_rows:
        raise IOError(f"{final}: the file does not hold the {table.num_rows} rows written")
    os.replace(tmp, final)


def repeated_rows(table: pa.Table, later: list[tuple[int, str, str | None]]) -> pa.Table:
    """The later copies of `table` (a unit's kept rows) as rejected rows of the extract stage."""
    rows = table.take(pa.array([r for r, _, _ in later], pa.int64()))
    n = rows.num_rows
    extra = {"status": pa.array([REJECTED] * n, pa.string()),
             "reason": pa.array([REPEATED_RECORD] * n, pa.string()),
             "detail": pa.array([f"read again: the same record was read first from {origin}" for _, _, origin in later],
                                pa.string()),
             "duplicate_of": rows.column("id").cast(pa.string())}
    return pa.table([extra[f.name] if f.name in extra else rows.column(f.name).cast(f.type) for f in EXTRACT_ARROW],
                    schema=EXTRACT_ARROW)


def resolve_unit(unit: dict, dirs: UnitDirs, fingerprint: str) -> dict:
    """A unit of the second phase: its kept rows without the later copies, its dropped rows plus them, and
    its marker with the counts moved (records_in unchanged: every record is still accounted once)."""
    name, marker, later = unit["name"], dict(unit["marker"]), unit["later"]
    out = os.path.join(dirs.out, name + ".parquet")
    rejected = os.path.join(dirs.rejected, name + ".parquet")
    if not later:
        _link(unit["path"], out)
        if unit["rejected"]:
            _link(unit["rejected"], rejected)
    else:
        table = pq.read_table(unit["path"])
        keep = np.ones(table.num_rows, dtype=bool)
        keep[[r for r, _, _ in later]] = False
        again = repeated_rows(table, later)
        dropped = [pq.read_table(unit["rejected"])] if unit["rejected"] else []
        _write(pa.concat_tables(dropped + [again], promote_options="default"), rejected, dirs.tmp)
        _write(table.filter(pa.array(keep)), out, dirs.tmp)
        marker["records_out"] -= again.num_rows
        marker["bytes_out"] -= text_bytes(again)
        reasons = dict(marker["rejected"])
        reasons[REPEATED_RECORD] = reasons.get(REPEATED_RECORD, 0) + again.num_rows
        marker["rejected"] = dict(sorted(reasons.items()))
    marker["fingerprint"] = fingerprint
    write_json_atomic(dirs.marker(name), marker, dirs.tmp)
    return marker
