"""Stable document identity: a hash of provenance and content, never of a partition position."""
import hashlib


def doc_id(source: str, *provenance: object, content: bytes | str = b"") -> str:
    """Same source, provenance and content give the same id on any executor, in any run."""
    h = hashlib.sha256()
    for part in (source, *provenance):
        h.update(b"" if part is None else str(part).encode("utf-8", "surrogatepass"))
        h.update(b"\x1f")  # unit separator: ("ab", "c") and ("a", "bc") must differ
    if isinstance(content, str):
        content = content.encode("utf-8", "surrogatepass")
    h.update(hashlib.sha256(content).digest())
    return h.hexdigest()[:32]
