"""The WARC/ARC reader: real and malformed files from shared/data, plus synthetic damage."""
import gzip
import io
import random
import zlib
from collections import Counter

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from conftest import REPO, SHARED_DATA, SHARED_SKIP
from pipeline.read.warc import _MEMBER_HOLD, Record, Unreadable, iter_records

DATA = SHARED_DATA / "warc"
MAX = 5_000_000


def _need_data():
    if not DATA.is_dir():
        pytest.skip(f"{SHARED_SKIP}: {DATA}")


def _read(source, max_payload_bytes=MAX):
    items = list(iter_records(source, max_payload_bytes=max_payload_bytes))
    records = [r for r in items if isinstance(r, Record)]
    bad = [r for r in items if isinstance(r, Unreadable)]
    assert len(records) + len(bad) == len(items)
    return records, bad


# ---------------------------------------------------------------------------------------------
# shared data: expected record counts per file (response, resource, conversion) and unreadables

EXPECTED = {
    "real/resiliparse-cc-excerpt.warc.gz": ({"response": 16}, []),
    "real/dolma-sample-0000.warc.gz": ({"response": 22, "resource": 2}, []),
    "real/IAH-urls-wget.warc.gz": ({"response": 16, "resource": 3}, []),
    "real/jwarc-cc.warc.gz": ({"response": 1}, []),
    "commoncrawl_whirlwind/whirlwind.warc.gz": ({"response": 1}, []),
    "commoncrawl_whirlwind/whirlwind.warc.wet.gz": ({"conversion": 1}, []),
    "commoncrawl_whirlwind/whirlwind.warc.wat.gz": ({}, []),
    "warcio_valid/example.warc": ({"response": 1}, []),
    "warcio_valid/example.warc.gz": ({"response": 1}, []),
    "warcio_valid/example-digest.warc": ({}, []),
    "warcio_valid/example-iana.org-chunked.warc": ({"response": 1}, []),
    "warcio_valid/example-resource.warc.gz": ({"resource": 1}, []),
    "warcio_valid/example.arc.gz": ({"response": 1}, []),
    # whole-file gzip and odd member boundaries: read as one continuous stream
    "malformed/example-bad-non-chunked.warc.gz": ({"response": 1}, []),
    "malformed/example-wrong-chunks.warc.gz": ({"response": 1}, []),
    "malformed/example-bad.warc.gz.bad": ({"response": 2}, []),
    "malformed/example-space-in-target-uri.warc.gz": ({"resource": 1}, []),
    # the response's Content-Length is 6 bytes short: the record is kept, the stray bytes are
    # reported, and the request after it is still found
    "malformed/example-trunc.warc": ({"response": 1}, ["bad_record_header"]),
    # lengths -1 (filedesc and one record) and 'abc'; the record with length 1 is fine
    "malformed/bad.arc": ({"response": 1}, ["bad_arc_header"] * 3),
}


def test_every_shared_file_is_listed():
    _need_data()
    present = {str(p.relative_to(DATA)) for p in DATA.glob("*/*") if p.is_file()}
    assert present == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_shared_files(name):
    _need_data()
    types, reasons = EXPECTED[name]
    records, bad = _read(DATA / name)
    assert dict(Counter(r.record_type for r in records)) == types
    assert [u.reason for u in bad] == reasons
    for r in records:
        # Every kept record carries its body (payload_bytes: as sent, before any Content-Encoding); an HTTP
        # response also its status line.
        assert r.payload is not None and r.payload_bytes > 0 and not r.payload_too_large
        assert r.url
        if r.record_type == "response" and not (name == "malformed/bad.arc" and r.payload_bytes == 1):
            assert isinstance(r.http_status, int) and 100 <= r.http_status < 600, (name, r.url, r.http_status)
        else:
            assert r.http_status is None and len(r.payload) > 0, (name, r.record_type, r.url)


