"""Records read twice leave the extract stage once (pipeline/run/repeats.py says why ids must be unique).

Two copies of one WARC under two names, a re-delivered crawl segment, overlapping inputs: the reader
gives the same record the same id wherever it reads it. After every unit has run, the stage looks at the
ids of all of them, kept and rejected, in reading order (input path, then byte range, then row): the first
kept copy stays, a later kept copy moves to rejected/ as `repeated_record` with `duplicate_of` = its id and
the file it was first read from in `detail`, and a copy of a record whose id already has its row in
rejected/ (a page rejected as not_html at every reading, a third copy) is left out, neither written nor
counted in records_in (stats/extract.json says how many in `extra.read_again_left_out`). This is the
second, cheap phase of the stage (a Parquet read and write per unit with a repeat, a hard link for the
others), resumable like the first; nothing after extract ever sees two rows of one id, so clean, score
and dedup never count, score or merge a document twice, and rejected/ holds each record once.
"""
from __future__ import annotations

import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.extract.batches import EXTRACT_ARROW
from pipeline.rows import REJECTED, REPEATED_RECORD, UNREADABLE
from pipeline.run.repeats import LOCAL_MAX_ROWS, ReadAgain, read_again
from pipeline.run.units import UnitDirs, text_bytes, write_json_atomic


def find_later_copies(spark, units: list[dict], markers: list[dict], out_dir: str, rejected_dir: str) -> ReadAgain:
    """The first phase's records read more than once (pipeline.run.repeats.read_again), its files taken in
    reading order (input path, byte range): in this process, or by a Spark job for a big output."""
    files = []
    for u in sorted(units, key=lambda u: (u["path"], u["start"])):
        rejected = os.path.join(rejected_dir, u["name"] + ".parquet")
        files.append((os.path.join(out_dir, u["name"] + ".parquet"), rejected if os.path.exists(rejected) else None))
    rows = sum(m["records_out"] + sum(m["rejected"].values()) + sum(m["unreadable"].values()) for m in markers)
    if rows <= LOCAL_MAX_ROWS:
        return read_again(files)
    from pipeline.run.spark import read_again_spark
    return read_again_spark(spark, files)


def second_units(units: list[dict], markers: list[dict], out_dir: str, rejected_dir: str,
                 plan: ReadAgain) -> list[dict]:
    """The second phase's units: one per first-phase unit, with its files, its marker, its later kept copies
    (`later`: [(row, id, first input file)]) and the rows it leaves out of each file."""
    by_name = {m["unit"]: m for m in markers}
    out = []
    for u in units:
        path = os.path.join(out_dir, u["name"] + ".parquet")
        rej = os.path.join(rejected_dir, u["name"] + ".parquet")
        out.append({"name": u["name"], "path": path, "rejected": rej if os.path.exists(rej) else None,
                    "marker": by_name[u["name"]], "later": plan.repeated.get(path, []),
                    "left_out": plan.left_out.get(path, []), "left_out_rejected": plan.left_out.get(rej, []),
                    "weight": u.get("weight", 0)})
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
    return pa.table([extra[f.name] if f.name in extra
                     else rows.column(f.name).cast(f.type) if f.name in rows.column_names
                     else pa.nulls(n, f.type)  # a column the first phase's files lack (written by older code)
                     for f in EXTRACT_ARROW], schema=EXTRACT_ARROW)


def _without(table: pa.Table, rows: list[int]) -> pa.Table:
    keep = np.ones(table.num_rows, dtype=bool)
    keep[rows] = False
    return table.filter(pa.array(keep))


def _payload(table: pa.Table) -> int:
    return int(pc.sum(pc.fill_null(table.column("payload_bytes"), 0)).as_py() or 0) if table.num_rows else 0


def _uncount(marker: dict, gone: pa.Table) -> None:
    """Take rows left out of the unit's input out of its counts: they were read, but as copies of a record
    that has its row already."""
    marker["records_in"] -= gone.num_rows
    marker["bytes_in"] -= _payload(gone)


def resolve_unit(unit: dict, dirs: UnitDirs, fingerprint: str) -> dict:
    """A unit of the second phase: its kept rows without the later copies, its dropped rows plus the later kept
    copies (repeated_record) and without the copies left out, and its marker with the counts moved (records_in
    less the copies left out: every record is accounted once)."""
    name, marker, later = unit["name"], dict(unit["marker"]), unit["later"]
    gone, gone_rejected = unit.get("left_out", []), unit.get("left_out_rejected", [])
    out = os.path.join(dirs.out, name + ".parquet")
    rejected = os.path.join(dirs.rejected, name + ".parquet")
    dropped = []
    if not later and not gone:
        _link(unit["path"], out)
    else:
        table = pq.read_table(unit["path"])
        again = repeated_rows(table, later)
        left = table.take(pa.array(gone, pa.int64()))
        _write(_without(table, [r for r, _, _ in later] + gone), out, dirs.tmp)
        dropped.append(again)
        _uncount(marker, left)
        marker["records_out"] -= again.num_rows + left.num_rows
        marker["bytes_out"] -= text_bytes(again) + text_bytes(left)
        if again.num_rows:
            reasons = dict(marker["rejected"])
            reasons[REPEATED_RECORD] = reasons.get(REPEATED_RECORD, 0) + again.num_rows
            marker["rejected"] = dict(sorted(reasons.items()))
    if unit["rejected"] and not later and not gone_rejected:
        _link(unit["rejected"], rejected)
    elif unit["rejected"] or dropped:
        own = pq.read_table(unit["rejected"]) if unit["rejected"] else None
        if gone_rejected:
            left = own.take(pa.array(gone_rejected, pa.int64()))
            _uncount(marker, left)
            for status, reason in zip(left.column("status").to_pylist(), left.column("reason").to_pylist()):
                key = UNREADABLE if status == UNREADABLE else REJECTED
                counts = dict(marker[key])
                counts[reason or "unknown"] -= 1
                marker[key] = {r: n for r, n in sorted(counts.items()) if n}
            own = _without(own, gone_rejected)
        rows = pa.concat_tables(([own] if own is not None else []) + dropped, promote_options="default")
        if rows.num_rows:
            _write(rows, rejected, dirs.tmp)
        elif os.path.exists(rejected):  # a unit redone after a kill: an empty dropped-rows file is not written
            os.remove(rejected)
    marker["fingerprint"] = fingerprint
    write_json_atomic(dirs.marker(name), marker, dirs.tmp)
    return marker
