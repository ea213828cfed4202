"""One id, one row (pipeline/run/repeats.py): the later copies of a record read twice, found in reading
order, and the check every stage makes before it commits. Plain pyarrow, no Spark."""
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.run.repeats import ReadAgain, check_unique, later_copies, read_again, repeated_ids
from pipeline.run.stats import AccountingError


def _file(folder, name, ids, origin):
    path = str(folder / f"{name}.parquet")
    pq.write_table(pa.table({"id": ids, "input_file": [origin] * len(ids), "text": ["t"] * len(ids)}), path)
    return path


def test_later_copies_keep_the_first_in_reading_order(tmp_path):
    a = _file(tmp_path, "u1", ["x", "y", "z"], "a.warc.gz")
    b = _file(tmp_path, "u2", ["q", "y", "x", "x"], "b.warc.gz")    # x twice in b, once in a
    c = _file(tmp_path, "u3", ["y"], "c.warc.gz")
    assert later_copies([a, b, c]) == {b: [(1, "y", "a.warc.gz"), (2, "x", "a.warc.gz"), (3, "x", "a.warc.gz")],
                                       c: [(0, "y", "a.warc.gz")]}
    # the order given is the reading order: read b first and a's copies are the later ones
    assert later_copies([b, a]) == {b: [(3, "x", "b.warc.gz")], a: [(0, "x", "b.warc.gz"), (1, "y", "b.warc.gz")]}
    assert repeated_ids([a, b, c]) == {"x": 3, "y": 3}


def test_read_again_keeps_one_kept_and_one_rejected_row_per_id(tmp_path):
    """Issue 41 item 3: a record rejected at every reading was a rejected row per reading."""
    a = (_file(tmp_path, "a", ["x", "y", "z"], "a.warc.gz"), _file(tmp_path, "a-rej", ["n", "t"], "a.warc.gz"))
    b = (_file(tmp_path, "b", ["x", "y", "t"], "b.warc.gz"), _file(tmp_path, "b-rej", ["n", "z"], "b.warc.gz"))
    c = (_file(tmp_path, "c", ["x", "q"], "c.warc.gz"), None)
    plan = read_again([a, b, c])
    # x: kept in a, repeated_record in b, left out in c; y: kept in a, repeated_record in b; n: rejected in a
    # (not_html, say) and left out in b; t: rejected in a (a timeout), kept in b; z: kept in a, rejected in b
    # (its timeout is its rejected row)
    assert plan.repeated == {b[0]: [(0, "x", "a.warc.gz"), (1, "y", "a.warc.gz")]}
    assert plan.left_out == {b[1]: [0], c[0]: [0]}
    # read b first: a's x and y are the later copies; a's n is left out; t and z each keep a kept and a rejected row
    assert read_again([b, a]) == ReadAgain({a[0]: [(0, "x", "b.warc.gz"), (1, "y", "b.warc.gz")]}, {a[1]: [0]})
    assert not read_again([a]) and not read_again([])


def test_unique_ids_pass_and_empty_inputs_are_fine(tmp_path):
    a = _file(tmp_path, "u1", ["x", "y"], "a")
    b = _file(tmp_path, "u2", [], "b")
    assert later_copies([a, b]) == {} and repeated_ids([a, b]) == {} and later_copies([]) == {}
    check_unique("clean", {}, "out")


def test_a_stage_with_an_id_twice_fails_naming_it():
    with pytest.raises(AccountingError, match=r"stage clean: ids occur in more than one row of out .*x \(2 rows\)"):
        check_unique("clean", {"x": 2}, "out")
