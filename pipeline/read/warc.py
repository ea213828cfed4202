"""A streaming WARC/ARC reader that turns bad bytes into `Unreadable` items instead of exceptions.

Three layers:
  _Source  raw file -> decompressed chunks. Gzip members are chained as one continuous stream (so
           whole-file gzip and members split at odd places both work); a corrupt or truncated member
           puts up a *barrier*: reads stop short there until the parser calls `resume()`. A member's
           output is held until its CRC checks (up to _MEMBER_HOLD bytes: one record per member, the
           usual layout), so a corrupt member yields nothing and the reader resynchronises on the
           next member after its first byte. A member whose end is damaged (its last deflate codes,
           CRC or length) may not fail where it ends: its stream runs on into the members after it.
           If it fails there, or the file ends inside it while a member header follows its first
           byte, it is one `corrupt_gzip` and reading resumes at that header; only a damaged last
           member reads as `truncated_gzip`, like a file cut short. A member too big to hold (a record
           over _MEMBER_HOLD, whole-file gzip) streams, but keeps the same promise for a damaged end:
           its last _TAIL_HOLD bytes of output wait for its CRC, and from the first member header in
           its input that decodes (where a damaged stream runs on into the next member) everything
           waits, so a damaged end drops the record it cuts short and resumes at that header. (A
           whole-file gzip cut short so loses the records of its last _TAIL_HOLD bytes, unchecked.)
  _Stream  a small buffer over _Source: readline/read/skip/peek/unread, with the decompressed offset.
  iter_records  the record parser: WARC headers (or ARC header lines), the HTTP head, the body.
           After a bad record it resynchronises on the next `WARC/1.` line (or ARC header line).

Nothing is read whole: payloads above `max_payload_bytes` are skipped without buffering.

A gzipped WARC can be read in byte ranges (work units of one big file): a range owns the records
whose gzip member starts inside it and begins with `WARC/`. `find_record_member` finds the first
such member at or after an offset with a short scan, and the reader of the range before stops at
that same member, so every record is read by exactly one range, whole.
"""
from __future__ import annotations

import os
import re
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import BinaryIO, Iterator

try:  # a pinned dependency; without it `br` bodies are counted as unsupported_content_encoding
    import brotli as _brotli  # type: ignore
except ImportError:  # pragma: no cover - depends on the environment
    _brotli = None

YIELDED_TYPES = frozenset({"response", "resource", "conversion"})

_RAW_CHUNK = 1 << 16        # compressed bytes read per call
_OUT_CHUNK = 1 << 20        # most decompressed bytes produced per call (bounds memory on gzip bombs)
_MAX_HEADER_BYTES = 1 << 16  # a WARC or HTTP head larger than this is not a head
_MEMBER_HOLD = 8 << 20     # a member's output is held until its CRC checks, up to this many bytes
_TAIL_HOLD = 256 << 10     # past that, its last output bytes still wait for the CRC (40 damaged deflate bytes
                           # give at most 40 x 8 codes x 258 bytes = 82 KB of wrong output)
_GZIP_MAGIC = b"\x1f\x8b\x08"
_PADDING = b"\x00\r\n\t "


@dataclass
class Record:
    record_type: str
    url: str | None
    warc_record_id: str | None
    warc_date: str | None
    http_status: int | None
    content_type: str | None
    headers: dict = field(default_factory=dict)
    payload: bytes | None = None
    payload_bytes: int = 0
    payload_too_large: bool = False
    offset: int = 0


@dataclass
class Unreadable:
    reason: str
    detail: str
    offset: int | str  # in gzip files "member file offset+offset inside": the same however read


