"""Mask e-mail addresses and IP addresses: `mask_pii(text) -> (text, n_emails, n_ips)`.

False-positive choices (each is tested):
- `logo@2x.png`-style asset names are not e-mails (a file extension is not a top-level domain).
- An IPv4 address needs four dot-separated octets 0-255 without leading zeros, not glued to letters,
  dots or digits: `v1.2.3.4`, `1.2.3.4.5`, `1.2.3`, `12.05.2023`, `$1.299.00`, `3.14` stay. Four-part numbers
  right after "version"/"ver."/"build"/"release" stay too (a version, not a host). Loopback and private
  addresses are masked like any other: the rule stays simple and they are never needed in training text.
- IPv6 candidates are checked with `ipaddress` and need at least three non-empty groups, so times
  (`12:30:45`), MAC addresses, `std::vector` and `::1` stay.
Obfuscated addresses ("name [at] example [dot] com") are not handled.
"""
from __future__ import annotations

import ipaddress
import re

EMAIL_TOKEN = "<EMAIL>"
IP_TOKEN = "<IP>"

# Each scan starts from a character that is rare in prose ('@', '.', ':'), so the regex engine skips
# ahead quickly; a regex that could start at any letter or digit costs ~10x more per document.
_EMAIL_DOMAIN = re.compile(
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
    r"(?!(?:png|jpe?g|gif|svg|webp|bmp|ico|css|js)\b)[A-Za-z]{2,24}\b")
_LOCAL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+-")
_LOCAL_MAX = 64

_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4_HINT = re.compile(r"\.\d{1,3}\.\d{1,3}\.\d")
_IPV4 = re.compile(rf"(?<![\w.]){_OCTET}(?:\.{_OCTET}){{3}}(?![\w]|\.\d)")
_VERSION_CONTEXT = re.compile(r"(?:version|ver\.?|build|release|v\.)\s*$", re.IGNORECASE)
_IPV6_HINT = re.compile(r":[0-9A-Fa-f]{0,4}:[0-9A-Fa-f]{0,4}:")
_IPV6 = re.compile(
    r"(?<![\w:.])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?:(?<=[0-9A-Fa-f:])(?:\.\d{1,3}){3})?(?![\w:])"
)


def _mask_emails(text: str) -> tuple[str, int]:
    parts: list[str] = []
    last = n = 0
    for m in _EMAIL_DOMAIN.finditer(text):
        at = m.start()
        floor = max(last, at - _LOCAL_MAX - 1)
        j = at
        while j > floor and text[j - 1] in _LOCAL_CHARS:
            j -= 1
        if j == floor and j > last and text[j - 1] in _LOCAL_CHARS:
            continue  # local part longer than 64 characters: not an address
        while j < at and not text[j].isalnum():
            j += 1  # a local part starts with a letter or digit (".foo@x.com" -> "foo@x.com")
        if j == at:
            continue
        parts.append(text[last:j])
        parts.append(EMAIL_TOKEN)
        last = m.end()
        n += 1
    if not n:
        return text, 0
    parts.append(text[last:])
    return "".join(parts), n


def _mask_ipv4(m: re.Match) -> str:
    start = m.start()
    if _VERSION_CONTEXT.search(m.string, max(0, start - 12), start):
        return m.group(0)
    return IP_TOKEN


def _mask_ipv6(m: re.Match) -> str:
    s = m.group(0)
    if sum(1 for g in s.split(":") if g) < 3:
        return s
    try:
        ipaddress.IPv6Address(s)
    except ValueError:
        return s
    return IP_TOKEN


def mask_pii(text: str) -> tuple[str, int, int]:
    """Replace e-mails by <EMAIL> and IPv4/IPv6 addresses by <IP>; returns (text, n_emails, n_ips)."""
    n_emails = n_ips = 0
    if "@" in text:
        text, n_emails = _mask_emails(text)
    if _IPV4_HINT.search(text):
        before = text.count(IP_TOKEN)
        text = _IPV4.sub(_mask_ipv4, text)
        n_ips += text.count(IP_TOKEN) - before
    if _IPV6_HINT.search(text):
        before = text.count(IP_TOKEN)
        text = _IPV6.sub(_mask_ipv6, text)
        n_ips += text.count(IP_TOKEN) - before
    return text, n_emails, n_ips
