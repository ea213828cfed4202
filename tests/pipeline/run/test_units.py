"""Work units without Spark: byte ranges of a big WARC read every record exactly once, whole, with
the same rows (ids included) as one read of the file; unit files and markers; the unit plan."""
import gzip
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.extract.batches import extract_batches
from pipeline.config import parse_config
from pipeline.extract.html import ExtractConfig
from pipeline.extract.splits import plan_extract_units
from pipeline.run.units import UnitDirs, finished_units, run_unit
from pipeline.read.warc import iter_records
from pipeline.read.warc_writer import write_html_warc
from tests.conftest import FIXTURES, REPO

SAMPLE = REPO / "examples" / "sample"


def _pages(n: int) -> list[tuple[str, bytes, str]]:
    """Real pages of the bundled sample's crawls, re-packed (each WARC record its own gzip member)."""
    out = []
    for path in sorted(SAMPLE.glob("*.warc.gz")):
        for rec in iter_records(str(path), max_payload_bytes=5_000_000):
            if getattr(rec, "payload", None) and rec.record_type == "response":
                out.append((rec.url or f"https://x.example/{len(out)}", rec.payload, rec.warc_date or "2024-01-01T00:00:00Z"))
    assert len(out) >= 20
    return [(f"{u}#{i}", p, d) for i, (u, p, d) in enumerate((out * (n // len(out) + 1))[:n])]


def _damaged_warc(path: Path) -> Path:
    """Good members, a member with corrupt deflate data, a record cut short, junk, more good
    members, and a truncated last member: every kind of damage in the middle of a file."""
    good = path.with_suffix(".good")
    write_html_warc(str(good), _pages(16))
    data = good.read_bytes()
    members, i = [], 0
    while i < len(data):  # the writer emits one member per record: find them by decoding
        import zlib
        d = zlib.decompressobj(31)
        d.decompress(data[i:])
        n = len(data) - i - len(d.unused_data)
        members.append(data[i:i + n])
        i += n
    corrupt = bytearray(members[5])
    corrupt[len(corrupt) // 2:len(corrupt) // 2 + 40] = b"\x00" * 40
    short = gzip.compress(gzip.decompress(members[8])[:-200])
    blob = (b"".join(members[:5]) + bytes(corrupt) + b"".join(members[6:8]) + short + b"junk between members\n"
            + b"".join(members[9:]) + members[0][:len(members[0]) // 2])
    path.write_bytes(blob)
    return path


def _read(path: Path, start: int = 0, end: int | None = None) -> list[tuple]:
    with open(path, "rb") as f:
        return [(type(r).__name__, getattr(r, "warc_record_id", None), getattr(r, "reason", None),
                 None if hasattr(r, "warc_record_id") else r.offset, getattr(r, "payload", None))
                for r in iter_records(f, max_payload_bytes=5_000_000, start=start, end=end)]


def _read_in_ranges(path: Path, split: int) -> list[tuple]:
    size = os.path.getsize(path)
    starts = list(range(0, size, split))
    out = []
    for i, s in enumerate(starts):
        out += _read(path, s, starts[i + 1] if i + 1 < len(starts) else None)
    return out


@pytest.mark.parametrize("split", [997, 6000, 50_000])
def test_ranges_read_every_record_once_as_one_read_does(tmp_path, split):
    path = tmp_path / "big.warc.gz"
    write_html_warc(str(path), _pages(40))
    whole = _read(path)
    assert len(whole) == 40
    assert _read_in_ranges(path, split) == whole


def test_damaged_file_in_ranges_gives_the_same_rows_and_ids(tmp_path):
    """Unreadable stretches are located by gzip member, so their ids do not depend on the cut."""
    path = _damaged_warc(tmp_path / "damaged.warc.gz")
    whole = _read(path)
    kinds = {w[0] for w in whole}
    assert kinds == {"Record", "Unreadable"}, whole
    for split in (1500, 7000, 40_000):
        assert _read_in_ranges(path, split) == whole
    split = 20_000
    unit = {"path": str(path), "source": "web", "format": "warc"}
    one = [r for b in extract_batches(unit, ExtractConfig()) for r in b.to_pylist()]
    size = os.path.getsize(path)
    ranged = []
    for s in range(0, size, split):
        end = s + split if s + split < size else None
        ranged += [r for b in extract_batches({**unit, "start": s, "end": end}, ExtractConfig()) for r in b.to_pylist()]
    assert [(r["id"], r["status"], r["reason"]) for r in ranged] == [(r["id"], r["status"], r["reason"]) for r in one]


def _damaged_end(member: bytes, after: bytes, key: str, to_the_end: bool) -> bytes:
    """The member with bytes of its last 40 damaged so that its deflate stream does not end with it but runs on
    into the members after it: to the end of the file (the damage that used to lose all of them), or until it
    fails inside a later member."""
    import random
    import zlib

    for seed in range(20_000):
        rnd = random.Random(f"{key}-{seed}")
        out = bytearray(member)
        p = len(out) - rnd.randint(9, 40)
        for k in range(p, min(p + rnd.randint(1, 8), len(out))):
            out[k] ^= rnd.randint(1, 255)
        d = zlib.decompressobj(31)
        try:
            d.decompress(bytes(out))
            if d.eof:
                continue
            d.decompress(after)
        except zlib.error:
            if not to_the_end and not d.eof:
                return bytes(out)
            continue
        if to_the_end and not d.eof:
            return bytes(out)
    raise AssertionError(f"no such damage found for {key}")


def test_members_with_damaged_ends_in_ranges(tmp_path):
    """A real crawl with three members whose damaged ends run on into the members after them, the first and
    the middle one until their streams fail inside a later member, the fourth-to-last to the end of the file:
    one read gives every intact record and one corrupt_gzip per damaged member, and ranges cut anywhere (at a
    damaged member's first byte, just after it, at the next member, every 997 bytes) give the same rows."""
    data = (SAMPLE / "dolma-sample-0000.warc.gz").read_bytes()
    members = _members_of(data)
    n = len(members)
    damaged = [0, n // 2, n - 4]
    for k in damaged:
        members[k] = _damaged_end(members[k], b"".join(members[k + 1:]), f"dolma-{k}", to_the_end=k == n - 4)
    path = tmp_path / "damaged-ends.warc.gz"
    path.write_bytes(b"".join(members))
    whole = _read(path)
    clean = tmp_path / "clean.warc.gz"
    clean.write_bytes(data)
    lost = set()                                      # the records of the damaged members, read undamaged
    for k in damaged:
        (tmp_path / "one.warc.gz").write_bytes(_members_of(data)[k])
        lost |= {r[1] for r in _read(tmp_path / "one.warc.gz")}
    assert [w for w in whole if w[0] == "Record"] == [r for r in _read(clean) if r[1] not in lost]
    assert [w[2] for w in whole if w[0] == "Unreadable"] == ["corrupt_gzip"] * 3
    starts = [sum(len(m) for m in members[:k]) for k in range(n)]
    for cuts in ([starts[k] for k in damaged], [starts[k] + 1 for k in damaged], [starts[k + 1] for k in damaged],
                 list(range(997, len(data), 997))):
        edges = [0] + sorted(set(cuts)) + [None]
        assert [r for a, b in zip(edges, edges[1:]) for r in _read(path, a, b)] == whole, cuts


def _members_of(data: bytes) -> list[bytes]:
    """The gzip members of a file, found by decoding them one after the other."""
    import zlib

    out, i = [], 0
    while i < len(data):
        d = zlib.decompressobj(31)
        d.decompress(data[i:])
        out.append(data[i:len(data) - len(d.unused_data)])
        i = len(data) - len(d.unused_data)
    return out


@pytest.mark.parametrize("name", sorted(os.listdir(FIXTURES / "warc")))
def test_malformed_fixtures_split_like_whole(name):
    """Whole-file gzip, bad member boundaries, plain WARC, ARC: ranges give what one read gives."""
    path = FIXTURES / "warc" / name
    assert _read_in_ranges(path, 300) == _read(path)


def test_unit_plan_splits_only_big_gzipped_warcs(tmp_path):
    big = tmp_path / "big.warc.gz"
    write_html_warc(str(big), _pages(30))
    (tmp_path / "docs.jsonl").write_text('{"id": 1, "text": "x"}\n' * 5000)
    cfg = parse_config({"sources": {"web": {"format": "warc", "paths": [str(big)]},
                                    "dump": {"format": "jsonl", "paths": [str(tmp_path / "docs.jsonl")]}},
                        "extract": {"split_bytes": 20_000}})
    units = plan_extract_units(cfg)
    web = sorted((u for u in units if u["source"] == "web"), key=lambda u: u["start"])
    size = big.stat().st_size
    assert len(web) == -(-size // 20_000) > 1
    assert web[0]["start"] == 0 and all(0 < u["weight"] <= 20_000 for u in web)
    assert max(u["weight"] for u in web) - min(u["weight"] for u in web) <= 1  # equal ranges
    assert [u["end"] for u in web][:-1] == [u["start"] for u in web][1:] and web[-1]["end"] is None
    assert [u for u in units if u["source"] == "dump"][0]["end"] is None  # jsonl: never split
    assert len({u["name"] for u in units}) == len(units)
    assert plan_extract_units(cfg) == units  # a rerun plans the same units


def test_unit_writes_kept_and_dropped_files_then_its_marker(tmp_path):
    dirs = UnitDirs(str(tmp_path / "work")).make()
    rows = [{"id": "a", "text": "héllo", "status": "kept", "reason": None, "detail": None},
            {"id": "b", "text": "x", "status": "rejected", "reason": "too_short", "detail": None},
            {"id": "c", "text": None, "status": "unreadable", "reason": "truncated_gzip", "detail": "d"}]
    schema = pa.schema([(k, pa.string()) for k in ("id", "text", "status", "reason", "detail")])
    marker = run_unit({"name": "part-1", "path": "in", "weight": 3},
                      iter([pa.RecordBatch.from_pylist(rows, schema=schema)]), schema, dirs, "fp1")
    assert (marker["records_in"], marker["records_out"]) == (3, 1)
    assert marker["rejected"] == {"too_short": 1} and marker["unreadable"] == {"truncated_gzip": 1}
    assert marker["bytes_out"] == len("héllo".encode())
    kept = pq.read_table(dirs.out + "/part-1.parquet")
    assert kept.column_names == ["id", "text"] and kept.column("id").to_pylist() == ["a"]
    assert pq.read_table(dirs.rejected + "/part-1.parquet").column("id").to_pylist() == ["b", "c"]
    assert json.loads(Path(dirs.marker("part-1")).read_text()) == marker
    assert finished_units(dirs, "fp1") == {"part-1": marker}
    assert finished_units(dirs, "other-config") == {}  # another fingerprint: nothing to reuse
    Path(dirs.marker("part-2")).write_text('{"unit": "part-2", "finger')  # torn by a kill
    assert set(finished_units(dirs, "fp1")) == {"part-1"}
    assert os.listdir(dirs.tmp) == []


def test_failing_unit_leaves_no_files_and_no_marker(tmp_path):
    dirs = UnitDirs(str(tmp_path / "work")).make()

    def batches():
        yield pa.RecordBatch.from_pylist([{"id": "a", "text": "t"}] * 5000,
                                         schema=pa.schema([("id", pa.string()), ("text", pa.string())]))
        raise RuntimeError("executor lost")

    with pytest.raises(RuntimeError):
        run_unit({"name": "part-9"}, batches(), pa.schema([("id", pa.string()), ("text", pa.string())]),
                 dirs, "fp")
    assert os.listdir(dirs.out) == [] and os.listdir(dirs.units) == [] and os.listdir(dirs.tmp) == []