class _Source:
    """Decompressed chunks from a raw file; gzip is detected by magic bytes, not by the file name.

    `base` is the file offset `f` is positioned at; with `end`, the source ends before the first gzip
    member at or after `end` that starts a record (the next range's first)."""

    def __init__(self, f: BinaryIO, base: int = 0, end: int | None = None):
        self._f = f
        self._end = end
        self._read_total = base     # file offset just past the bytes read so far
        self.produced = 0           # decompressed bytes handed out so far
        self.members: list[tuple[int, int]] = []  # (decompressed start, file offset) of each member
        self._raw = b""            # input not yet handed to the decompressor
        self._d = None             # zlib decompressobj of the current gzip member
        self._held: list[bytes] = []  # its output so far, not handed out until the member checks
        self._held_n = 0
        self._member_raw: bytearray | None = None  # its compressed bytes so far (None: streaming)
        self._from_header = False  # streaming, held again from a member header in its input (_member_raw's start)
        self._scanned = 0          # streaming: file offset up to which the input was searched for member headers
        self._header_at = -1       # ... and the offset of the member header found there
        self._resyncing = False    # after an error, stay quiet until a member decodes again
        self.error: tuple[str, str] | None = None  # pending barrier
        self.eof = False
        head = self._read_raw()
        self._raw = head
        self.gzip = head[:2] == _GZIP_MAGIC[:2]
        if not self.gzip and not head.lstrip().startswith((b"WARC/", b"filedesc:")):
            self.gzip = _junk_then_gzip_record(head)

    def _read_raw(self) -> bytes:
        try:
            data = self._f.read(_RAW_CHUNK)
            self._read_total += len(data)
            return data
        except OSError as e:  # a read error mid-file ends the file, with a reason
            self._fail("unreadable_file", f"read error: {e}")
            self.eof = True
            return b""

    def _fail(self, reason: str, detail: str) -> None:
        if not self._resyncing and self.error is None:
            self.error = (reason, detail)
        self._resyncing = True

    def resume(self) -> tuple[str, str] | None:
        err, self.error = self.error, None
        return err

    def read_chunk(self) -> bytes:
        """Next decompressed bytes; b'' at EOF or at a barrier (then `self.error` is set)."""
        if self.error is not None or self.eof:
            return b""
        if not self.gzip:
            data, self._raw = (self._raw, b"") if self._raw else (self._read_raw(), b"")
            if not data:
                self.eof = True
            self.produced += len(data)
            return data
        while self.error is None and not self.eof:
            if not self._raw:
                self._raw = self._read_raw()
                if not self._raw:
                    if self._d is not None and self._member_raw is not None \
                            and (self._from_header or _next_member(self._member_raw, 1) is not None):
                        # The member's end (the last deflate codes, its CRC or length) is damaged, so its
                        # deflate stream ran on into the members after it until the file ended: drop it
                        # and resume after its first byte (or at the member header it ran into, for a
                        # streamed member), as for any corrupt member.
                        self._raw = self._drop_member()
                        self._fail("corrupt_gzip", "gzip member does not end: its deflate data or trailer is "
                                                   "damaged")
                        continue
                    if self._d is not None:  # EOF inside the last member: unchecked output gives nothing
                        self._drop_member()
                        self._fail("truncated_gzip", "file ends inside a gzip member")
                        self.eof = True
                        return b""
                    self.eof = True
                    break
            if self._d is None:
                if not self._start_member():
                    break
                self._held, self._held_n, self._member_raw, self._from_header = [], 0, bytearray(), False
            streaming = self._member_raw is None
            # a streamed member's input is fed up to the next member header in it, which may be where it ends
            data, rest = self._split_at_header() if streaming else (self._raw, b"")
            self._raw = b""
            try:
                out = self._d.decompress(data, _OUT_CHUNK)
            except zlib.error as e:
                # Drop this member (and what it gave, if held); the next may start after its first byte.
                self._raw = self._drop_member(data) + rest
                self._fail("corrupt_gzip", f"gzip: {e}")
                continue
            done = self._d.eof
            left = self._d.unused_data if done else self._d.unconsumed_tail
            self._raw = left + rest if rest else left
            if out:
                self._held.append(out)
                self._held_n += len(out)
            if done:  # the CRC and length checked: the member's output is sound
                self._d, self._member_raw, self._from_header = None, None, False
                self._resyncing = False
                got = self._release()
                if got:
                    return got
                continue
            if streaming:
                got = self._release(_TAIL_HOLD)
                if rest and not left:
                    # Its input reached a member header without the member ending: either a healthy member
                    # goes on past bytes that look like one, or its end is damaged and the stream runs on
                    # into the next member. Hold everything from here until it checks.
                    self._member_raw, self._from_header = bytearray(), True
                if got:
                    self._resyncing = False
                    return got
                continue
            self._member_raw += data[:len(data) - len(left)]
            if self._held_n > _MEMBER_HOLD or len(self._member_raw) > _MEMBER_HOLD:
                # too big to hold (a huge record, whole-file gzip): stream the rest, its last bytes still held
                self._member_raw, self._from_header = None, False
                got = self._release(_TAIL_HOLD)
                if got:
                    return got
        return b""

    def _release(self, keep: int = 0) -> bytes:
        """Hand out the current member's held output but (whole chunks of) its last `keep` bytes."""
        out = []
        while self._held and self._held_n - len(self._held[0]) >= keep:
            chunk = self._held.pop(0)
            self._held_n -= len(chunk)
            out.append(chunk)
        got = b"".join(out)
        self.produced += len(got)
        return got

    def _drop_member(self, data: bytes = b"") -> bytes:
        """Forget the current member, damaged, and its held output; the input to resume at: after its first byte,
        or at the member header a streamed member ran into (or after the first byte of the failing input)."""
        if self._member_raw is not None:
            resume = bytes(self._member_raw + data)[0 if self._from_header else 1:]
        else:
            resume = data[1:]
        self._d, self._held, self._held_n, self._member_raw, self._from_header = None, [], 0, None, False
        return resume

    def _split_at_header(self) -> tuple[bytes, bytes]:
        """A streamed member's input: (self._raw up to the first gzip member header in it that decodes, the rest
        from that header on), reading ahead far enough to see a whole header and to judge it."""
        raw = self._raw
        i = max(0, self._scanned - (self._read_total - len(raw)))
        while True:
            i = raw.find(_GZIP_MAGIC, i)
            if i < 0:
                if raw[-2:].endswith(b"\x1f") or raw[-2:] == b"\x1f\x8b":   # a header may start in the last bytes
                    more = self._read_raw()
                    if more:
                        i, raw = max(len(raw) - 2, 0), raw + more
                        continue
                self._scanned = self._read_total
                return raw, b""
            if len(raw) - i < 4096:
                more = self._read_raw()
                if more:
                    raw += more
                    continue
            at = self._read_total - len(raw) + i
            if at == self._header_at or _header_decodes(raw[i:i + 4096]):
                self._scanned = self._header_at = at
                return raw[:i], raw[i:]
            i += 1

    def _starts_record(self) -> bool:
        """Does the gzip member at the head of self._raw begin with a WARC record?"""
        while len(self._raw) < 1024:
            more = self._read_raw()
            if not more:
                break
            self._raw += more
        return _member_starts_record(self._raw)

    def locate(self, pos: int) -> int | str:
        """A position that does not depend on where reading started: the file offset of the gzip
        member holding decompressed offset `pos` plus the offset inside it ("member+delta")."""
        if not self.gzip:
            return pos
        for start, offset in reversed(self.members):
            if start <= pos:
                return f"{offset}+{pos - start}"
        return pos

    def _start_member(self) -> bool:
        """Find the next gzip header in self._raw (reading more as needed) and open a member.

        Non-gzip bytes before it are reported once (zero padding and blank lines are tolerated).
        Returns False at EOF or when a barrier was put up.
        """
        while True:
            if self._raw.startswith(_GZIP_MAGIC):
                offset = self._read_total - len(self._raw)
                if self._end is not None and offset >= self._end and self._starts_record():
                    self._raw = b""
                    self.eof = True  # the next range's first record
                    return False
                self.members.append((self.produced, offset))
                self._d = zlib.decompressobj(31)
                return True
            if len(self._raw) < len(_GZIP_MAGIC):
                more = self._read_raw()
                if not more:
                    if self._raw.strip(_PADDING):
                        self._fail("corrupt_gzip", "trailing non-gzip data")
                    self._raw = b""
                    self.eof = True
                    return False
                self._raw += more
                continue
            i = self._raw.find(_GZIP_MAGIC)
            cut = i if i >= 0 else len(self._raw) - 2  # keep a tail that may begin a header
            junk, self._raw = self._raw[:cut], self._raw[cut:]
            if junk.strip(_PADDING):
                self._fail("corrupt_gzip", f"{len(junk)} bytes of non-gzip data")
                if self.error is not None:
                    return False


