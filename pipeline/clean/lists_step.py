"""The clean stage's list-based steps on one document, in the order they run (pipeline/clean/stage.py calls
them): after language ID, the URL blocklists (`url_block`, reason `url_<category>`) and the 繁/简 policy
(`zh_script`; `clean.chinese_script`: keep, to_simplified, drop_traditional -> reason `zh_traditional`); after
the heuristic rules, the content-safety densities (`safety_<category>`, reason `safety_<category>`).

The signals are computed on every document, whatever the decision, so a threshold can be moved later without
recomputing them."""
from __future__ import annotations

from pipeline.clean import spam_signals
from pipeline.clean.safety import SIGNALS as SAFETY_SIGNALS, Safety
from pipeline.clean.lists import ListError
from pipeline.clean.script import TRADITIONAL, chinese_script, is_chinese, tables, to_simplified
from pipeline.clean.urls import UrlFilter

ZH_TRADITIONAL = "zh_traditional"
# (name, Spark type) of the columns these steps add, in order
COLUMNS = [("zh_script", "string"), ("url_block", "string")] + [(s, "double") for s in SAFETY_SIGNALS] + \
    [(s, "double") for s in spam_signals.SIGNALS]


class ListSteps:
    """The steps of one clean config; `of(cfg)` builds them once per config (per worker process)."""

    _cached: list = []   # (config, steps) of the last few configs: a worker serves one, a bench two

    def __init__(self, cfg):
        self.cfg = cfg
        self.urls = UrlFilter(cfg.urls) if cfg.urls.enabled else None
        self.safety = Safety(cfg.safety) if cfg.safety.enabled else None
        spam = getattr(cfg, "spam", None)
        self.spam = spam if spam is not None and (spam.enabled or spam.reject) else None

    @classmethod
    def of(cls, cfg) -> "ListSteps":
        # Equal, not only the same object: every task unpickles its own copy of the config, and building the
        # URL lists and the safety automata again for each unit was a fifth of a small job's clean stage.
        for c, steps in cls._cached:
            if c is cfg or c == cfg:
                return steps
        cls._cached[:] = [(cfg, cls(cfg))] + cls._cached[:3]
        return cls._cached[0][1]

    def before_rules(self, row: dict, lang: str | None, url: str | None) -> str | None:
        """URL check and 繁/简 policy; writes url_block, zh_script (and converts row["text"] when told)."""
        reason = None
        row["url_block"] = None
        if self.urls is not None:
            reason, row["url_block"] = self.urls.reason(url)
        row["zh_script"] = None
        if is_chinese(lang):
            script = row["zh_script"] = chinese_script(row["text"])
            if script == TRADITIONAL and self.cfg.chinese_script == "to_simplified":
                row["text"] = to_simplified(row["text"])
            elif script == TRADITIONAL and self.cfg.chinese_script == "drop_traditional":
                reason = reason or ZH_TRADITIONAL
        if self.safety is not None:
            # a traditional page meets the simplified lists through the character fold of the dedup keys
            text = row["text"]
            if row["zh_script"] in (TRADITIONAL, "mixed"):
                text = text.translate(tables()[2])
            row.update(self.safety.signals(text, lang))
        else:
            row.update(dict.fromkeys(SAFETY_SIGNALS, 0.0))
        if self.spam is not None:
            row.update(spam_signals.signals(row["text"], url))
        else:
            row.update(dict.fromkeys(spam_signals.SIGNALS))
        return reason

    def safety_reason(self, row: dict, lang: str | None) -> str | None:
        """The content-safety reason, else the page-structure reason of a rule `clean.spam.reject` names."""
        reason = self.safety.reason(row, lang) if self.safety is not None else None
        if reason is None and self.spam is not None and self.spam.reject:
            reason = spam_signals.reason(row, self.spam.reject, self.spam.thresholds)
        return reason


def check_lists(cfg, base) -> str | None:
    """Resolve the list files a clean config names against `base` and read each of them (and the built-in
    ones) now: "key: problem" for the first that cannot be used, else None. Called by pipeline/config.py
    before Spark starts."""
    from pathlib import Path

    from pipeline.clean.safety import check_config as check_safety
    from pipeline.clean.urls import read_blocklist

    def resolve(p: str) -> str:
        q = Path(p).expanduser()
        return str(q if q.is_absolute() else Path(base) / q)

    cfg.safety.lists = {lang: [resolve(p) for p in paths] for lang, paths in cfg.safety.lists.items()}
    cfg.urls.files = [resolve(p) for p in cfg.urls.files]
    try:
        if cfg.safety.enabled:
            check_safety(cfg.safety)
    except ListError as e:
        return f"safety.lists: {e}"
    try:
        for f in cfg.urls.files:
            read_blocklist(f)
        if cfg.urls.enabled:
            UrlFilter(cfg.urls)
    except ListError as e:
        return f"urls.files: {e}"
    return None
