"""Per-stage accounting: every record that enters a stage leaves it kept, rejected or unreadable."""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field


class AccountingError(RuntimeError):
    """records_in != records_out + rejected + unreadable: some records vanished or were invented."""


@dataclass
class StageStats:
    stage: str
    records_in: int
    records_out: int
    rejected: dict[str, int] = field(default_factory=dict)     # reason -> count
    unreadable: dict[str, int] = field(default_factory=dict)   # reason -> count
    bytes_in: int = 0       # payload bytes read (extract) or UTF-8 text bytes entering the stage
    bytes_out: int = 0      # UTF-8 text bytes of the kept documents
    wall_s: float = 0.0
    input: str = ""
    output: str = ""
    extra: dict = field(default_factory=dict)  # stage-specific figures (e.g. score distributions)

    def check(self) -> None:
        accounted = self.records_out + sum(self.rejected.values()) + sum(self.unreadable.values())
        if accounted != self.records_in:
            raise AccountingError(
                f"stage {self.stage}: records_in={self.records_in} but out+rejected+unreadable={accounted}")

    def write(self, data_dir: str) -> str:
        os.makedirs(os.path.join(data_dir, "stats"), exist_ok=True)
        path = os.path.join(data_dir, "stats", f"{self.stage}.json")
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            # numpy scalars in stage figures become plain numbers
            json.dump(asdict(self), fh, indent=2, sort_keys=True,
                      default=lambda o: o.item() if hasattr(o, "item") else str(o))
            fh.write("\n")
        os.replace(tmp, path)  # readers never see half a file
        return path

    def summary(self) -> str:
        def top(d):
            return ", ".join(f"{k} {v}" for k, v in sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))) or "-"
        return (f"{self.stage:<8} in {self.records_in:>7}  out {self.records_out:>7}  "
                f"rejected {sum(self.rejected.values()):>6} ({top(self.rejected)})  "
                f"unreadable {sum(self.unreadable.values())} ({top(self.unreadable)})  {self.wall_s:.1f}s")


def load_stats(data_dir: str, stage: str) -> StageStats:
    with open(os.path.join(data_dir, "stats", f"{stage}.json"), encoding="utf-8") as fh:
        return StageStats(**json.load(fh))


CORPUS_STAGES = ("extract", "clean", "score", "dedup", "decontaminate")  # in the order they run


def top_reasons(stats: list[StageStats], n: int = 5) -> list[tuple[str, int]]:
    """The `n` commonest reasons records were dropped (rejected or unreadable), over all `stats`."""
    counts: dict[str, int] = {}
    for s in stats:
        for d in (s.rejected, s.unreadable):
            for reason, k in d.items():
                counts[reason] = counts.get(reason, 0) + int(k)
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def nothing_kept_line(stats: list[StageStats], n: int = 5) -> str | None:
    """When the last of `stats` (stages in the order they ran) kept no document: one line saying so,
    with the input count of the first and the top reasons of all; None when something was kept."""
    if not stats or stats[-1].records_out:
        return None
    records_in = stats[0].records_in
    reasons = top_reasons(stats, n)
    if not records_in:
        why = "the input holds no records"
    elif reasons:
        why = "top reasons: " + ", ".join(f"{r} {k}" for r, k in reasons)
    else:
        why = "no stage recorded a reason"
    return f"nothing was kept: 0 of {records_in} documents; {why}"


def load_chain(data_dir: str, upto: str, order: tuple[str, ...] = CORPUS_STAGES) -> list[StageStats]:
    """The stats files of the stages before `upto` (in `order`) that exist, then `upto`'s own."""
    out = []
    for stage in order[:order.index(upto) + 1] if upto in order else (upto,):
        try:
            out.append(load_stats(data_dir, stage))
        except (OSError, ValueError, TypeError):
            continue
    return out