def _header_decodes(raw: bytes | bytearray) -> bool:
    """Do these bytes (4 KiB from a gzip magic) decode without error and give output? A gzip magic by chance
    inside compressed data fails within a few bytes: reserved flags, a distance back past the start."""
    try:
        return bool(zlib.decompressobj(31).decompress(bytes(raw)))
    except zlib.error:
        return False


def _next_member(raw: bytes | bytearray, start: int) -> int | None:
    """Offset of the first gzip member header at or after `start` whose first 4 KiB decode without error, or
    None."""
    i = start
    while (i := raw.find(_GZIP_MAGIC, i)) >= 0:
        if _header_decodes(raw[i:i + 4096]):
            return i
        i += 1
    return None


def _member_starts_record(raw: bytes) -> bool:
    try:
        start = zlib.decompressobj(31).decompress(raw[:4096], 16)
    except zlib.error:
        return False
    return start.startswith(b"WARC/")


def find_record_member(f: BinaryIO, start: int, end: int | None) -> int | None:
    """File offset of the first gzip member at or after `start` (and before `end`) that begins a
    WARC record, or None. Reads forward from `start` only; a false gzip magic inside compressed data
    fails to decode to `WARC/` and is passed over."""
    f.seek(start)
    buf, buf_off = b"", start
    while True:
        chunk = f.read(1 << 20)
        buf += chunk
        i = 0
        while True:
            j = buf.find(_GZIP_MAGIC, i)
            if j < 0 or (end is not None and buf_off + j >= end):
                break
            if len(buf) - j < 4096 and chunk:  # need more bytes to judge this candidate
                break
            if _member_starts_record(buf[j:j + 4096]):
                return buf_off + j
            i = j + 1
        if j >= 0 and end is not None and buf_off + j >= end:
            return None
        if not chunk:
            return None
        keep = j if j >= 0 else max(len(buf) - 2, 0)
        buf, buf_off = buf[keep:], buf_off + keep


