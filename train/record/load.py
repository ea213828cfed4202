"""Reading a run directory: ``metrics.jsonl`` rows, the resolved config and ``run.json``.

``metrics.jsonl`` is written by train/loop/metrics.py, one JSON object a line: ``kind: "train"`` rows (step,
tokens, loss, lr, grad_norm, tokens_per_s, mfu, step_s, time and any extra fields) and ``kind: "val"`` rows
(step, tokens, val_loss, val_loss_<source>). What a reader must survive:

- a torn last line (a run killed mid-write) or any line that is not a JSON object: skipped and counted;
- missing or null fields: a missing value, never a zero;
- non-finite numbers (``NaN``/``Infinity`` as Python's json writes them): kept as floats, since a NaN loss
  is itself a finding;
- a step written twice (a resumed run that did not truncate): the last row of each (kind, step) wins;
- rows without ``kind``, as most training scripts write them (``normalize_row``): common field names are
  mapped to this project's (``iter`` -> ``step``, ``eval_loss`` or ``val/loss`` -> ``val_loss``,
  ``learning_rate`` -> ``lr``, ...); a row with ``val_loss`` and no ``loss`` is a validation row, and a row
  holding both is split into a training row and a validation row of the same step.

Everything here works on a directory that holds nothing but ``metrics.jsonl``; other trainers' records
(Hugging Face ``trainer_state.json``, TensorBoard event files, CSV) are read by ``train/record/formats.py``
into the same rows, and ``formats.read_run`` takes any of them.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from glassbox.contracts import metrics_row_kinds
from train.plan import Plan, read_plan_or_none

METRICS_FILE = "metrics.jsonl"


class RecordError(RuntimeError):
    """The run record cannot be read (no metrics file, no rows): a message naming the path and the fix."""


def metrics_path(path: str | Path) -> Path:
    """``metrics.jsonl`` of a run directory, or the path itself when it names a file."""
    p = Path(path)
    return p / METRICS_FILE if p.is_dir() else p


# Field names other scripts use for this project's fields; applied to rows without ``kind`` only (this
# project's rows always carry one), and only where the project's own name is absent.
ALIASES = {
    "step": ("iter", "iteration", "global_step", "train/global_step", "trainer/global_step"),
    "loss": ("train_loss", "train/loss", "loss/train", "training_loss"),
    "val_loss": ("eval_loss", "valid_loss", "validation_loss", "val/loss", "eval/loss", "loss/val",
                 "validation/loss"),
    "lr": ("learning_rate", "train/lr", "train/learning_rate"),
    "grad_norm": ("train/grad_norm", "gradient_norm"),
    "tokens": ("num_input_tokens_seen", "tokens_seen", "train/tokens", "train/num_input_tokens_seen"),
}
SHARED_FIELDS = ("step", "tokens", "time", "epoch")     # fields a split row's two halves both keep


def is_val_field(key: str) -> bool:
    return key == "val_loss" or key.startswith("val_")


def row_kind(row: dict) -> str:
    """The row's kind (glassbox.contracts.metrics_row_kinds): a row that holds both losses is ``train``
    here; ``normalize_row`` splits such rows first."""
    kinds = metrics_row_kinds(row)
    return kinds[0] if len(kinds) == 1 else "train"


def normalize_row(row: dict) -> list[dict]:
    """One row as read -> rows with ``kind`` set (see the module doc): a row that has a kind is kept as it
    is; one without gets the aliases mapped and its kind decided, and is split in two when it holds both a
    training loss and a validation loss."""
    row = dict(row)
    if isinstance(row.get("kind"), str):
        return [row]
    for name, aliases in ALIASES.items():
        if row.get(name) is None:
            for a in aliases:
                if row.get(a) is not None:
                    row[name] = row.pop(a)
                    break
    if metrics_row_kinds(row) == ("train", "val"):
        train = {k: v for k, v in row.items() if not is_val_field(k)}
        val = {k: v for k, v in row.items() if is_val_field(k) or k in SHARED_FIELDS}
        return [dict(train, kind="train"), dict(val, kind="val")]
    return [dict(row, kind=row_kind(row))]


def step_of(row) -> int | None:
    """The row's step as an int, or None when it has none (or a fractional one)."""
    step = row.get("step") if isinstance(row, dict) else None
    if isinstance(step, float) and step.is_integer():
        step = int(step)
    if not isinstance(step, int) or isinstance(step, bool):
        return None
    return step


