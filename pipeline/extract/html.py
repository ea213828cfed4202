"""Per-record HTML -> main text (the engines of pipeline/extract/engines.py), and the per-file driver:
one row per record.

Every record of a file becomes exactly one row: `kept` with text, `rejected` with a reason, or
`unreadable` (damaged bytes, reason from the reader). Nothing in one record can stop the file. The
row's `engine` says which extractor wrote its text; with `union`, `text_alt` holds the second one's.
"""
from __future__ import annotations

import logging
import signal
import threading
from typing import Iterator

from pipeline.read.charset import decode_html, looks_binary
from pipeline.read.ids import doc_id
from pipeline.rows import KEPT, REJECTED, UNREADABLE, make_row
from pipeline.extract.engines import EXTRACTORS, TRAFILATURA, UNION, UNION_ORDER, trafilatura_kwargs
from pipeline.extract.settings import ExtractConfig
from pipeline.read.storage import basename, open_input
from pipeline.read.warc import Record, Unreadable, iter_records

# trafilatura and its helpers log every odd page at INFO/WARNING; the reasons go into our rows.
for _name in ("trafilatura", "htmldate", "courlan", "justext", "readability", "charset_normalizer"):
    logging.getLogger(_name).setLevel(logging.ERROR)

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# Labels that say nothing about the content: sniff the payload instead.
_SNIFF_TYPES = frozenset({"", "application/octet-stream", "unk", "unknown", "binary/octet-stream",
                          "application/unknown", "text/plain"})
_HTML_MARKERS = (b"<!doctype html", b"<html", b"<head", b"<body")


class ExtractionTimeout(Exception):
    """An extractor ran past ExtractConfig.timeout_s on one document."""


class _Deadline(TimeoutError):
    """Raised by our SIGALRM handler only; private so nothing else catches it by name."""


def _disarm(state: dict, previous) -> None:
    """Stop the timer and put the old handler back, even if the alarm fires in between: a _Deadline raised here
    before `done` is set used to skip the rest, leaving the 0.2 s interval timer running with our handler, which
    then raised in whatever the (reused) worker process did next, another stage's unit."""
    while True:
        try:
            state["done"] = True        # from here on the handler never raises
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            return
        except _Deadline:
            state["fired"] = True


def _with_deadline(fn, timeout_s: float):
    """Run fn() with a SIGALRM deadline (main thread only; elsewhere without a limit)."""
    if not timeout_s or timeout_s <= 0 or threading.current_thread() is not threading.main_thread():
        return fn()
    state = {"done": False, "fired": False}

    def on_alarm(signum, frame):
        if not state["done"]:
            state["fired"] = True
            raise _Deadline()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        # The interval re-raises if trafilatura swallows the first _Deadline in a broad except.
        signal.setitimer(signal.ITIMER_REAL, timeout_s, 0.2)
        try:
            result = fn()
        finally:
            _disarm(state, previous)
    except _Deadline:
        raise ExtractionTimeout(f"extraction took longer than {timeout_s:g}s") from None
    except Exception:
        if state["fired"]:  # trafilatura wrapped our _Deadline in an exception of its own
            raise ExtractionTimeout(f"extraction took longer than {timeout_s:g}s") from None
        raise
    if state["fired"]:
        raise ExtractionTimeout(f"extraction took longer than {timeout_s:g}s")
    return result


__all__ = ["ExtractionTimeout", "extract_html", "extract_file", "trafilatura_kwargs"]


def extract_html(html: str, url: str | None, cfg: ExtractConfig, engine: str = TRAFILATURA) -> str | None:
    """Main text of one HTML page as plain text by one engine, or None. Raises ExtractionTimeout."""
    extractor = EXTRACTORS[engine]
    return _with_deadline(lambda: extractor(html, url, cfg), cfg.timeout_s)


def _main_text(html: str, url: str | None, cfg: ExtractConfig, engine: str) -> tuple:
    """-> (text, reason, detail) of one engine; reason None means kept."""
    try:
        text = extract_html(html, url, cfg, engine)
    except ExtractionTimeout as e:
        return None, "extraction_timeout", str(e)
    except Exception as e:  # one page must never kill the file
        return None, "extraction_error", f"{type(e).__name__}: {e}"[:200]
    text = (text or "").strip()
    if len(text) < max(cfg.min_text_chars, 1):
        return None, "no_main_text", None
    return text, None, None


def _union_text(html: str, url: str | None, cfg: ExtractConfig) -> tuple:
    """-> (text, text_alt, engine, reason, detail): the first engine's text with the second's beside it,
    or the second's alone when the first found none; rejected only when neither found text."""
    first, second = UNION_ORDER
    text, reason, detail = _main_text(html, url, cfg, first)
    alt, alt_reason, alt_detail = _main_text(html, url, cfg, second)
    if text is not None:
        return text, alt, first, None, None
    if alt is not None:
        return alt, None, second, None, None
    why = f"{second}: {alt_reason}" + (f" ({alt_detail})" if alt_detail else "")
    return None, None, None, reason, (f"{detail}; {why}" if detail else why)[:200]