def _junk_then_gzip_record(head: bytes) -> bool:
    """Junk before the first gzip member still makes a gzip file, if a member there holds a
    record (a gzip magic inside some plain WARC payload must not switch the mode)."""
    i = head.find(_GZIP_MAGIC)
    if i < 0:
        return False
    try:
        start = zlib.decompressobj(31).decompress(head[i:], 64)
    except zlib.error:
        return False
    return start.lstrip().startswith((b"WARC/", b"filedesc:"))


class _Stream:
    """A read buffer over _Source with the decompressed offset `pos`."""

    def __init__(self, src: _Source):
        self.src = src
        self._buf = b""
        self._i = 0
        self.pos = 0

    def _fill(self) -> bool:
        chunk = self.src.read_chunk()
        if not chunk:
            return False
        self._buf = self._buf[self._i:] + chunk
        self._i = 0
        return True

    def peek(self, n: int) -> bytes:
        while len(self._buf) - self._i < n and self._fill():
            pass
        return self._buf[self._i:self._i + n]

    def readline(self, limit: int = _MAX_HEADER_BYTES) -> bytes:
        """One line including its b'\\n', or at most `limit` bytes, or what is left before EOF."""
        while True:
            j = self._buf.find(b"\n", self._i, self._i + limit)
            if j >= 0:
                end = j + 1
                break
            if len(self._buf) - self._i >= limit:
                end = self._i + limit
                break
            if not self._fill():
                end = len(self._buf)
                break
        line = self._buf[self._i:end]
        self._i = end
        self.pos += len(line)
        return line

    def read(self, n: int) -> bytes:
        """Up to n bytes; fewer only at EOF or at a barrier."""
        have = len(self._buf) - self._i
        if have >= n:
            out = self._buf[self._i:self._i + n]
            self._i += n
            self.pos += n
            return out
        parts = [self._buf[self._i:]]
        self._buf, self._i = b"", 0
        need = n - have
        while need > 0:
            chunk = self.src.read_chunk()
            if not chunk:
                break
            if len(chunk) > need:
                self._buf = chunk[need:]
                chunk = chunk[:need]
            parts.append(chunk)
            need -= len(chunk)
        out = b"".join(parts)
        self.pos += len(out)
        return out

    def skip(self, n: int) -> int:
        """Discard up to n bytes without keeping them; returns how many were skipped."""
        have = len(self._buf) - self._i
        if have >= n:
            self._i += n
            self.pos += n
            return n
        self._buf, self._i = b"", 0
        done = have
        while done < n:
            chunk = self.src.read_chunk()
            if not chunk:
                break
            if done + len(chunk) > n:
                self._buf = chunk[n - done:]
                chunk = chunk[:n - done]
            done += len(chunk)
        self.pos += done
        return done

    def unread(self, data: bytes) -> None:
        self._buf = data + self._buf[self._i:]
        self._i = 0
        self.pos -= len(data)

    def skip_blank(self) -> None:
        """Skip the blank lines between records (anything else there is reported as junk)."""
        while True:
            chunk = self.peek(4096)
            n = len(chunk) - len(chunk.lstrip(b"\r\n"))
            if n:
                self.skip(n)
            if not chunk or n < len(chunk):
                return

    def scan_to(self, marker: bytes) -> int:
        """Discard bytes up to the next occurrence of `marker`; returns the count. (Not only at a
        line start: junk glued to the next record must not cost that record.)"""
        skipped = 0
        needle = marker
        window_size = 1 << 16
        while True:
            window = self.peek(window_size)
            j = window.find(needle)
            if j >= 0:
                return skipped + self.skip(j)
            if len(window) < window_size:  # EOF or a barrier: nothing more to scan now
                return skipped + self.skip(len(window))
            skipped += self.skip(len(window) - len(needle))