def test_shared_record_fields():
    _need_data()
    (rec,), _ = _read(DATA / "warcio_valid/example.warc.gz")
    assert rec.url == "http://example.com/"
    assert rec.warc_date == "2017-03-06T04:02:06Z"
    assert rec.warc_record_id.startswith("<urn:uuid:")
    assert rec.http_status == 200 and rec.content_type == "text/html"
    assert rec.headers["content-encoding"] == "gzip"
    assert rec.payload.startswith(b"<!doctype html>")  # gzip content-encoding undone
    assert rec.payload_bytes == 606 and not rec.payload_too_large

    (rec,), _ = _read(DATA / "warcio_valid/example-iana.org-chunked.warc")
    assert rec.payload.lstrip().startswith(b"<!doctype html>")  # chunked transfer-encoding undone
    assert rec.payload.rstrip().endswith(b"</html>")

    (rec,), _ = _read(DATA / "warcio_valid/example.arc.gz")
    assert rec.warc_date == "2014-02-16T05:02:21Z" and rec.http_status == 200
    assert rec.warc_record_id is None

    (rec,), _ = _read(DATA / "malformed/example-space-in-target-uri.warc.gz")
    assert rec.url == "file:///example%20with%20spaces.png"
    assert rec.content_type == "image/png"

    (rec,), _ = _read(DATA / "commoncrawl_whirlwind/whirlwind.warc.wet.gz")
    assert rec.record_type == "conversion" and rec.content_type == "text/plain"
    assert rec.payload.startswith(b"Escopete")


def test_skipped_counter_and_fileobj():
    _need_data()
    with open(DATA / "commoncrawl_whirlwind/whirlwind.warc.gz", "rb") as f:
        it = iter_records(f, max_payload_bytes=MAX)
        assert [r.record_type for r in it] == ["response"]
    assert it.skipped == Counter({"warcinfo": 1, "request": 1, "metadata": 1})


# ---------------------------------------------------------------------------------------------
# synthetic files