def looks_like_html(payload: bytes) -> bool:
    head = payload[:2048].lstrip().lower()
    return any(m in head for m in _HTML_MARKERS)


def _row(source: str, path: str, **fields) -> dict:
    return make_row(source=source, input_file=path, **fields)


def _unreadable_row(source: str, path: str, u: Unreadable) -> dict:
    # The basename, not the full path: the same file read from another directory gets the same id.
    ident = doc_id(source, basename(path), u.offset, u.reason, content=b"")
    return _row(source, path, id=ident, status=UNREADABLE, reason=u.reason, detail=u.detail[:200])


def _judge_html(rec: Record, cfg: ExtractConfig, engine: str) -> tuple:
    """-> (text, text_alt, engine, charset, reason, detail); reason None means kept."""
    if rec.http_status is not None and not 200 <= rec.http_status < 300:
        return None, None, None, None, "http_status", str(rec.http_status)
    mime = (rec.content_type or "").split(";", 1)[0].strip().lower()
    if mime not in HTML_TYPES and mime not in _SNIFF_TYPES:
        return None, None, None, None, "not_html", mime[:100]
    if rec.payload_too_large:
        return None, None, None, None, "payload_too_large", f"{rec.payload_bytes} bytes"
    payload = rec.payload
    if not payload or not payload.strip():
        return None, None, None, None, "empty_payload", None
    if looks_binary(payload):
        return None, None, None, None, "binary_payload", None
    if mime not in HTML_TYPES and not looks_like_html(payload):
        return None, None, None, None, "not_html", mime or "no content-type, does not look like HTML"
    decoded = decode_html(payload, rec.content_type)
    if decoded is None:
        return None, None, None, None, "undecodable", None
    html, charset = decoded
    if engine == UNION:
        text, alt, used, reason, detail = _union_text(html, rec.url, cfg)
        return text, alt, used, charset, reason, detail
    text, reason, detail = _main_text(html, rec.url, cfg, engine)
    return text, None, engine if text is not None else None, charset, reason, detail


def _judge_text(rec: Record, cfg: ExtractConfig, engine: str) -> tuple:
    """WET conversion records: the text is already extracted (no engine ran)."""
    if rec.payload_too_large:
        return None, None, None, None, "payload_too_large", f"{rec.payload_bytes} bytes"
    if not rec.payload:
        return None, None, None, None, "empty_payload", None
    text = rec.payload.decode("utf-8", errors="replace").strip()
    if len(text) < max(cfg.min_text_chars, 1):
        return None, None, None, "utf-8", "no_main_text", None
    return text, None, None, "utf-8", None, None


def extract_file(path: str, source: str, fmt: str, cfg: ExtractConfig, start: int = 0,
                 end: int | None = None, engine: str | None = None) -> Iterator[dict]:
    """One row per record of a WARC/ARC ('warc') or WET ('wet') file, or of the byte range
    [start, end) of a gzipped one (see pipeline.read.warc); see ROW_KEYS.

    Records are routed by their type: `conversion` records carry text (WET), `response` and
    `resource` records carry HTML to extract. `fmt` says what the source is expected to hold.
    `engine` (default `cfg.engine`) is the source's extractor (pipeline/extract/engines.py).
    """
    engine = engine or cfg.engine
    if fmt not in ("warc", "wet"):
        raise ValueError(f"extract_file: fmt must be 'warc' or 'wet', got {fmt!r}")
    try:
        f = open_input(path)
    except (OSError, ValueError) as e:  # missing file, or a store that refuses (StorageError)
        yield _unreadable_row(source, path, Unreadable(
            "unreadable_file", f"{type(e).__name__}: {getattr(e, 'strerror', None) or e}", 0))
        return
    with f:
        for item in iter_records(f, max_payload_bytes=cfg.max_payload_bytes, start=start, end=end):
            if isinstance(item, Unreadable):
                yield _unreadable_row(source, path, item)
                continue
            judge = _judge_text if item.record_type == "conversion" else _judge_html
            try:
                text, alt, used, charset, reason, detail = judge(item, cfg, engine)
            except Exception as e:  # a bug on one odd record must not cost the rest of the file
                text, alt, used, charset, reason, detail = (None, None, None, None, "extraction_error",
                                                            f"{type(e).__name__}: {e}"[:200])
            ident = doc_id(source, item.warc_record_id or "", item.url or "", item.warc_date or "",
                           content=item.payload or b"")
            yield _row(source, path, id=ident, text=text, text_alt=alt, engine=used, url=item.url,
                       warc_record_id=item.warc_record_id, warc_date=item.warc_date,
                       status=KEPT if reason is None else REJECTED, reason=reason, detail=detail,
                       content_type=item.content_type, charset=charset,
                       http_status=item.http_status, payload_bytes=item.payload_bytes)