# ---------------------------------------------------------------------------------------------
# header helpers

def _parse_fields(lines: list[bytes]) -> dict[str, str]:
    """`Name: value` lines (with folded continuation lines) -> {lower-case name: value}."""
    out: dict[str, str] = {}
    last = None
    for raw in lines:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not line:
            continue
        if line[0] in " \t" and last is not None:
            out[last] += " " + line.strip()
            continue
        name, sep, value = line.partition(":")
        if not sep:
            continue  # lenient: ignore junk lines inside a head
        name = name.strip().lower()
        value = value.strip()
        out[name] = f"{out[name]}, {value}" if name in out else value
        last = name
    return out


def _clean_url(url: str | None) -> str | None:
    if url is None:
        return None
    url = url.strip()
    if url.startswith("<") and url.endswith(">"):  # WARC/0.x style
        url = url[1:-1]
    return url.replace(" ", "%20") or None


_ARC_DATE = re.compile(rb"^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})")


def _arc_date(raw: bytes) -> str | None:
    m = _ARC_DATE.match(raw)
    if not m:
        return None
    y, mo, d, h, mi, s = (x.decode() for x in m.groups())
    return f"{y}-{mo}-{d}T{h}:{mi}:{s}Z"


def _dechunk(body: bytes) -> bytes | None:
    """Undo chunked transfer-encoding; None when the body is not actually chunked."""
    out = []
    i = 0
    n = len(body)
    while i < n:
        j = body.find(b"\n", i, i + 1024)
        if j < 0:
            return None if not out else b"".join(out)  # truncated mid chunk-size line
        size_s = body[i:j].split(b";", 1)[0].strip()
        try:
            size = int(size_s, 16)
        except ValueError:
            return None if not out else b"".join(out)
        if size == 0:
            break
        out.append(body[j + 1:j + 1 + size])
        i = j + 1 + size
        if body[i:i + 2] == b"\r\n":
            i += 2
        elif body[i:i + 1] == b"\n":
            i += 1
    return b"".join(out)


def _decode_content(body: bytes, encoding: str, limit: int) -> bytes | None:
    """Undo gzip/deflate/br content-encoding. Partial streams (truncated captures) are accepted.

    Returns None when the bytes cannot be decoded. Output is capped at limit + 1 bytes so that a
    decompression bomb shows up as "too large" instead of eating memory.
    """
    encs = [e.strip() for e in encoding.lower().split(",") if e.strip() and e.strip() != "identity"]
    for enc in reversed(encs):  # codings are listed in the order they were applied
        if enc in ("gzip", "x-gzip", "deflate"):
            wbits = (47, -15) if enc == "deflate" else (31,)  # deflate: zlib wrapper or raw
            for wb in wbits:
                d = zlib.decompressobj(wb)
                try:
                    out = d.decompress(body, limit + 1)
                except zlib.error:
                    continue
                if out or d.eof:
                    break
            else:
                return None
            body = out
        elif enc == "br" and _brotli is not None:
            try:
                body = _brotli.decompress(body)
            except Exception:
                return None
        else:
            return None  # unknown coding (or br without a decoder)
    return body


