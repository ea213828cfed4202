"""bytes -> str for HTML payloads: declared charsets first, then UTF-8, then detection.

Order: BOM; charset in the HTTP Content-Type; <meta charset> / <meta http-equiv> / <?xml encoding?>
in the first 4 KB; strict UTF-8; charset_normalizer on a bounded prefix. Declared charsets are tried
strictly, so a wrong label (say utf-8 on latin-1 bytes) falls through to the next step instead of
filling the text with U+FFFD; the declared codec with replacement is only the last resort.
"""
from __future__ import annotations

import codecs
import re

import charset_normalizer

_DETECT_BYTES = 64 * 1024   # charset_normalizer is slow on big inputs
_META_BYTES = 4096

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE: its BOM starts the same way
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# Labels decoded the way browsers do (WHATWG Encoding Standard): latin-1/ascii labels mean
# windows-1252, gb2312/gbk mean gb18030, and so on. Keys are Python's canonical codec names.
_BROWSER_CODEC = {
    "latin-1": "cp1252", "iso8859-1": "cp1252", "ascii": "cp1252",
    "iso8859-9": "cp1254", "iso8859-11": "cp874", "tis-620": "cp874",
    "gb2312": "gb18030", "gbk": "gb18030", "shift_jis": "cp932", "euc_kr": "cp949",
    "big5": "big5hkscs",
    # a page that declares UTF-16 but got this far had no BOM: browsers read it as UTF-8
    "utf-16": "utf-8", "utf-16-le": "utf-8", "utf-16-be": "utf-8",
}
# Codecs that are not text encodings of a web page (or are unsafe to honour, like UTF-7).
_REFUSED = {"utf-7", "unicode-escape", "raw-unicode-escape", "punycode", "idna", "undefined",
            "mbcs", "oem", "charmap", "palmos", "utf-32", "utf-32-le", "utf-32-be"}
# Detection only considers encodings that real web pages use (faster, and no cp775/mac-* surprises).
_WEB_CODECS = ["utf_8", "cp1252", "cp1250", "cp1251", "cp1253", "cp1254", "cp1255", "cp1256",
               "cp1257", "cp1258", "cp874", "iso8859_2", "iso8859_5", "iso8859_7", "iso8859_8",
               "iso8859_15", "koi8_r", "koi8_u", "mac_cyrillic", "gb18030", "big5", "cp932",
               "euc_jp", "iso2022_jp", "cp949", "euc_kr"]
# Common web labels that Python does not know by these names.
_EXTRA_LABELS = {"x-sjis": "cp932", "windows-31j": "cp932", "x-euc-jp": "euc_jp",
                 "x-gbk": "gb18030", "iso-8859-8-i": "iso8859_8", "x-mac-cyrillic": "mac_cyrillic",
                 "x-cp1251": "cp1251", "x-cp1250": "cp1250"}
_SINGLE_BYTE_LEGACY = {"cp1252", "cp1250", "cp1251", "cp1254", "iso8859-15", "iso8859-2"}

_HEADER_CHARSET = re.compile(r"""charset\s*=\s*["']?\s*([\w.:-]+)""", re.I)
_META_CHARSET = re.compile(rb"""<meta[^>]{0,512}?charset\s*=\s*["']?\s*([\w.:-]+)""", re.I)
_XML_ENCODING = re.compile(rb"""^\s*<\?xml[^>]{0,200}?encoding\s*=\s*["']([\w.:-]+)""", re.I)

# Binary sniffing: well-known magic numbers, then a share of control bytes in the first KB.
_BINARY_MAGIC = (b"\x89PNG", b"GIF8", b"\xff\xd8\xff", b"%PDF", b"PK\x03\x04", b"\x1f\x8b",
                 b"RIFF", b"OggS", b"ID3\x03", b"ID3\x04", b"\x00\x00\x01\x00", b"wOFF", b"wOF2",
                 b"\x7fELF", b"7z\xbc\xaf", b"Rar!", b"BZh", b"\xfd7zXZ", b"\x28\xb5\x2f\xfd",
                 b"\x00\x00\x00\x18ftyp", b"\x00\x00\x00\x1cftyp", b"\x00\x00\x00\x20ftyp")
_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 12, 13, 27))  # ESC: ISO-2022-JP


