import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.rows import KEPT, REJECTED, UNREADABLE
from pipeline.rows import ROW_KEYS
from pipeline.read.documents import read_jsonl, read_parquet, read_text


def _by_status(rows):
    out = {}
    for r in rows:
        assert set(r) == set(ROW_KEYS)
        out.setdefault(r["status"], []).append(r)
    return out


def test_jsonl_keeps_source_ids_and_counts_bad_lines(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text("\n".join([json.dumps({"id": 7, "body": "hello world"}), "{not json",
                            json.dumps({"id": "b", "body": "   "}), json.dumps({"id": "c"}), "[1, 2]",
                            json.dumps({"id": "d", "body": "second doc"})]) + "\n")
    rows = _by_status(read_jsonl(str(p), "s", text_field="body"))
    assert [r["source_id"] for r in rows[KEPT]] == ["7", "d"]
    assert sorted(r["reason"] for r in rows[REJECTED]) == ["empty_text", "missing_text"]
    assert [r["reason"] for r in rows[UNREADABLE]] == ["bad_json", "bad_json"]


def test_jsonl_truncated_gzip_keeps_good_lines(tmp_path):
    lines = "".join(json.dumps({"text": f"document number {i} " * 50}) + "\n" for i in range(200))
    data = gzip.compress(lines.encode())
    p = tmp_path / "d.jsonl.gz"
    p.write_bytes(data[: len(data) // 2])
    rows = _by_status(read_jsonl(str(p), "s"))
    assert 0 < len(rows[KEPT]) < 200
    assert [r["reason"] for r in rows[UNREADABLE]] == ["truncated_gzip"]


def test_ids_are_stable_and_independent_of_directory(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    for d in (a, b):
        (d / "x.jsonl").write_text(json.dumps({"text": "same text"}) + "\n")
    ida = [r["id"] for r in read_jsonl(str(a / "x.jsonl"), "s")]
    idb = [r["id"] for r in read_jsonl(str(b / "x.jsonl"), "s")]
    assert ida == idb and len(ida[0]) == 32
    assert ida != [r["id"] for r in read_jsonl(str(a / "x.jsonl"), "other_source")]


def test_text_and_parquet_sources(tmp_path):
    t = tmp_path / "book.txt"
    t.write_text("Call me Ishmael.\nSome years ago...\n")
    [row] = read_text(str(t), "books")
    assert row["status"] == KEPT and row["text"].startswith("Call me")
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("Café au lait, s'il vous plaît, très chaud.".encode("cp1252"))
    [row] = read_text(str(latin), "books")
    assert row["status"] == KEPT and "Café" in row["text"]

    pq.write_table(pa.table({"content": ["a doc", None, "another"], "key": ["k1", "k2", "k3"]}),
                   tmp_path / "x.parquet")
    rows = _by_status(read_parquet(str(tmp_path / "x.parquet"), "p", text_field="content", id_field="key"))
    assert [r["source_id"] for r in rows[KEPT]] == ["k1", "k3"]
    assert rows[REJECTED][0]["reason"] == "missing_text"
    [bad] = read_parquet(str(tmp_path / "x.parquet"), "p", text_field="nope")
    assert bad["status"] == UNREADABLE and bad["reason"] == "missing_text_field"
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really")
    [bad] = read_parquet(str(tmp_path / "broken.parquet"), "p")
    assert bad["reason"] == "bad_parquet"


def test_dumps_keep_their_url_and_their_other_fields(tmp_path):
    """C4, FineWeb and Dolma dumps carry a url and more fields; the reader keeps both (issue 41 item 2)."""
    p = tmp_path / "c4.jsonl"
    p.write_text("\n".join(json.dumps(o) for o in [
        {"text": "a page", "url": "https://example.org/a", "timestamp": "2019-04-25T12:57:54Z",
         "dump": "CC-MAIN-2019-18"},
        {"text": "no url here", "id": 3},
        {"text": "a link", "link": "https://example.org/b", "nested": {"k": [1, 2]}, "score": 0.5}]) + "\n")
    a, b, c = read_jsonl(str(p), "c4")
    assert a["url"] == "https://example.org/a"
    assert json.loads(a["metadata"]) == {"timestamp": "2019-04-25T12:57:54Z", "dump": "CC-MAIN-2019-18"}
    assert b["url"] is None and b["metadata"] is None  # nothing but text and id: no metadata
    c = list(read_jsonl(str(p), "c4", url_field="link"))[2]
    assert c["url"] == "https://example.org/b" and json.loads(c["metadata"]) == {"nested": {"k": [1, 2]}, "score": 0.5}

    pq.write_table(pa.table({"text": ["one", "two"], "id": ["k1", "k2"], "url": ["https://example.org/1", None],
                             "date": pa.array([1, 2], pa.int64()).cast(pa.timestamp("s")),
                             "language_score": [0.9, 0.8]}), tmp_path / "fw.parquet")
    one, two = read_parquet(str(tmp_path / "fw.parquet"), "fw")
    assert (one["source_id"], one["url"], two["url"]) == ("k1", "https://example.org/1", None)
    assert json.loads(one["metadata"]) == {"date": "1970-01-01T00:00:01", "language_score": 0.9}
    assert json.loads(two["metadata"])["language_score"] == 0.8
