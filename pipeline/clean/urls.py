"""URL and domain blocklists (FineWeb's URL filter, for every language): a document whose URL is on a list is
rejected with reason `url_<category>` before any text rule runs.

Three checks, in order, on the lower-cased URL without its scheme:
1. the host or any parent domain of it on a category's domain list (UT1 `adult`, `gambling`: lists/urls/, see
   lists/NOTICE; `www.` and a port are ignored);
2. the URL starting with an entry of a category's URL list (`host/path` prefixes, cut at a `/`; an entry's `?query`
   or `#fragment` is cut off, as split_url cuts it from the URL);
3. (`clean.urls.url_words`, with the `adult` list on) adult words in host and path, the way FineWeb's URL filter
   (datatrove `URLFilter`) weighs them. The host and the percent-decoded path (not the query) are split into
   tokens on every non-alphanumeric character; the URL is `adult` when
   - a hard word (lists/urls/adult_words_hard.txt: porn, xxx, milf, nsfw, ...) is a whole token, or a `*word*`
     entry of it is inside a token (freeporn.example, pornhub, gaytxxx, winsexstore: letter strings no ordinary
     word holds) once the ordinary strings of adult_words_allow.txt (xxxl, essex, unisex) are cut out of it;
   - or two different soft words (adult_words_soft.txt: sex, teen, gay, adult, mature, nude, ...; teen and teens
     are one word) are tokens of it: /teen-sex/ is rejected, /adult-education/, /gay-rights-123, /en/teens/ are not;
   - or the host is under one of ICANN's adult top-level domains (.xxx, .porn, .sex, .adult).
   UT1's own expressions (adult_expressions.txt, its `very_restrictive_expression`) are no longer used: they reject
   on one token among breast, teen, gay, adult, mature, tit, so 7 of 8 ordinary pages (cancer.gov/types/breast,
   rspb.org.uk/birds/blue-tit) went as `url_adult`, and their substrings (hardcore, bondage, playmate, obscene,
   pedophil) hit music, history, toys and court news. They are not kept as soft evidence either: their words that
   mean something in pairs (adult, gay, mature, nude, sex, teen, boobs, busty, ...) are on the soft list already.
   The file stays, pinned, as the record `bench/url_filter.py` measures the old rule from: ordinary C4 URLs
   rejected 4/1,000 before, 0/1,000 now; UT1's adult URL entries caught by the words alone 346/1,090 before,
   342/1,090 now (docs/chinese.md, "URL blocklists").
A host on the allow-list (`lists/urls/allow.txt` and `clean.urls.allow`), or a subdomain of one, is never blocked:
it is counted as `url_allowed` instead. A document without a URL (JSONL, books) is not checked.

The lists are big (UT1's gambling list holds 32k domains): each is loaded once per worker process into a set;
a lookup costs a few dictionary probes per document.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote

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


def _prefix_key(entry: str) -> str:
    """A URL-list entry as category() looks it up: split_url drops the query and fragment of the URL it checks, so an
    entry with them (UT1 lists planhomo.com/# and gosexy.it/index.php?) is cut there too or it never matches."""
    return re.split(r"[?#]", entry, maxsplit=1)[0].rstrip("/")


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


_TOKEN_SPLIT = re.compile(r"[^a-z0-9]+")
# ICANN's adult top-level domains: a host under one is adult whatever its words
ADULT_TLDS = frozenset({"xxx", "porn", "sex", "adult"})
SOFT_WORDS_TO_REJECT = 2          # FineWeb's soft_word_threshold


def url_tokens(host_path: str) -> list[str]:
    """The words of a host/path (as split_url gives it): percent-decoded, split on every non-alphanumeric."""
    return [t for t in _TOKEN_SPLIT.split(unquote(host_path).lower()) if t]


@dataclass(frozen=True)
class UrlWords:
    """The adult-word rule of check 3 (module docstring): hard words alone, soft words in pairs."""
    hard: frozenset[str]            # whole tokens
    inside: re.Pattern | None       # hard words that also count inside a token
    soft: dict[str, str]            # form -> its word (teens -> teen): forms of one word count once
    allow: re.Pattern | None        # ordinary strings cut out of a token before `inside` is searched

    def evidence(self, host_path: str) -> tuple[str, ...]:
        """What makes the URL adult: (the hard word or adult TLD,) or (the soft words,) or () when it passes."""
        host = host_path.split("/", 1)[0]
        tld = host.rsplit(".", 1)[-1]
        if "." in host and tld in ADULT_TLDS:
            return (f".{tld}",)
        soft: dict[str, str] = {}      # word -> the first form seen
        for t in url_tokens(host_path):
            if t in self.hard:
                return (t,)
            if self.inside is not None and self.inside.search(t):
                # a space, not nothing: cutting essex out must not join its neighbours into a new word
                m = self.inside.search(self.allow.sub(" ", t)) if self.allow is not None else self.inside.search(t)
                if m:
                    return (m.group(0),)
            if t in self.soft:
                soft.setdefault(self.soft[t], t)
        return tuple(soft.values()) if len(soft) >= SOFT_WORDS_TO_REJECT else ()

    def rejects(self, host_path: str) -> bool:
        return bool(self.evidence(host_path))


def _words_of(rel: str) -> list[str]:
    return [line.strip().lower() for _, line in read_lines(builtin(rel))]


def _alternation(words: list[str]) -> re.Pattern | None:
    # longest first, so a string that holds another (xxxxl, xxxl) is cut whole
    return re.compile("|".join(map(re.escape, sorted(words, key=len, reverse=True)))) if words else None


@lru_cache(maxsize=1)
def adult_words() -> UrlWords:
    """The built-in adult-word rule (lists/urls/adult_words_{hard,soft,allow}.txt)."""
    hard = _words_of("urls/adult_words_hard.txt")
    inside = [w.strip("*") for w in hard if w.startswith("*") and w.endswith("*")]
    return UrlWords(hard=frozenset(w.strip("*") for w in hard),
                    inside=_alternation(inside),
                    soft={form: line.split()[0] for line in _words_of("urls/adult_words_soft.txt")
                          for form in line.split()},
                    allow=_alternation(_words_of("urls/adult_words_allow.txt")))


class UrlFilter:
    """The URL check of one clean config (`clean.urls`)."""

    def __init__(self, cfg):
        self.domains: dict[str, str] = {}     # host -> category
        self.prefixes: dict[str, str] = {}    # host/path -> category
        for cat in cfg.blocklists:
            for d in _builtin_entries(f"urls/{cat}_domains.txt.gz"):
                self.domains.setdefault(d, cat)
            for u in _builtin_entries(f"urls/{cat}_urls.txt.gz"):
                self.prefixes.setdefault(_prefix_key(u), cat)
        for f in cfg.files:
            for cat, entry in read_blocklist(f):
                (self.prefixes if "/" in entry else self.domains).setdefault(_prefix_key(entry), cat)
        self.allow = set(_builtin_entries("urls/allow.txt")) | {h.lower().removeprefix("www.") for h in cfg.allow}
        self.words = adult_words() if cfg.url_words and "adult" in cfg.blocklists else None

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
        if self.words is not None and self.words.rejects(path):
            return "adult"
        return None

    def reason(self, url: str | None) -> tuple[str | None, str | None]:
        """(reason or None, what the check found: a category, `allowed`, or None)."""
        found = self.category(url)
        return (f"url_{found}" if found and found != "allowed" else None), found
