"""Exact dedup key: documents that differ only in case, whitespace or punctuation are one document."""
import hashlib
import re
import unicodedata

_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


def exact_key_text(text: str) -> str:
    """The text as the exact-dedup key sees it: NFKC, case-folded, words joined by single spaces."""
    folded = unicodedata.normalize("NFKC", text or "").casefold()
    return " ".join(_NON_WORD.sub(" ", folded).split())


def exact_hash(text: str) -> str:
    """128 bits of sha256: collisions across billions of documents stay negligible."""
    return hashlib.sha256(exact_key_text(text).encode("utf-8")).hexdigest()[:32]