def finish_rows(raw: list) -> tuple[list[dict], int]:
    """Rows as read (any order, any kinds, repeats) -> (rows with kind, sorted by step with training before
    validation, the last of each (kind, step) winning; items without a step, skipped)."""
    by_key: dict[tuple[str, int], dict] = {}
    skipped = 0
    for item in raw:
        if not isinstance(item, dict):
            skipped += 1
            continue
        for row in normalize_row(item):
            step = step_of(row)
            if step is None:
                skipped += 1
                continue
            row["step"] = step
            key = (row["kind"], step)
            by_key.pop(key, None)          # re-insert: the last row of a step also keeps its place last
            by_key[key] = row
    order = {"train": 0, "val": 1}
    return sorted(by_key.values(), key=lambda r: (r["step"], order.get(r["kind"], 2))), skipped


def load_metrics_detail(path: str | Path) -> tuple[list[dict], int]:
    """(rows, skipped lines) of a metrics.jsonl (or any JSON-lines file of rows): see ``finish_rows``.
    Raises RecordError when the file is missing."""
    p = metrics_path(path)
    if not Path(path).exists():
        raise RecordError(f"{path}: no such run directory or metrics file")
    if not p.is_file():
        raise RecordError(f"{p}: no such file (a run directory holds metrics.jsonl once the trainer logged a step)")
    raw, bad = [], 0
    with open(p, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                raw.append(json.loads(line))
            except ValueError:
                bad += 1
    rows, skipped = finish_rows(raw)
    return rows, bad + skipped


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
    """What a reader needs from a run's record; every part but the rows may be absent."""
    path: Path
    rows: list[dict]
    skipped_lines: int = 0
    config: dict | None = None          # config.json (the resolved config; a Hugging Face model config)
    run: dict | None = None             # run.json
    extra: dict = field(default_factory=dict)
    format: str = "glassbox"            # which reader read it (train/record/formats.py)
    label: str | None = None            # the name to show, when the directory's name is not it
    manifest: dict | None = None        # manifest.json of a Glassbox run directory (the mixture it trained on)
    plan: Plan | None = None            # a Glassbox run's config.json read as its plan (train/plan.py)
    notes: list[str] = field(default_factory=list)   # what the reader mapped or left out, for the summary

    @property
    def name(self) -> str:
        if self.label:
            return self.label
        return self.path.name if self.path.is_dir() else self.path.parent.name

    @property
    def train_rows(self) -> list[dict]:
        return split_rows(self.rows)[0]

    @property
    def val_rows(self) -> list[dict]:
        return split_rows(self.rows)[1]

    @property
    def vocab_size(self) -> int | None:
        return self.plan.vocab_size if self.plan else vocab_size_of(self.config)


def read_glassbox(path: str | Path) -> RunRecord:
    """A run directory (or its metrics.jsonl, or any JSON-lines file of rows). Raises RecordError without a
    metrics file or rows."""
    p = Path(path)
    rows, skipped = load_metrics_detail(p)
    if not rows:
        raise RecordError(f"{metrics_path(p)}: no metrics rows (the run has not logged a step yet"
                          + (f"; {skipped} unreadable lines" if skipped else "") + ")")
    run_dir = p if p.is_dir() else p.parent
    label = None if p.is_dir() or p.name == METRICS_FILE else p.stem
    own = p.is_dir() or p.name == METRICS_FILE
    return RunRecord(path=run_dir, rows=rows, skipped_lines=skipped, label=label,
                     format="glassbox" if own else "jsonl",
                     config=_read_json(run_dir / "config.json") if own else None,
                     run=_read_json(run_dir / "run.json") if own else None,
                     manifest=_read_json(run_dir / "manifest.json") if own else None,
                     plan=read_plan_or_none(run_dir) if own else None)
