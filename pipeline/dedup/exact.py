"""Exact dedup key: documents that differ only in case, whitespace or punctuation are one document."""
import hashlib

from pipeline.clean.words import key_units

def exact_key_text(text: str) -> str:
    """The text as the exact-dedup key sees it: NFKC, case-folded, units joined by single spaces."""
    return " ".join(key_words(text))


def key_words(text: str) -> list[str]:
    """The key units of pipeline/clean/words.py: words split at every run of non-word characters, and each
    character of a script written without spaces (Chinese, Japanese, Thai, ...) a unit of its own."""
    return key_units(text)


def exact_hash_of_key(key: str) -> str:
    """128 bits of sha256 of a key text: collisions across billions of documents stay negligible."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def exact_hash(text: str) -> str:
    return exact_hash_of_key(exact_key_text(text))
