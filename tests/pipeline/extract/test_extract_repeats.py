"""The extract stage's second phase (pipeline/extract/repeats.py) on one unit's files: later copies move
from the kept rows to the dropped ones as repeated_record, the counts move with them, nothing is lost;
a unit without repeats is only linked. Plain pyarrow, no Spark."""
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.extract.batches import EXTRACT_ARROW
from pipeline.extract.repeats import resolve_unit, second_units
from pipeline.rows import BOOKKEEPING_COLUMNS, REJECTED, REPEATED_RECORD, make_row
from pipeline.run.repeats import ReadAgain
from pipeline.run.units import UnitDirs

KEPT_SCHEMA = pa.schema([f for f in EXTRACT_ARROW if f.name not in BOOKKEEPING_COLUMNS])


def _first_phase(tmp_path):
    first = UnitDirs(str(tmp_path / "first")).make()
    kept = [make_row(id=i, source="web", text=f"text {i}", input_file="b.warc.gz", payload_bytes=10)
            for i in ("x", "y", "z")]
    pq.write_table(pa.Table.from_pylist(kept, schema=EXTRACT_ARROW).select(KEPT_SCHEMA.names),
                   os.path.join(first.out, "part-b.parquet"))
    dropped = [make_row(id="e", source="web", input_file="b.warc.gz", status=REJECTED, reason="no_main_text")]
    pq.write_table(pa.Table.from_pylist(dropped, schema=EXTRACT_ARROW), os.path.join(first.rejected, "part-b.parquet"))
    pq.write_table(pa.Table.from_pylist([], schema=KEPT_SCHEMA), os.path.join(first.out, "part-a.parquet"))
    markers = [{"unit": "part-b", "records_in": 4, "records_out": 3, "bytes_in": 40, "bytes_out": 18,
                "rejected": {"no_main_text": 1}, "unreadable": {}, "fingerprint": "one"},
               {"unit": "part-a", "records_in": 0, "records_out": 0, "bytes_in": 0, "bytes_out": 0,
                "rejected": {}, "unreadable": {}, "fingerprint": "one"}]
    return first, markers


def test_later_copies_move_to_the_dropped_rows_with_their_counts(tmp_path):
    first, markers = _first_phase(tmp_path)
    later = ReadAgain({os.path.join(first.out, "part-b.parquet"): [(0, "x", "a.warc.gz"), (2, "z", "a.warc.gz")]})
    units = second_units([{"name": "part-a"}, {"name": "part-b"}], markers, first.out, first.rejected, later)
    second = UnitDirs(str(tmp_path / "second")).make()
    for _ in range(2):  # a unit redone after a kill gives the same files and marker
        got = {u["name"]: resolve_unit(u, second, "two") for u in units}
    b = got["part-b"]
    assert (b["records_in"], b["records_out"], b["bytes_out"]) == (4, 1, 6)
    assert b["rejected"] == {"no_main_text": 1, REPEATED_RECORD: 2} and b["fingerprint"] == "two"
    assert json.loads(open(second.marker("part-b")).read()) == b
    assert pq.read_table(os.path.join(second.out, "part-b.parquet")).column("id").to_pylist() == ["y"]
    dropped = pq.read_table(os.path.join(second.rejected, "part-b.parquet"))
    assert dropped.schema == EXTRACT_ARROW
    rows = {r["id"]: r for r in dropped.to_pylist()}
    assert rows["e"]["reason"] == "no_main_text" and rows["e"]["duplicate_of"] is None
    for i in ("x", "z"):
        assert rows[i]["reason"] == REPEATED_RECORD and rows[i]["duplicate_of"] == i
        assert rows[i]["text"] == f"text {i}" and "read first from a.warc.gz" in rows[i]["detail"]
    # a unit without repeats: its files as they were, its counts unchanged
    assert got["part-a"]["records_out"] == 0 and os.path.exists(os.path.join(second.out, "part-a.parquet"))
    assert not os.path.exists(os.path.join(second.rejected, "part-a.parquet"))


def test_copies_of_records_that_have_their_row_are_left_out_and_uncounted(tmp_path):
    """Issue 41 item 3: b's e was rejected (no_main_text) in an earlier unit too, and b's y is a third copy."""
    first, markers = _first_phase(tmp_path)
    kept, dropped = os.path.join(first.out, "part-b.parquet"), os.path.join(first.rejected, "part-b.parquet")
    plan = ReadAgain({kept: [(0, "x", "a.warc.gz")]}, {kept: [1], dropped: [0]})
    [unit] = second_units([{"name": "part-b"}], markers, first.out, first.rejected, plan)
    second = UnitDirs(str(tmp_path / "second")).make()
    for _ in range(2):
        b = resolve_unit(unit, second, "two")
    assert (b["records_in"], b["records_out"], b["bytes_in"], b["bytes_out"]) == (2, 1, 30, 6)
    assert b["rejected"] == {REPEATED_RECORD: 1}
    assert pq.read_table(os.path.join(second.out, "part-b.parquet")).column("id").to_pylist() == ["z"]
    dropped = pq.read_table(os.path.join(second.rejected, "part-b.parquet")).to_pylist()
    assert [(r["id"], r["reason"]) for r in dropped] == [("x", REPEATED_RECORD)]
