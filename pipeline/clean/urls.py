"""URL and domain blocklists (FineWeb's URL filter, for every language): a document whose URL is on a list is
rejected with reason `url_<category>` before any text rule runs.

Three checks, in order, on the lower-cased URL without its scheme:
1. the host or any parent domain of it on a category's domain list (UT1 `adult`, `gambling`: lists/urls/, see
   lists/NOTICE; `www.` and a port are ignored);
2. the URL starting with an entry of a category's URL list (`host/path` prefixes, cut at a `/`);
3. (`clean.urls.url_words`) UT1's adult URL expressions (`adult_expressions.txt`: words such as porn, xxx,
   hardcore as whole URL tokens) anywhere in host and path.
A host on the allow-list (`lists/urls/allow.txt` and `clean.urls.allow`), or a subdomain of one, is never blocked:
it is counted as `url_allowed` instead. A document without a URL (JSONL, books) is not checked.

The lists are big (UT1's gambling list holds 32k domains): each is loaded once per worker process into a set;
a lookup costs a few dictionary probes per document.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from pipeline.clean.lists import ListError, builtin, pinned, read_lines

_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://")
URL_REASONS = ("url_adult", "url_gambling", "url_phishing", "url_malware", "url_other")


def _categories():
    from pipeline.clean.list_settings import URL_CATEGORIES
    return URL_CATEGORIES


def split_url(url: str) -> tuple[str, str]:
    """(host without www. and port, host/path lower-cased without scheme, query or fragment)."""
    u = _SCHEME.sub("", url.strip().lower(), count=1)
    u = re.split(r"[?#]", u, maxsplit=1)[0]
    host = u.split("/", 1)[0].rsplit("@", 1)[-1].split(":", 1)[0].rstrip(".")
    if host.startswith("www."):
        host = host[4:]
    rest = u.split("/", 1)[1] if "/" in u else ""
    return host, f"{host}/{rest}" if rest else host


def _parents(host: str) -> list[str]:
    parts = host.split(".")
    return [".".join(parts[i:]) for i in range(len(parts) - 1)] or [host]


def read_blocklist(path: str | Path) -> list[tuple[str, str]]:
    """(category, host or host/path) of a user blocklist file: a bad line is a ListError naming file and line."""
    out = []
    for n, line in read_lines(path):
        cat, tab, entry = line.partition("\t")
        cat, entry = cat.strip(), entry.strip().lower()
        if not tab or not entry or " " in entry:
            raise ListError(f"{path}:{n}: expected 'category<TAB>host or host/path', got {line!r}")
        if cat not in _categories():
            raise ListError(f"{path}:{n}: unknown category {cat!r}; known: {', '.join(_categories())}")
        out.append((cat, _SCHEME.sub("", entry).removeprefix("www.")))
    if not out:
        raise ListError(f"{path}: the blocklist is empty; give at least one 'category<TAB>host' line or remove it")
    return out


@lru_cache(maxsize=8)
def _builtin_entries(rel: str) -> frozenset[str]:
    if rel not in pinned():
        return frozenset()
    return frozenset(line.strip().lower() for _, line in read_lines(builtin(rel)))


@lru_cache(maxsize=2)
def _expressions(rel: str = "urls/adult_expressions.txt") -> re.Pattern | None:
    if rel not in pinned():
        return None
    exprs = [line.strip() for _, line in read_lines(builtin(rel))]
    return re.compile("|".join(f"(?:{e})" for e in exprs)) if exprs else None


class UrlFilter:
    """The URL check of one clean config (`clean.urls`)."""

    def __init__(self, cfg):
        self.domains: dict[str, str] = {}     # host -> category
        self.prefixes: dict[str, str] = {}    # host/path -> category
        for cat in cfg.blocklists:
            for d in _builtin_entries(f"urls/{cat}_domains.txt.gz"):
                self.domains.setdefault(d, cat)
            for u in _builtin_entries(f"urls/{cat}_urls.txt.gz"):
                self.prefixes.setdefault(u.rstrip("/"), cat)
        for f in cfg.files:
            for cat, entry in read_blocklist(f):
                (self.prefixes if "/" in entry else self.domains).setdefault(entry.rstrip("/"), cat)
        self.allow = set(_builtin_entries("urls/allow.txt")) | {h.lower().removeprefix("www.") for h in cfg.allow}
        self.words = _expressions() if cfg.url_words and "adult" in cfg.blocklists else None

    def category(self, url: str | None) -> str | None:
        """The blocking category of a URL, `allowed` for an allow-listed host, or None."""
        if not url:
            return None
        host, path = split_url(url)
        if not host:
            return None
        parents = _parents(host)
        if any(p in self.allow for p in parents):
            return "allowed"
        for p in parents:
            cat = self.domains.get(p)
            if cat:
                return cat
        if self.prefixes:
            cut = path
            while True:
                cat = self.prefixes.get(cut)
                if cat:
                    return cat
                if "/" not in cut:
                    break
                cut = cut.rsplit("/", 1)[0]
        if self.words is not None and self.words.search(path):
            return "adult"
        return None

    def reason(self, url: str | None) -> tuple[str | None, str | None]:
        """(reason or None, what the check found: a category, `allowed`, or None)."""
        found = self.category(url)
        return (f"url_{found}" if found and found != "allowed" else None), found
