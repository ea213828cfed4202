"""What a kind of finding is to the registry: its rule, the thresholds it reads, its advice, and what a record
must hold for the rule to judge it.

Each kind lives in a module of its own under ``kinds/`` and ends with one ``KIND = Kind(...)``;
``registry.py`` lists them. A rule is ``detect(curves, cfg, facts) -> list[Finding]``: ``cfg`` is the whole
``DiagnoseConfig`` (whose fields are the union of every kind's ``settings``), ``facts`` what else the record
holds (vocabulary size, manifest) and the findings of the kinds named in ``after``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from train.record.diagnose.curves import Curves
from train.record.diagnose.finding import Finding


@dataclass
class Facts:
    """What the record holds beside its curves, and the findings of the kinds judged so far."""
    vocab_size: int | None = None
    manifest: dict | None = None
    found: dict[str, list[Finding]] = field(default_factory=dict)


@dataclass(frozen=True)
class Kind:
    name: str                                               # the findings' kind
    detect: Callable[[Curves, Any, Facts], list[Finding]]
    advice: str                                             # what to do, shown with every finding of the kind
    # dataclasses of thresholds (``setting(...)`` fields, their names prefixed by the kind); DiagnoseConfig
    # inherits every one. Kinds may share one (plateau and stalled: the flat stretch).
    settings: tuple[type, ...] = ()
    # why this record cannot support the rule (too few points, no vocabulary, ...), or None. Kinds that share
    # one such function are named together in one note ("plateau, stalled").
    needs: Callable[[Curves, Any, Facts], str | None] | None = None
    check: str = ""                                         # the check's name in that note (default: name)
    after: tuple[str, ...] = ()                             # kinds whose findings detect reads (facts.found)

    @property
    def label(self) -> str:
        return self.check or self.name