def _page(i: int, size: int = 3000) -> bytes:
    rnd = random.Random(i)
    words = " ".join(rnd.choice(["alpha", "beta", "gamma", f"w{rnd.randint(0, 999)}"])
                     for _ in range(size // 6))
    return f"<html><body><p>page {i}: {words}</p></body></html>".encode()


def _record(i: int, *, gz: bool = True, body: bytes | None = None, status: str = "200 OK",
            headers=None) -> bytes:
    buf = io.BytesIO()
    w = WARCWriter(buf, gzip=gz)
    h = StatusAndHeaders(status, headers or [("Content-Type", "text/html; charset=utf-8")],
                         protocol="HTTP/1.1")
    fixed = {"WARC-Record-ID": f"<urn:uuid:00000000-0000-4000-8000-{i:012d}>", "WARC-Date": "2026-01-01T00:00:00Z"}
    rec = w.create_warc_record(f"http://example.com/{i}", "response",
                               payload=io.BytesIO(_page(i) if body is None else body),
                               http_headers=h, warc_headers_dict=fixed)
    w.write_record(rec)
    out = buf.getvalue()
    return out[:4] + bytes(4) + out[8:] if gz else out  # gzip mtime 0: the same bytes on every run


def _urls(items):
    return [r.url if isinstance(r, Record) else r.reason for r in items]


def _three(gz=True):
    return [_record(i, gz=gz) for i in range(3)]


@pytest.mark.parametrize("gz", [True, False])
def test_synthetic_valid(gz):
    records, bad = _read(io.BytesIO(b"".join(_three(gz))))
    assert [r.url for r in records] == [f"http://example.com/{i}" for i in range(3)]
    assert not bad
    assert records[1].payload == _page(1)
    assert records[0].offset == 0 and records[1].offset > 0


def _members(n: int = 3) -> list[bytes]:
    return [_record(i) for i in range(n)]


def _corrupted(member: bytes, rnd: random.Random) -> bytes:
    """1 to 16 bytes XORed with nonzero values, anywhere after the 10-byte gzip header."""
    out = bytearray(member)
    p = rnd.randint(10, len(out) - 1)
    for k in range(p, min(p + rnd.randint(1, 16), len(out))):
        out[k] ^= rnd.randint(1, 255)
    return bytes(out)


def test_corrupt_gzip_member_in_the_middle():
    """Corrupt bytes inside the second of three gzip members, at places fixed by the seeds (the records'
    ids, dates and gzip times are fixed too, so a failure reproduces)."""
    m = _members()
    assert m == _members()  # the same bytes on every run
    for seed in range(40):
        mid = _corrupted(m[1], random.Random(seed))
        got = _urls(iter_records(io.BytesIO(m[0] + mid + m[2]), max_payload_bytes=MAX))
        assert got == ["http://example.com/0", "corrupt_gzip", "http://example.com/2"], (seed, got)


def _corrupted_at(member: bytes, p: int, rnd: random.Random) -> bytes:
    """1 to 16 bytes from offset p XORed with nonzero values (cut at the member's end)."""
    out = bytearray(member)
    for k in range(p, min(p + rnd.randint(1, 16), len(out))):
        out[k] ^= rnd.randint(1, 255)
    return bytes(out)


def _split_members(data: bytes) -> list[bytes]:
    """The gzip members of a file, found by decoding them one after the other."""
    members, i = [], 0
    while i < len(data):
        d = zlib.decompressobj(31)
        d.decompress(data[i:])
        n = len(data) - i - len(d.unused_data)
        members.append(data[i:i + n])
        i += n
    return members


def _items(data: bytes, opener=io.BytesIO, max_payload_bytes: int = MAX) -> list:
    """What the reader gives, comparable: (url, payload) for a record, the reason for an unreadable."""
    return [(r.url, r.payload) if isinstance(r, Record) else r.reason
            for r in iter_records(opener(data), max_payload_bytes=max_payload_bytes)]


class _Window:
    """Members of a WARC and what the reader gives for the whole of them and for each alone (read as `how` says:
    _items's opener and max_payload_bytes)."""

    def __init__(self, members: list[bytes], **how):
        self.members = members
        self.how = how
        self.whole = _items(b"".join(members), **how)
        self.each = [_items(m, **how) for m in members]

    def nothing_lost(self, which: int, damaged: bytes, last_of_file: bool) -> str | None:
        """Property: with member `which` damaged, every other member's items come out whole and in order, and
        the damaged member gives exactly one corrupt_gzip in its place (truncated_gzip only for the file's last
        member), or nothing changes at all (bytes the checks cannot see: gzip time, padding bits)."""
        m = self.members
        got = _items(b"".join(m[:which]) + damaged + b"".join(m[which + 1:]), **self.how)
        if got == self.whole:
            return None
        before = [it for items in self.each[:which] for it in items]
        after = [it for items in self.each[which + 1:] for it in items]
        if got in [before + [reason] + after for reason in
                   (("corrupt_gzip", "truncated_gzip") if last_of_file else ("corrupt_gzip",))]:
            return None
        return f"got {[g if isinstance(g, str) else g[0] for g in got]}"


def _cases(member: bytes, key: str, n: int) -> list[tuple[str, bytes]]:
    """n corruptions starting anywhere in the member (its gzip header included) and n starting in its last
    40 bytes (the end of its deflate data, its CRC and length), reproducible from the key."""
    out = []
    for seed in range(n):
        rnd = random.Random(f"{key}-anywhere-{seed}")
        p = rnd.randrange(len(member))
        out.append((f"anywhere {p}", _corrupted_at(member, p, rnd)))
    for seed in range(n):
        rnd = random.Random(f"{key}-end-{seed}")
        back = rnd.randint(1, min(40, len(member)))
        out.append((f"{back} bytes before the end", _corrupted_at(member, len(member) - back, rnd)))
    return out


@pytest.mark.parametrize("which", [0, 1, 2])
def test_a_corrupt_member_never_loses_an_intact_record(which):
    """Property: over many random corruptions of the first, middle or last member, the corrupt member is
    one corrupt_gzip and never a record, and every intact record comes out whole."""
    m = _members()
    want = ["http://example.com/0", "http://example.com/1", "http://example.com/2"]
    for seed in range(1000):
        parts = list(m)
        parts[which] = _corrupted(m[which], random.Random(f"{which}-{seed}"))
        items = list(iter_records(io.BytesIO(b"".join(parts)), max_payload_bytes=MAX))
        got = _urls(items)
        # a last member whose end is corrupt cannot be told from a file cut short there
        reasons = {"corrupt_gzip", "truncated_gzip"} if which == 2 else {"corrupt_gzip"}
        assert got[which] in reasons and got[:which] + got[which + 1:] == want[:which] + want[which + 1:], \
            (which, seed, got)
        for r in items:
            if isinstance(r, Record):
                assert r.payload == _page(int(r.url.rsplit("/", 1)[1])), (which, seed)
    # corruptions at every one of the member's last 40 bytes: its final deflate codes, CRC and length
    window = _Window(m)
    for back in range(1, 41):
        for seed in range(5):
            rnd = random.Random(f"{which}-end-{back}-{seed}")
            damaged = _corrupted_at(m[which], len(m[which]) - back, rnd)
            assert window.nothing_lost(which, damaged, which == 2) is None, (which, back, seed)


class _Trickle(io.RawIOBase):
    """A file that hands out 1 to 2,048 bytes a read, as a pipe or a socket does (so a member's end and the next
    member's header come in different reads); the same pieces on every run."""

    def __init__(self, data: bytes):
        self._f, self._rnd = io.BytesIO(data), random.Random(len(data))

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        piece = self._f.read(min(len(buf), self._rnd.randint(1, 2048)))
        buf[:len(piece)] = piece
        return len(piece)


@pytest.fixture(scope="module")
def big_body() -> bytes:
    """A page of 8.6 MB of letters, spaces and newlines: its member, 5 MB compressed, is over the reader's
    _MEMBER_HOLD decompressed, so the reader streams it instead of holding it until its CRC checks."""
    table = bytes((b"abcdefghijklmnopqrstuvwxyz  \n" * 9)[:256])
    body = b"<html><body><pre>" + random.Random("big").randbytes(8_600_000).translate(table) + b"</pre></body></html>"
    assert len(body) > _MEMBER_HOLD
    return body


@pytest.mark.parametrize("which, reads", [(0, "whole"), (2, "whole"), (4, "whole"), (2, "trickle"), (4, "trickle")])
def test_a_member_too_big_to_hold_damaged_at_its_end_is_one_corrupt_gzip(big_body, which, reads):
    """The property above for a member the reader streams (over _MEMBER_HOLD): damaged at its end (each of its
    CRC and length bytes, and 16 damages starting in its last 40 bytes), first, middle or last of five members,
    read from a file (64 KiB reads) or trickled in pieces, payloads read whole and compared: the big member is one
    corrupt_gzip (truncated_gzip as the file's last), never a record with damaged bytes nor stray bytes read as a
    bad record; every record before it comes out intact and none after it is lost. The streamed member used to
    hand out its output unchecked: its stream ran on into the next member (a bad_record_header from its bytes,
    the record after it lost, or every record after it when the run reached the end of the file)."""
    members = [_record(i) for i in range(5)]
    members[which] = big = _record(which, body=big_body)
    window = _Window(members, opener=_Trickle if reads == "trickle" else io.BytesIO, max_payload_bytes=10_000_000)
    assert [it[0] for it in window.whole] == [f"http://example.com/{i}" for i in range(5)]
    cases = []
    for back in range(1, 9):                      # one byte of the trailer: the CRC (8-5 back), the length (4-1)
        damaged = bytearray(big)
        damaged[-back] ^= 0x55
        cases.append((f"trailer byte {back} before the end", bytes(damaged)))
    for seed in range(16):
        rnd = random.Random(f"big-{which}-{reads}-{seed}")
        back = rnd.randint(1, 40)
        cases.append((f"{back} bytes before the end", _corrupted_at(big, len(big) - back, rnd)))
    for what, damaged in cases:
        problem = window.nothing_lost(which, damaged, which == 4)
        assert problem is None, (which, reads, what, problem)


def _real_warcs() -> list:
    """The bundled sample's crawls (every clone has them) and the shared real WARCs not among them."""
    paths = sorted((REPO / "examples" / "sample").glob("*.warc.gz"))
    names = {p.name for p in paths}
    return paths + sorted(p for p in (SHARED_DATA / "warc" / "real").glob("*.warc.gz") if p.name not in names)


@pytest.mark.parametrize("path", _real_warcs(), ids=lambda p: p.name)
def test_real_warcs_lose_no_record_to_a_corrupt_member(path):
    """The same property on real crawls, each record its own member: a corruption anywhere in the first, the
    middle or the last member, 30 starting anywhere and 30 in its last 40 bytes each, read in a window of up
    to two real members either side (the members a damaged stream can run into), the last member at the
    file's end. A damaged end used to make the deflate stream run on to the end of the file: truncated_gzip,
    and every record after it lost."""
    members = _split_members(path.read_bytes())
    n = len(members)
    for which in sorted({0, n // 2, n - 1}):
        lo, hi = max(0, which - 2), min(n, which + 3)
        window = _Window(members[lo:hi])
        for what, damaged in _cases(members[which], f"{path.name}-{which}", 30):
            problem = window.nothing_lost(which - lo, damaged, which == n - 1)
            assert problem is None, (path.name, f"member {which} of {n}", what, problem)


def test_corrupt_bytes_in_plain_warc_payload_and_header():
    m = _three(gz=False)
    # in the payload: the record is still readable (the bytes are just different)
    mid = bytearray(m[1])
    mid[len(mid) // 2] = 0xFF
    records, bad = _read(io.BytesIO(m[0] + bytes(mid) + m[2]))
    assert [r.url for r in records] == [f"http://example.com/{i}" for i in range(3)] and not bad
    # in the WARC header line: that record is lost, the others come through
    broken = m[1].replace(b"WARC/1.", b"WXRC/1.", 1)
    got = _urls(iter_records(io.BytesIO(m[0] + broken + m[2]), max_payload_bytes=MAX))
    assert got == ["http://example.com/0", "bad_record_header", "http://example.com/2"]


@pytest.mark.parametrize("gz", [True, False])
def test_truncated_file(gz):
    m = _three(gz)
    data = b"".join(m)
    cut = data[: len(m[0]) + len(m[1]) + len(m[2]) // 2]
    got = _urls(iter_records(io.BytesIO(cut), max_payload_bytes=MAX))
    reason = "truncated_gzip" if gz else "truncated_record"
    assert got == ["http://example.com/0", "http://example.com/1", reason]


def test_truncated_inside_first_header():
    data = b"".join(_three(gz=False))
    assert _urls(iter_records(io.BytesIO(data[:40]), max_payload_bytes=MAX)) == ["truncated_record"]


@pytest.mark.parametrize("gz", [True, False])
@pytest.mark.parametrize("where", ["start", "between", "end"])
def test_garbage(gz, where):
    m = _three(gz)
    junk = b"this is not a record\x00\xff\xfe" * 20 + b"\n"
    data = {"start": junk + b"".join(m), "between": m[0] + junk + m[1] + m[2],
            "end": b"".join(m) + junk}[where]
    records, bad = _read(io.BytesIO(data))
    assert [r.url for r in records] == [f"http://example.com/{i}" for i in range(3)]
    assert len(bad) == 1 and bad[0].reason in ("corrupt_gzip", "bad_record_header")


def test_wrong_content_length_too_big_recovers_next_record():
    m = _three(gz=False)
    head, sep, rest = m[1].partition(b"\r\n\r\n")
    old = [line for line in head.split(b"\r\n") if line.startswith(b"Content-Length")][0]
    n = int(old.split(b":")[1])
    broken = head.replace(old, b"Content-Length: %d" % (n + 50000)) + sep + rest
    got = _urls(iter_records(io.BytesIO(m[0] + broken + m[2]), max_payload_bytes=MAX))
    assert got == ["http://example.com/0", "truncated_record", "http://example.com/2"]


def test_bad_content_length_value():
    m = _three(gz=False)
    head, sep, rest = m[1].partition(b"\r\n\r\n")
    old = [line for line in head.split(b"\r\n") if line.startswith(b"Content-Length")][0]
    broken = head.replace(old, b"Content-Length: abc") + sep + rest
    got = _urls(iter_records(io.BytesIO(m[0] + broken + m[2]), max_payload_bytes=MAX))
    assert got == ["http://example.com/0", "bad_record_header", "http://example.com/2"]


def test_whole_file_gzip_and_odd_member_boundaries():
    plain = b"".join(_three(gz=False))
    records, bad = _read(io.BytesIO(gzip.compress(plain)))
    assert len(records) == 3 and not bad
    # members cut at arbitrary places, not at record boundaries
    rnd = random.Random(1)
    cuts = sorted(rnd.sample(range(1, len(plain)), 7))
    pieces = [plain[a:b] for a, b in zip([0] + cuts, cuts + [len(plain)])]
    records, bad = _read(io.BytesIO(b"".join(gzip.compress(p) for p in pieces)))
    assert [r.url for r in records] == [f"http://example.com/{i}" for i in range(3)] and not bad


def test_payload_too_large_is_skipped_not_buffered():
    big = b"<html><body>" + b"<p>lorem ipsum dolor sit amet</p>\n" * 40000 + b"</body></html>"
    m = [_record(0), _record(1, body=big), _record(2)]
    records, bad = _read(io.BytesIO(b"".join(m)), max_payload_bytes=100_000)
    assert not bad and [r.url for r in records] == [f"http://example.com/{i}" for i in range(3)]
    assert records[1].payload is None and records[1].payload_too_large
    assert records[1].payload_bytes == len(big)
    assert records[0].payload is not None and not records[0].payload_too_large


def test_content_encoding_gzip_bomb_is_too_large():
    bomb = gzip.compress(b"\0" * 20_000_000)
    m = _record(0, body=bomb, headers=[("Content-Type", "text/html"), ("Content-Encoding", "gzip")])
    (rec,), bad = _read(io.BytesIO(m), max_payload_bytes=1_000_000)
    assert rec.payload_too_large and rec.payload is None and not bad


def test_chunked_and_deflate_are_undone():
    page = _page(7)
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(page[i:i + 100]), page[i:i + 100])
                       for i in range(0, len(page), 100)) + b"0\r\n\r\n"
    m = _record(0, body=chunked, headers=[("Content-Type", "text/html"),
                                          ("Transfer-Encoding", "chunked")])
    (rec,), _ = _read(io.BytesIO(m))
    assert rec.payload == page
    m = _record(1, body=zlib.compress(page), headers=[("Content-Type", "text/html"),
                                                      ("Content-Encoding", "deflate")])
    (rec,), _ = _read(io.BytesIO(m))
    assert rec.payload == page


def test_bad_content_encoding():
    m = [_record(0), _record(1, body=b"\x1f\x8b\x08\x00garbage-not-gzip",
                             headers=[("Content-Type", "text/html"), ("Content-Encoding", "gzip")]),
         _record(2)]
    got = _urls(iter_records(io.BytesIO(b"".join(m)), max_payload_bytes=MAX))
    assert got == ["http://example.com/0", "bad_content_encoding", "http://example.com/2"]


def test_bad_http_head():
    body_block = b"HTTP/1.1 abc\r\nContent-Type: text/html\r\n\r\n<html></html>"
    buf = io.BytesIO()
    w = WARCWriter(buf, gzip=False)
    w.write_record(w.create_warc_record("http://example.com/x", "response",
                                        payload=io.BytesIO(body_block),
                                        warc_content_type="application/http; msgtype=response"))
    data = _record(0, gz=False) + buf.getvalue() + _record(2, gz=False)
    got = _urls(iter_records(io.BytesIO(data), max_payload_bytes=MAX))
    assert got == ["http://example.com/0", "bad_http_headers", "http://example.com/2"]


def test_arc_synthetic(tmp_path):
    page = b"<html><body>hello</body></html>"
    http = b"HTTP/1.0 200 OK\nContent-Type: text/html\n\n" + page
    filedesc_body = b"1 0 test\nURL IP-address Archive-date Content-type Archive-length\n"
    arc = (b"filedesc://x.arc 0.0.0.0 20140101000000 text/plain %d\n%s\n" % (len(filedesc_body),
                                                                            filedesc_body)
           + b"http://a.example/ 1.2.3.4 20140102030405 text/html %d\n%s\n" % (len(http), http)
           + b"http://b.example/ 1.2.3.4 20140102030405 text/html -5\n" + http + b"\n"
           + b"http://c.example/ 1.2.3.4 20140102030405 text/html %d\n%s\n" % (len(http), http))
    got = _urls(iter_records(io.BytesIO(arc), max_payload_bytes=MAX))
    assert got == ["http://a.example/", "bad_arc_header", "http://c.example/"]
    (rec, *_), _ = _read(io.BytesIO(arc))
    assert rec.warc_date == "2014-01-02T03:04:05Z" and rec.http_status == 200
    assert rec.payload == page and rec.content_type == "text/html"


def test_unreadable_file_and_empty_file(tmp_path):
    _, bad = _read(tmp_path / "missing.warc.gz")
    assert [u.reason for u in bad] == ["unreadable_file"]
    empty = tmp_path / "empty.warc"
    empty.write_bytes(b"")
    assert _read(empty) == ([], [])
    noise = tmp_path / "noise.bin"
    noise.write_bytes(bytes(random.Random(0).randrange(256) for _ in range(50_000)))
    records, bad = _read(noise)
    assert not records and len(bad) >= 1


def test_arc_length_too_big_recovers_next_record():
    http = b"HTTP/1.0 200 OK\nContent-Type: text/html\n\n<html><body>hi</body></html>"
    arc = (b"http://a.example/ 1.2.3.4 20140102030405 text/html %d\n%s\n" % (len(http) + 80, http)
           + b"http://b.example/ 1.2.3.4 20140102030405 text/html %d\n%s\n" % (len(http), http))
    got = _urls(iter_records(io.BytesIO(arc), max_payload_bytes=MAX))
    assert got == ["truncated_record", "http://b.example/"]


def test_unsupported_content_encoding():
    m = [_record(0), _record(1, body=b"\x8b\x02\x80hello\x03",
                             headers=[("Content-Type", "text/html"), ("Content-Encoding", "zstd")]),
         _record(2)]
    got = _urls(iter_records(io.BytesIO(b"".join(m)), max_payload_bytes=MAX))
    assert got == ["http://example.com/0", "unsupported_content_encoding", "http://example.com/2"]


def test_brotli_content_encoding_is_undone():
    import brotli

    page = b"<html><body><p>compressed with brotli</p></body></html>"
    m = [_record(0), _record(1, body=brotli.compress(page),
                             headers=[("Content-Type", "text/html"), ("Content-Encoding", "br")])]
    (_, rec), bad = _read(io.BytesIO(b"".join(m)))
    assert not bad and rec.payload == page