def _parse_http_head(head: bytes) -> tuple[int | None, dict[str, str]] | None:
    lines = head.split(b"\n")
    parts = lines[0].split(None, 2)
    try:
        status = int(parts[1])
    except (IndexError, ValueError):
        return None
    if not 100 <= status <= 999:
        return None
    return status, _parse_fields(lines[1:])


# ---------------------------------------------------------------------------------------------
# the parser

class _Parser:
    def __init__(self, stream: _Stream, max_payload_bytes: int):
        self.s = stream
        self.max = max_payload_bytes
        self.arc = False
        self.skipped: Counter = Counter()

    # -- shared steps

    def _short(self, offset: int, what: str) -> Unreadable:
        """A read came up short: a gzip barrier if there is one, else the file ended."""
        err = self.s.src.resume()
        if err:
            return Unreadable(err[0], f"{err[1]} (inside {what})", offset)
        return Unreadable("truncated_record", f"file ends inside {what}", offset)

    def _inner_record_start(self, block: bytes | None) -> bool:
        """Called when a block was cut short or is followed by junk. If the next record header
        shows up inside the block, the record was shorter than its Content-Length and swallowed
        the start of the next one: push that part back so the next record still comes through."""
        if not block:
            return False
        if not self.arc:
            j = block.find(b"\nWARC/1.", 1)
        else:  # the first line inside the block that parses as an ARC header line
            j = block.find(b"\n", 1)
            while j >= 0:
                end = block.find(b"\n", j + 1)
                if _arc_fields(block[j + 1:end if end >= 0 else len(block)]) is not None:
                    break
                j = end
        if j < 0:
            return False
        self.s.unread(block[j + 1:])
        return True

    def _followed_by_record(self) -> bool:
        """After a block: do the next non-blank bytes start a record (or is it EOF/a barrier)?"""
        self.s.skip_blank()
        if self.arc:
            line = self.s.peek(4096).split(b"\n", 1)[0]
            return not line or _arc_fields(line) is not None
        nxt = self.s.peek(5)
        return not nxt or nxt == b"WARC/"

    def _read_block(self, n: int, offset: int, what: str, prefix: bytes = b""):
        """Read n bytes of a block. Returns (bytes, None) or (None, Unreadable)."""
        data = self.s.read(n)
        if len(data) == n:
            if not self._followed_by_record() and self._inner_record_start(prefix + data):
                return None, Unreadable("truncated_record",
                                        f"{what} ends before its declared length", offset)
            # Junk after a complete block is reported by the resync, the record itself is kept.
            return data, None
        return None, self._cut_short(prefix + data, offset, what)

    def _cut_short(self, partial: bytes, offset: int, what: str) -> Unreadable:
        """A read stopped early: at a gzip barrier, or at EOF (maybe a wrong Content-Length)."""
        err = self.s.src.resume()
        if err:  # the bytes after a gzip barrier are unrelated to this record: no rescan
            return Unreadable(err[0], f"{err[1]} (inside {what})", offset)
        self._inner_record_start(partial)
        return Unreadable("truncated_record", f"file ends inside {what}", offset)

    def _skip_block(self, n: int, offset: int, what: str) -> Unreadable | None:
        if self.s.skip(n) == n:
            return None
        return self._short(offset, what)

    def _read_http_head(self, block_len: int, offset: int):
        """Read an HTTP head line by line, bounded by the block and by _MAX_HEADER_BYTES.
        Returns (head bytes, (status, headers) or None, Unreadable or None)."""
        parts = []
        budget = min(block_len, _MAX_HEADER_BYTES)
        ended = False
        while budget > 0:
            line = self.s.readline(budget)
            parts.append(line)
            budget -= len(line)
            if line in (b"\r\n", b"\n"):
                ended = True
                break
            if not line.endswith(b"\n"):
                break
        head = b"".join(parts)
        if not ended and budget > 0 and len(head) < block_len:  # EOF or barrier inside the head
            return head, None, self._cut_short(head, offset, "HTTP headers")
        # A head that fills the whole block (no blank line, no body) is accepted too.
        parsed = _parse_http_head(head) if ended or len(head) == block_len else None
        return head, parsed, None

    def _body(self, rtype: str, url, rid, date, offset, block_len, warc_ct, http: bool) -> Iterator:
        """Read one record block of `block_len` bytes and yield Record/Unreadable."""
        s = self.s
        if rtype not in YIELDED_TYPES:
            self.skipped[rtype] += 1
            if block_len <= self.max:  # small: read it, so a wrong length can be recovered from
                _, bad = self._read_block(block_len, offset, f"{rtype} record")
            else:
                bad = self._skip_block(block_len, offset, f"{rtype} record")
            if bad:
                yield bad
            return

        status, headers, content_type = None, {}, warc_ct
        head = b""
        if http and s.peek(5) == b"HTTP/":
            head, parsed, bad = self._read_http_head(block_len, offset)
            if bad:
                yield bad
                return
            if parsed is None:
                bad = self._skip_block(block_len - len(head), offset, "HTTP body")
                yield bad or Unreadable("bad_http_headers", "no valid HTTP head in the block", offset)
                return
            status, headers = parsed
            content_type = headers.get("content-type")

        body_len = block_len - len(head)
        too_large = body_len > self.max
        body = None
        if too_large:
            bad = self._skip_block(body_len, offset, "record body")
            if not bad:
                self._followed_by_record()
        else:
            body, bad = self._read_block(body_len, offset, "record body", head)
        if bad:
            yield bad
            return

        if body is not None and headers:
            body, bad = self._undo_encodings(body, headers, url, offset)
            if bad:
                yield bad
                return
            if len(body) > self.max:
                body, too_large = None, True
        yield Record(rtype, url, rid, date, status, content_type, headers, body, body_len,
                     too_large, offset)

    def _undo_encodings(self, body: bytes, headers: dict, url, offset: int):
        if "chunked" in headers.get("transfer-encoding", "").lower():
            dechunked = _dechunk(body)
            if dechunked is not None:  # some writers keep the header but store it de-chunked
                body = dechunked
        ce = headers.get("content-encoding", "").strip().lower()
        if not ce or ce == "identity":
            return body, None
        decoded = _decode_content(body, ce, self.max)
        if decoded is not None:
            return decoded, None
        if not set(ce.replace(" ", "").split(",")) <= {"gzip", "x-gzip", "deflate", "identity"}:
            return None, Unreadable("unsupported_content_encoding", f"{ce!r} at {url}", offset)
        if body[:2] == b"\x1f\x8b" or body[:1] == b"\x78":
            return None, Unreadable("bad_content_encoding", f"cannot undo {ce!r} at {url}", offset)
        return body, None  # the server said gzip/deflate but sent plain bytes: keep them

    # -- WARC

    def _warc_record(self) -> Iterator:
        s = self.s
        offset = s.pos
        lines = []
        size = 0
        while True:
            line = s.readline(_MAX_HEADER_BYTES)
            size += len(line)
            if not line.endswith(b"\n"):
                if size >= _MAX_HEADER_BYTES:
                    yield Unreadable("bad_record_header", "WARC header too long", offset)
                else:
                    yield self._short(offset, "WARC header")
                return
            if line in (b"\r\n", b"\n"):
                break
            lines.append(line)
            if size >= _MAX_HEADER_BYTES:
                yield Unreadable("bad_record_header", "WARC header too long", offset)
                return
        h = _parse_fields(lines[1:])
        try:
            length = int(h.get("content-length", ""))
            if length < 0:
                raise ValueError
        except ValueError:
            yield Unreadable("bad_record_header",
                             f"bad Content-Length {h.get('content-length')!r}", offset)
            return
        rtype = h.get("warc-type", "").lower()
        if not rtype:
            yield Unreadable("bad_record_header", "no WARC-Type", offset)
            s.skip(length)
            return
        warc_ct = h.get("content-type")
        http = rtype == "response" and (
            "application/http" in (warc_ct or "").lower() or s.peek(5) == b"HTTP/")
        yield from self._body(rtype, _clean_url(h.get("warc-target-uri")), h.get("warc-record-id"),
                              h.get("warc-date"), offset, length, warc_ct, http)

    # -- ARC

    def _arc_record(self) -> Iterator:
        s = self.s
        offset = s.pos
        line = s.readline(4096)
        f = _arc_fields(line)
        if f is None:
            yield Unreadable("bad_arc_header", line[:80].decode("utf-8", "replace").strip(), offset)
            return
        url, date, ctype, length = f
        if length is None:
            yield Unreadable("bad_arc_header", f"bad length in ARC header for {url}", offset)
            return
        if url.startswith("filedesc:"):
            yield from self._body("warcinfo", url, None, date, offset, length, ctype, False)
            return
        http = s.peek(5) == b"HTTP/"
        yield from self._body("response", _clean_url(url), None, date, offset, length, ctype, http)

    # -- driver

    def records(self) -> Iterator:
        """Each damaged stretch gives one Unreadable: after one, the scan to the next record
        start is silent (`quiet`) instead of reporting the skipped bytes a second time."""
        s = self.s
        first = True
        quiet = False
        while True:
            s.skip_blank()
            start = s.peek(16)
            if not start:
                err = s.src.resume()
                if err:  # a barrier between records
                    yield Unreadable(err[0], err[1], s.pos)
                    quiet = True
                    continue
                return
            if first:  # ARC files start with a filedesc:// line, but accept any ARC header line
                self.arc = _arc_fields(s.peek(4096).split(b"\n", 1)[0]) is not None
                first = False
            if start.startswith(b"WARC/"):
                self.arc = False
                items = self._warc_record()
            elif self.arc and _arc_fields(s.peek(4096).split(b"\n", 1)[0]) is not None:
                items = self._arc_record()
            else:
                items = self._resync(quiet)
            quiet = False
            for item in items:
                if isinstance(item, Unreadable):
                    quiet = True
                yield item

    def _resync(self, quiet: bool) -> Iterator:
        s = self.s
        offset = s.pos
        if self.arc:
            skipped = 0
            while True:
                line = s.peek(4096).split(b"\n", 1)[0]
                if not s.peek(1) or _arc_fields(line) is not None or line.startswith(b"WARC/"):
                    break
                skipped += len(s.readline(4096))
        else:
            skipped = s.scan_to(b"WARC/1.")
        if not quiet:
            yield Unreadable("bad_record_header", f"skipped {skipped} bytes that start no record",
                             offset)


