"""What the clean stage's list-based steps can be told: content safety by keyword lists (`clean.safety`), URL
and domain blocklists (`clean.urls`) and the 繁/简 policy (`clean.chinese_script`). Checked by the one config
checker as a config is read; pipeline/config.py then reads every list file they name, before Spark starts."""
from __future__ import annotations

from dataclasses import dataclass

from glassbox.schema import setting

SAFETY_CATEGORIES = ("porn", "gambling", "ads", "drugs", "illegal_trade", "obscene", "politics")
URL_CATEGORIES = ("adult", "gambling", "phishing", "malware", "other")
CHINESE_SCRIPT_MODES = ("keep", "to_simplified", "drop_traditional")
# the page-structure rules of pipeline/clean/spam_signals.py (RULES there; a test keeps the two in step)
SPAM_RULES = ("title_overlap", "stuffing", "isolated", "host", "link_list", "brand_pattern", "repeated_prefix",
              "host_lines")


def _lists_problem(lists: dict) -> str | None:
    for lang, paths in lists.items():
        if not isinstance(lang, str) or not lang:
            return f"expected language codes (or '*' for every language) as keys, got {lang!r}"
        if not isinstance(paths, list) or not paths or not all(isinstance(p, str) and p for p in paths):
            return f"{lang}: expected a list of list files, got {paths!r}"
    return None


def _thresholds_problem(thresholds: dict) -> str | None:
    import math

    for lang, row in thresholds.items():
        if not isinstance(row, dict):
            return f"{lang}: expected a mapping category -> matches per 1,000 characters, got {row!r}"
        for cat, v in row.items():
            if cat not in SAFETY_CATEGORIES:
                return f"{lang}.{cat}: unknown category; known: {', '.join(SAFETY_CATEGORIES)}"
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                return f"{lang}.{cat}: expected a number >= 0 (matches per 1,000 characters), got {v!r}"
    return None


def _hosts_problem(hosts: list) -> str | None:
    bad = [h for h in hosts if not h or "/" in h or " " in h]
    return f"expected host names such as example.org, got {bad[0]!r}" if bad else None


@dataclass
class SafetyConfig:
    """Keyword densities per category (pipeline/clean/safety.py)."""
    enabled: bool = True
    builtin: bool = True                  # the built-in lists of pipeline/clean/lists/safety (see its NOTICE)
    # extra list files (category<TAB>term) per language, '*' for every language: {zh: [my_politics.tsv]}
    lists: dict = setting(default_factory=dict, check=_lists_problem)
    # categories whose density rejects a document (politics is never a default)
    reject: list[str] = setting(default_factory=lambda: ["porn", "gambling", "ads", "drugs", "illegal_trade",
                                                         "obscene"], choices=SAFETY_CATEGORIES)
    # matches per 1,000 characters above which a document is rejected, over the calibrated table: {zh: {ads: 2}}
    thresholds: dict = setting(default_factory=dict, check=_thresholds_problem)


def _spam_thresholds_problem(thresholds: dict) -> str | None:
    import math

    for rule, v in thresholds.items():
        if rule not in SPAM_RULES:
            return f"{rule}: unknown rule; known: {', '.join(SPAM_RULES)}"
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return f"{rule}: expected a number, got {v!r}"
    return None


@dataclass
class SpamSignalsConfig:
    """Page-structure signals of web spam (pipeline/clean/spam_signals.py): columns spam_<signal>, computed when
    enabled (off by default: about 1-2 MB/s a core, and no rule was precise enough on ordinary pages to reject by
    default, docs/spam.md). A rule named in `reject` rejects with reason spam_<rule> (and turns the signals on)."""
    enabled: bool = False
    reject: list[str] = setting(default_factory=list, choices=SPAM_RULES)
    # thresholds over the defaults of spam_signals.RULES: {host: 0.5, link_list: 0.9}
    thresholds: dict = setting(default_factory=dict, check=_spam_thresholds_problem)


@dataclass
class UrlFilterConfig:
    """Blocked hosts and URL words (pipeline/clean/urls.py)."""
    enabled: bool = True
    # built-in UT1 lists (pipeline/clean/lists/urls, see its NOTICE)
    blocklists: list[str] = setting(default_factory=lambda: ["adult", "gambling"], choices=("adult", "gambling"))
    url_words: bool = True                # adult words in host and path: hard alone, soft in pairs (urls.py)
    files: list[str] = setting(default_factory=list)   # extra blocklists: category<TAB>host or host/path
    allow: list[str] = setting(default_factory=list, check=_hosts_problem)   # hosts (and their subdomains) never blocked