def normalize_charset(label: str | None) -> str | None:
    """A charset label -> the Python codec to decode it with (browser-style), or None."""
    if not label:
        return None
    label = label.strip().strip("\"'").lower()
    if label in ("x-user-defined", "binary", "none"):
        return None
    label = _EXTRA_LABELS.get(label, label)
    try:
        info = codecs.lookup(label)
    except (LookupError, ValueError):
        return None
    if not getattr(info, "_is_text_encoding", True):  # base64, zlib, rot13 ...
        return None
    name = info.name
    if name.replace("_", "-") in _REFUSED:
        return None
    return _BROWSER_CODEC.get(name, name)


def looks_binary(payload: bytes) -> bool:
    """Images, archives, executables, fonts...: magic numbers or many control bytes up front."""
    head = payload[:1024]
    if not head:
        return False
    if head.startswith(tuple(bom for bom, _ in _BOMS)):
        return False
    if head.startswith(_BINARY_MAGIC):
        return True
    nul = head.count(0)
    if nul > 2:
        return True
    controls = len(head) - len(head.translate(None, _CONTROL))
    return controls > 0.1 * len(head)


def _strict(payload: bytes, codec: str | None) -> str | None:
    if not codec:
        return None
    try:
        return payload.decode(codec)
    except (UnicodeDecodeError, LookupError):
        if codec == "cp1252":  # 5 bytes are undefined in cp1252; browsers map them to C1 controls
            return payload.decode("latin-1")
        return None


def _declared_in_html(payload: bytes) -> str | None:
    head = payload[:_META_BYTES]
    m = _XML_ENCODING.match(head) or _META_CHARSET.search(head)
    return m.group(1).decode("ascii", "replace") if m else None


def _header_charset(content_type: str | None) -> str | None:
    m = _HEADER_CHARSET.search(content_type or "")
    return m.group(1) if m else None


def _detect(payload: bytes) -> str | None:
    sample = payload[:_DETECT_BYTES]
    if len(payload) > _DETECT_BYTES:  # do not cut a multi-byte character at the end
        cut = sample.rfind(b"\n")
        if cut > _DETECT_BYTES // 2:
            sample = sample[:cut + 1]
    try:
        matches = list(charset_normalizer.from_bytes(sample, cp_isolation=_WEB_CODECS))
    except Exception:  # a detector failure is "no answer", not a crash
        matches = []
    if matches:
        best = matches[0]
        # Near-ties between Western codepages are common on short text: prefer windows-1252,
        # the browsers' default for unlabelled pages.
        for m in matches[:4]:
            if m.encoding == "cp1252" and m.chaos <= best.chaos + 0.01 \
                    and m.coherence >= best.coherence - 0.05:
                return "cp1252"
        return normalize_charset(best.encoding)
    # No answer: mostly-ASCII bytes still read fine as windows-1252 (the browsers' fallback);
    # a sample dominated by high bytes is not text we can trust.
    high = len(sample) - len(sample.translate(None, bytes(range(128, 256))))
    return "cp1252" if high <= 0.3 * len(sample) else None


def decode_html(payload: bytes, content_type: str | None) -> tuple[str, str] | None:
    """Decode an HTML payload. Returns (text, codec used) or None for binary/undecodable bytes."""
    if not payload:
        return "", "utf-8"
    for bom, codec in _BOMS:
        if payload.startswith(bom):
            return payload[len(bom):].decode(codec, errors="replace"), codec
    if looks_binary(payload):
        return None

    declared = [c for c in (normalize_charset(_header_charset(content_type)),
                            normalize_charset(_declared_in_html(payload))) if c]
    for codec in declared:
        # Servers often label UTF-8 pages as ISO-8859-1 by default. Valid UTF-8 with non-ASCII
        # bytes is almost never legacy text by accident, so UTF-8 wins over such a label.
        if codec in _SINGLE_BYTE_LEGACY and not payload.isascii():
            text = _strict(payload, "utf-8")
            if text is not None:
                return text, "utf-8"
        text = _strict(payload, codec)
        if text is not None:
            return text, codec

    text = _strict(payload, "utf-8")
    if text is not None:
        return text, "utf-8"

    codec = _detect(payload)
    if codec:
        return payload.decode(codec, errors="replace"), codec
    if declared:
        return payload.decode(declared[0], errors="replace"), declared[0]
    return None
