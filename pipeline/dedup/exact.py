"""Exact dedup key: documents that differ only in case, whitespace or punctuation are one document."""
import hashlib
import re
import unicodedata

_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


class _WordCharTable(dict):
    """str.translate table: every character that `[\\W_]` matches becomes a space, every other one
    stays. Filled on first sight of a character, so a text is translated at C speed instead of
    running the regex over it (3x faster on web text); the result is the regex's, character by
    character (tests/test_exact.py checks it over the Basic Multilingual Plane)."""

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        out = " " if _NON_WORD.match(ch) else ch
        self[code] = out
        return out


_TABLE = _WordCharTable()


def exact_key_text(text: str) -> str:
    """The text as the exact-dedup key sees it: NFKC, case-folded, words joined by single spaces."""
    return " ".join(key_words(text))


def key_words(text: str) -> list[str]:
    """The words of `exact_key_text`: NFKC, case-folded, split at every run of non-word characters
    (anything but letters, digits and marks; `_` counts as a separator)."""
    folded = unicodedata.normalize("NFKC", text or "").casefold()
    return folded.translate(_TABLE).split()


def exact_hash_of_key(key: str) -> str:
    """128 bits of sha256 of a key text: collisions across billions of documents stay negligible."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def exact_hash(text: str) -> str:
    return exact_hash_of_key(exact_key_text(text))
