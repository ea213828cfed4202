"""Reading a run directory: ``metrics.jsonl`` rows, the resolved config and ``run.json``.

``metrics.jsonl`` is written by train/metrics.py, one JSON object a line: ``kind: "train"`` rows (step,
tokens, loss, lr, grad_norm, tokens_per_s, mfu, step_s, time and any extra fields) and ``kind: "val"`` rows
(step, tokens, val_loss, val_loss_<source>). What a reader must survive:

- a torn last line (a run killed mid-write) or any line that is not a JSON object: skipped and counted;
- missing or null fields: a missing value, never a zero;
- non-finite numbers (``NaN``/``Infinity`` as Python's json writes them): kept as floats, since a NaN loss
  is itself a finding;
- a step written twice (a resumed run that did not truncate): the last row of each (kind, step) wins.

Everything here works on a directory that holds nothing but ``metrics.jsonl``.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

METRICS_FILE = "metrics.jsonl"


class RecordError(RuntimeError):
    """The run record cannot be read (no metrics file, no rows): a message naming the path and the fix."""


def metrics_path(path: str | Path) -> Path:
    """``metrics.jsonl`` of a run directory, or the path itself when it names a file."""
    p = Path(path)
    return p / METRICS_FILE if p.is_dir() else p


def row_kind(row: dict) -> str:
    """``train`` for rows without a kind (older records), else the row's kind."""
    k = row.get("kind")
    return k if isinstance(k, str) else "train"


def load_metrics_detail(path: str | Path) -> tuple[list[dict], int]:
    """(rows, skipped lines). Rows are sorted by step (train before val at the same step), one per
    (kind, step), the last written winning. Raises RecordError when the file is missing."""
    p = metrics_path(path)
    if not Path(path).exists():
        raise RecordError(f"{path}: no such run directory or metrics file")
    if not p.is_file():
        raise RecordError(f"{p}: no such file (a run directory holds metrics.jsonl once the trainer logged a step)")
    by_key: dict[tuple[str, int], dict] = {}
    skipped = 0
    with open(p, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                skipped += 1
                continue
            step = row.get("step") if isinstance(row, dict) else None
            if isinstance(step, float) and step.is_integer():
                step = int(step)
            if not isinstance(step, int) or isinstance(step, bool):
                skipped += 1
                continue
            row["step"] = step
            key = (row_kind(row), step)
            by_key.pop(key, None)          # re-insert: the last row of a step also keeps its place last
            by_key[key] = row
    order = {"train": 0, "val": 1}
    rows = sorted(by_key.values(), key=lambda r: (r["step"], order.get(row_kind(r), 2)))
    return rows, skipped


def load_metrics(path: str | Path) -> list[dict]:
    """Rows of a run's metrics.jsonl (a run directory or the file): see ``load_metrics_detail``."""
    return load_metrics_detail(path)[0]


def num(value) -> float | None:
    """A field as a float (NaN and infinities kept), or None when missing, null or not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def finite(value) -> float | None:
    v = num(value)
    return v if v is not None and math.isfinite(v) else None


def split_rows(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """(train rows, val rows); rows of other kinds are left out."""
    return ([r for r in rows if row_kind(r) == "train"], [r for r in rows if row_kind(r) == "val"])


def series(rows: list[dict], key: str, x: str = "step") -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of the rows where both are finite numbers, as float arrays."""
    xs, ys = [], []
    for r in rows:
        a, b = finite(r.get(x)), finite(r.get(key))
        if a is not None and b is not None:
            xs.append(a)
            ys.append(b)
    return np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def vocab_size_of(config: dict | None) -> int | None:
    """The vocabulary size in a resolved config.json (top level, or the model section)."""
    if not config:
        return None
    for v in (config.get("vocab_size"), (config.get("model") or {}).get("vocab_size"),
              ((config.get("config") or {}).get("model") or {}).get("vocab_size")):
        if isinstance(v, int) and not isinstance(v, bool) and v > 1:
            return v
    return None


@dataclass
class RunRecord:
    """What a reader needs from a run directory; every part but the rows may be absent."""
    path: Path
    rows: list[dict]
    skipped_lines: int = 0
    config: dict | None = None          # config.json (the resolved config)
    run: dict | None = None             # run.json
    extra: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.path.name if self.path.is_dir() else self.path.parent.name

    @property
    def train_rows(self) -> list[dict]:
        return split_rows(self.rows)[0]

    @property
    def val_rows(self) -> list[dict]:
        return split_rows(self.rows)[1]

    @property
    def vocab_size(self) -> int | None:
        return vocab_size_of(self.config)


def read_run(path: str | Path) -> RunRecord:
    """A run directory (or its metrics.jsonl). Raises RecordError without a metrics file or rows."""
    p = Path(path)
    rows, skipped = load_metrics_detail(p)
    if not rows:
        raise RecordError(f"{metrics_path(p)}: no metrics rows (the run has not logged a step yet"
                          + (f"; {skipped} unreadable lines" if skipped else "") + ")")
    run_dir = p if p.is_dir() else p.parent
    return RunRecord(path=run_dir, rows=rows, skipped_lines=skipped,
                     config=_read_json(run_dir / "config.json"), run=_read_json(run_dir / "run.json"))
