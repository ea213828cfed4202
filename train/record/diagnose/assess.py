"""Judging a record: every registered kind over the prepared curves, the checks the record could not support,
and the reading."""
from __future__ import annotations

from dataclasses import dataclass, field

from train.record.diagnose.curves import Curves, prepare
from train.record.diagnose.finding import SEVERITIES, Finding
from train.record.diagnose.kind import Facts, Kind
from train.record.diagnose.kinds.spike import with_run_spike_settings
from train.record.diagnose.reading import reading
from train.record.diagnose.registry import KINDS, DiagnoseConfig


@dataclass
class Diagnosis:
    """Findings, the checks that could not be judged on this record (``{"check", "reason"}``), and the
    reading: a few plain sentences of what the curves did, findings or not."""
    findings: list[Finding]
    not_judged: list[dict] = field(default_factory=list)
    reading: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"findings": [f.to_dict() for f in self.findings], "not_judged": list(self.not_judged),
                "reading": list(self.reading)}


def judging_order(kinds: tuple[Kind, ...] = KINDS) -> list[Kind]:
    """The kinds in registry order, each after the kinds whose findings it reads (``Kind.after``)."""
    done: list[Kind] = []
    while len(done) < len(kinds):
        ready = [k for k in kinds if k not in done and all(a in {d.name for d in done} for a in k.after)]
        if not ready:
            raise ValueError(f"diagnosis kinds wait on each other: {[k.name for k in kinds if k not in done]}")
        done.append(ready[0])
    return done


def not_judged(c: Curves, cfg: DiagnoseConfig, facts: Facts, kinds: tuple[Kind, ...] = KINDS) -> list[dict]:
    """``{"check", "reason"}`` of every kind this record cannot support, in registry order; kinds sharing one
    ``needs`` share one note ("plateau, stalled")."""
    notes: list[tuple[object, list[str], str]] = []
    for kind in kinds:
        if kind.needs is None:
            continue
        same = next((n for n in notes if n[0] is kind.needs), None)
        if same is not None:
            same[1].append(kind.label)
        elif (reason := kind.needs(c, cfg, facts)) is not None:
            notes.append((kind.needs, [kind.label], reason))
    return [{"check": ", ".join(labels), "reason": reason} for _, labels, reason in notes]


def assess(rows: list[dict], vocab_size: int | None = None, cfg: DiagnoseConfig | None = None,
           manifest: dict | None = None) -> Diagnosis:
    """Findings about metrics rows (any kinds, any order; the last row per step wins), by step, and the
    checks that could not be judged on them."""
    cfg = cfg or DiagnoseConfig()
    c = prepare(rows)
    facts = Facts(vocab_size, manifest)
    for kind in judging_order():
        facts.found[kind.name] = kind.detect(c, cfg, facts)
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    findings = sorted((f for kind in KINDS for f in facts.found[kind.name]),
                      key=lambda f: (f.step, -rank[f.severity], f.kind))
    return Diagnosis(findings, not_judged(c, cfg, facts), reading(c, manifest))


def diagnose(rows: list[dict], vocab_size: int | None = None, cfg: DiagnoseConfig | None = None,
             manifest: dict | None = None) -> list[Finding]:
    """Findings about metrics rows (any kinds, any order; the last row per step wins), by step."""
    return assess(rows, vocab_size, cfg, manifest).findings


def assess_run(rec, vocab_size: int | None = None, cfg: DiagnoseConfig | None = None) -> Diagnosis:
    """``assess`` on a read record (load.RunRecord): its rows, vocabulary, manifest and spike settings."""
    cfg = with_run_spike_settings(cfg or DiagnoseConfig(), rec.plan.section("train") if rec.plan else None)
    return assess(rec.rows, vocab_size=vocab_size or rec.vocab_size, cfg=cfg, manifest=rec.manifest)