_URLISH = re.compile(rb"^[a-z][a-z0-9+.-]*:\S+$", re.I)


def _arc_fields(line: bytes):
    """An ARC header line -> (url, iso date, content type, length or None); None if not one."""
    parts = line.strip().split(b" ")
    if len(parts) not in (5, 10) or not _URLISH.match(parts[0]):
        return None
    if not parts[2][:8].isdigit():
        return None
    try:
        length = int(parts[-1])
        if length < 0:
            length = None
    except ValueError:
        length = None
    return (parts[0].decode("utf-8", "replace"), _arc_date(parts[2]),
            parts[3].decode("latin-1") or None, length)


class RecordIterator:
    """Iterator over Record/Unreadable with a `skipped` Counter of record types not yielded."""

    def __init__(self, source, *, max_payload_bytes: int, start: int = 0, end: int | None = None):
        self.skipped: Counter = Counter()
        self._gen = self._run(source, max_payload_bytes, start, end)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._gen)

    def _run(self, source, max_payload_bytes: int, start: int, end: int | None):
        opened = None
        if isinstance(source, (str, os.PathLike)):
            try:
                opened = open(source, "rb")
            except OSError as e:
                yield Unreadable("unreadable_file", f"{type(e).__name__}: {e.strerror or e}", 0)
                return
            source = opened
        try:
            if start > 0:  # a later range of a gzipped WARC: begin at its first record's member
                start = find_record_member(source, start, end)
                if start is None:
                    return
                source.seek(start)
            src = _Source(source, base=start, end=end)
            parser = _Parser(_Stream(src), max_payload_bytes)
            self.skipped = parser.skipped
            for item in parser.records():
                if isinstance(item, Unreadable):
                    item.offset = src.locate(item.offset)
                yield item
        finally:
            if opened is not None:
                opened.close()


def iter_records(fileobj_or_path, *, max_payload_bytes: int, start: int = 0,
                 end: int | None = None) -> RecordIterator:
    """Stream the response/resource/conversion records of a WARC or ARC file (gzipped or not).

    Yields `Record` for each readable record and `Unreadable` for each damaged stretch; never raises
    for bad data. `.skipped` counts the record types passed over (request, metadata, ...).
    With `start`/`end` (byte offsets of a gzipped WARC, file seekable) only the records of that
    range: those whose gzip member starts in [start, end) and begins with `WARC/`.
    """
    return RecordIterator(fileobj_or_path, max_payload_bytes=max_payload_bytes, start=start, end=end)
