"""Loss curves written by any trainer, read into this project's rows (``kind``, ``step``, ``tokens``,
``loss``, ``lr``, ``grad_norm``; validation rows with ``val_loss`` and ``val_loss_<source>``).

``read_any(path, fmt="auto", tags=None)`` reads:

- ``glassbox``: a run directory of this project (``metrics.jsonl`` plus config.json, run.json, manifest.json);
- ``jsonl``: any JSON-lines file of rows; rows without ``kind`` are mapped as train/record/load.py says;
- ``hf``: a Hugging Face Trainer ``trainer_state.json`` (the file, its output directory, or the newest
  ``checkpoint-N/`` in it). ``log_history`` entries: ``loss`` -> loss, ``learning_rate`` -> lr, ``grad_norm``,
  ``num_input_tokens_seen`` -> tokens, ``epoch``; ``eval_loss`` -> val_loss and ``eval_<name>_loss`` ->
  val_loss_<name> (one per evaluation dataset); the closing summary entry (the run's mean ``train_loss``,
  ``total_flos``) is not a step and is left out. A ``config.json`` beside it gives the vocabulary size;
- ``tensorboard``: event files (``events.out.tfevents.*``: one file, or every one under a directory). Scalar
  tags are mapped to fields by ``TB_DEFAULTS`` (the first tag present wins), overridden per field with
  ``tags`` (``--tags loss=train/loss,val_loss=eval/loss``). Besides, tags under ``train/`` become training
  fields and ``val/val_loss_<source>`` (this trainer's ``log.tensorboard``) or ``eval/<name>_loss`` (the
  Hugging Face callback) per-source validation losses. A tag written in several subdirectories (Keras writes
  ``epoch_loss`` under ``train/`` and ``validation/``) is named ``<subdirectory>/<tag>``;
- ``csv``: a CSV file with a header row (``step``, ``loss``, ``val_loss``, ``lr``, ``tokens``, any other
  numeric columns; the aliases of train/record/load.py apply); an empty cell is a missing value, a row with
  ``val_loss`` and no ``loss`` is validation.

``auto`` decides from the path: a directory with ``metrics.jsonl``, ``trainer_state.json`` (or
``checkpoint-*/trainer_state.json``) or event files; a file by its name (``trainer_state.json``,
``events.out.tfevents.*``, ``*.csv``, ``*.jsonl``/``*.json`` lines).
"""
from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

from train.record.load import (METRICS_FILE, RecordError, RunRecord, _read_json, finish_rows, read_glassbox)
from train.record.tfevents import read_scalars

FORMATS = ("auto", "glassbox", "jsonl", "hf", "tensorboard", "csv")
FORMAT_NAMES = {"glassbox": "Glassbox metrics.jsonl", "jsonl": "JSON lines", "hf": "Hugging Face trainer_state.json",
                "tensorboard": "TensorBoard event files", "csv": "CSV"}
HF_STATE = "trainer_state.json"
TB_GLOB = "events.out.tfevents.*"
# TensorBoard tags per field, the first present wins: this trainer's log.tensorboard, the Hugging Face
# TensorBoard callback, Keras (qualified by subdirectory), PyTorch Lightning and common hand-written names.
TB_DEFAULTS: dict[str, tuple[str, ...]] = {
    "loss": ("train/loss", "loss", "train_loss", "Loss/train", "loss/train", "train/epoch_loss", "epoch_loss"),
    "val_loss": ("val/val_loss", "eval/loss", "val/loss", "val_loss", "validation/loss", "valid/loss", "Loss/val",
                 "loss/val", "validation/epoch_loss", "eval_loss"),
    "lr": ("train/lr", "train/learning_rate", "lr", "learning_rate", "lr-AdamW", "lr-Adam"),
    "grad_norm": ("train/grad_norm", "grad_norm", "train/gradient_norm"),
    "tokens": ("train/tokens", "tokens", "train/num_input_tokens_seen", "num_input_tokens_seen"),
}
TB_FIELDS = tuple(TB_DEFAULTS)


def parse_tags(spec: str | None) -> dict[str, str]:
    """``loss=train/loss,val_loss=eval/loss`` -> {field: tag}; a field is one of TB_FIELDS or
    ``val_loss_<source>``."""
    out: dict[str, str] = {}
    for part in (spec or "").split(","):
        if not part.strip():
            continue
        key, sep, tag = part.partition("=")
        key, tag = key.strip(), tag.strip()
        if not sep or not tag:
            raise RecordError(f"--tags {part!r}: write FIELD=TAG, e.g. loss=train/loss")
        if key not in TB_FIELDS and not re.fullmatch(r"val_loss_[A-Za-z0-9_.-]+", key):
            raise RecordError(f"--tags {key}: unknown field; fields: {', '.join(TB_FIELDS)} or val_loss_<source>")
        out[key] = tag
    return out


# ----------------------------------------------------------------------------------------------- detection

def _hf_state(p: Path) -> Path | None:
    if p.is_file():
        return p if p.name == HF_STATE else None
    if (p / HF_STATE).is_file():
        return p / HF_STATE
    ckpts = [(int(m.group(1)), c) for c in p.glob("checkpoint-*")
             if (m := re.fullmatch(r"checkpoint-(\d+)", c.name)) and (c / HF_STATE).is_file()]
    return max(ckpts)[1] / HF_STATE if ckpts else None


def _event_files(p: Path) -> list[Path]:
    if p.is_file():
        return [p] if p.name.startswith("events.out.tfevents.") else []
    return sorted(p.rglob(TB_GLOB), key=lambda f: (f.parent.relative_to(p).as_posix(), f.name))


def detect(path: str | Path) -> str:
    p = Path(path)
    if not p.exists():
        raise RecordError(f"{path}: no such run directory or file")
    if p.is_dir():
        if (p / METRICS_FILE).is_file():
            return "glassbox"
        if _hf_state(p):
            return "hf"
        if _event_files(p):
            return "tensorboard"
        raise RecordError(f"{path}: no metrics.jsonl (a run directory holds it once the trainer logged a step), "
                          f"trainer_state.json or TensorBoard event files; pass a file (CSV, JSON lines) or "
                          f"--format")
    name = p.name
    if name == HF_STATE:
        return "hf"
    if name.startswith("events.out.tfevents."):
        return "tensorboard"
    if p.suffix.lower() in (".csv", ".tsv"):
        return "csv"
    if name == METRICS_FILE:
        return "glassbox"
    if p.suffix.lower() == ".json":
        head = p.read_text(encoding="utf-8", errors="replace")[:4096].lstrip()
        if head.startswith("{") and '"log_history"' in p.read_text(encoding="utf-8", errors="replace"):
            return "hf"
    return "jsonl"


def read_any(path: str | Path, fmt: str = "auto", tags: dict[str, str] | None = None) -> RunRecord:
    if fmt not in FORMATS:
        raise RecordError(f"--format {fmt}: unknown; one of {', '.join(FORMATS)}")
    if not Path(path).exists():
        raise RecordError(f"{path}: no such run directory or file")
    kind = detect(path) if fmt == "auto" else fmt
    if kind in ("glassbox", "jsonl"):
        rec = read_glassbox(path)
        if kind == "jsonl":
            rec.format = "jsonl"
    else:
        rec = {"hf": read_hf, "tensorboard": read_tensorboard, "csv": read_csv}[kind](Path(path), tags)
    if tags and kind != "tensorboard":
        rec.notes.append("--tags applies to TensorBoard event files only; ignored")
    return rec


def _record(path: Path, rows: list, fmt: str, skipped: int = 0, label: str | None = None, config=None,
            notes=None, extra=None) -> RunRecord:
    done, bad = finish_rows(rows)
    if not done:
        raise RecordError(f"{path}: no rows with a step and a loss could be read as {FORMAT_NAMES[fmt]}")
    return RunRecord(path=path if path.is_dir() else path.parent, rows=done, skipped_lines=skipped + bad,
                     config=config, format=fmt, label=label, notes=list(notes or []), extra=dict(extra or {}))


# ------------------------------------------------------------------------------------------ Hugging Face

def hf_rows(log_history: list) -> tuple[list[dict], int]:
    """log_history entries -> rows (see the module doc); (rows, entries left out)."""
    rows, skipped = [], 0
    for e in log_history:
        # The closing summary (the run's mean train_loss, total_flos) is not a step; newer releases put
        # train_runtime in every entry, so that key alone does not mark it.
        if not isinstance(e, dict) or "step" not in e or ("loss" not in e and ("train_loss" in e or "total_flos" in e)):
            skipped += 1
            continue
        base = {"step": e["step"]}
        for src, dst in (("num_input_tokens_seen", "tokens"), ("epoch", "epoch")):
            if e.get(src) is not None:
                base[dst] = e[src]
        val = {}
        for k, v in e.items():
            if k == "eval_loss":
                val["val_loss"] = v
            elif (m := re.fullmatch(r"eval_(.+)_loss", k)):
                val[f"val_loss_{m.group(1)}"] = v
        if val:
            if "val_loss" not in val:        # several eval datasets and no overall loss: their mean
                parts = [v for v in val.values() if isinstance(v, (int, float))]
                if parts:
                    val["val_loss"] = sum(parts) / len(parts)
            rows.append({**base, **val, "kind": "val"})
        if "loss" in e:
            row = {**base, "kind": "train", "loss": e["loss"]}
            for src, dst in (("learning_rate", "lr"), ("grad_norm", "grad_norm")):
                if src in e:
                    row[dst] = e[src]
            rows.append(row)
        if not val and "loss" not in e:
            skipped += 1
    return rows, skipped


def read_hf(path: Path, tags=None) -> RunRecord:
    state_path = _hf_state(path)
    if state_path is None:
        raise RecordError(f"{path}: no trainer_state.json here or in a checkpoint-N/ folder")
    try:
        state = json.loads(state_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise RecordError(f"{state_path}: not readable as JSON ({e})") from None
    if not isinstance(state, dict) or not isinstance(state.get("log_history"), list):
        raise RecordError(f"{state_path}: no log_history list (is this a Hugging Face trainer_state.json?)")
    rows, skipped = hf_rows(state["log_history"])
    out_dir = state_path.parent.parent if re.fullmatch(r"checkpoint-\d+", state_path.parent.name) else state_path.parent
    config = _read_json(state_path.parent / "config.json") or _read_json(out_dir / "config.json")
    extra = {k: state[k] for k in ("global_step", "max_steps", "num_train_epochs", "train_batch_size",
                                   "logging_steps", "eval_steps") if k in state}
    notes = [f"read {state_path.relative_to(out_dir) if out_dir != state_path.parent else state_path.name}"]
    rec = _record(out_dir, rows, "hf", skipped=0, config=config, notes=notes, extra=extra)
    rec.path = out_dir
    return rec


# ------------------------------------------------------------------------------------------- TensorBoard

def read_tensorboard(path: Path, tags: dict[str, str] | None = None) -> RunRecord:
    files = _event_files(path)
    if not files:
        raise RecordError(f"{path}: no TensorBoard event files ({TB_GLOB})")
    root = path if path.is_dir() else path.parent
    # (subdirectory, tag) -> {step: value}; files in name order (their names start with the creation time),
    # so a step written again by a resumed writer takes the later value.
    series: dict[tuple[str, str], dict[int, float]] = {}
    bad = 0
    for f in files:
        scalars, b = read_scalars(f)
        bad += b
        sub = f.parent.relative_to(root).as_posix() if f.parent != root else ""
        for s in scalars:
            series.setdefault((sub, s.tag), {})[s.step] = s.value
    if not series:
        raise RecordError(f"{path}: the event files hold no scalars")
    # Names: the bare tag, or <last subdirectory>/<tag> where the same tag is written in several folders.
    dirs_of: dict[str, set[str]] = {}
    for sub, tag in series:
        dirs_of.setdefault(tag, set()).add(sub)
    named: dict[str, dict[int, float]] = {}
    for (sub, tag), vals in series.items():
        name = tag if len(dirs_of[tag]) == 1 or not sub else f"{sub.rsplit('/', 1)[-1]}/{tag}"
        named.setdefault(name, {}).update(vals)
    chosen: dict[str, str] = {}
    for fld, candidates in TB_DEFAULTS.items():
        for t in candidates:
            if t in named:
                chosen[fld] = t
                break
    for fld, t in (tags or {}).items():
        if t not in named:
            raise RecordError(f"--tags {fld}={t}: no such scalar tag in {path}; tags: {', '.join(sorted(named))}")
        chosen[fld] = t
    used = set(chosen.values())
    train_extra, val_extra = {}, {}
    for t in named:
        if t in used:
            continue
        if (m := re.fullmatch(r"val/(val_loss_.+)", t)) or (m := re.fullmatch(r"eval/(.+)_loss", t)):
            key = m.group(1) if m.group(1).startswith("val_loss_") else f"val_loss_{m.group(1)}"
            if key not in chosen:
                val_extra[key] = t
        elif t.startswith("train/") and t[len("train/"):] not in ("step", "kind", "time"):
            train_extra[t[len("train/"):]] = t
    val_fields = {k: chosen[k] for k in chosen if k.startswith("val_loss")} | val_extra
    train_fields = {k: chosen[k] for k in chosen if not k.startswith("val_loss")} | train_extra
    if "loss" not in chosen and "val_loss" not in val_fields:
        raise RecordError(f"{path}: no loss tag found (looked for {', '.join(TB_DEFAULTS['loss'])}); name yours "
                          f"with --tags loss=TAG (tags: {', '.join(sorted(named))})")
    rows = []
    tokens = named.get(chosen["tokens"], {}) if "tokens" in chosen else {}
    for fields, kind in ((train_fields, "train"), (val_fields, "val")):
        steps = sorted({s for t in fields.values() for s in named[t]})
        for s in steps:
            row = {"kind": kind, "step": s}
            for k, t in fields.items():
                if s in named[t]:
                    row[k] = named[t][s]
            if kind == "val" and s in tokens:
                row["tokens"] = tokens[s]
            if kind == "train" and "loss" not in row:
                continue                 # a step that logged only lr or other fields
            rows.append(row)
    left = sorted(set(named) - set(train_fields.values()) - set(val_fields.values()))
    notes = ["tags: " + ", ".join(f"{k} <- {t}" for k, t in sorted(chosen.items()))]
    if left:
        more = f" (+{len(left) - 20} more)" if len(left) > 20 else ""
        notes.append("tags not used: " + ", ".join(left[:20]) + more)
    label = None if path.is_dir() else path.parent.name
    for r in rows:                       # event files hold float32: whole token counts back to integers
        if isinstance(r.get("tokens"), float) and r["tokens"].is_integer():
            r["tokens"] = int(r["tokens"])
    return _record(root, rows, "tensorboard", skipped=bad, label=label, notes=notes)


# --------------------------------------------------------------------------------------------------- CSV

def _cell(v: str | None):
    if v is None:
        return None
    v = v.strip()
    if v == "" or v.lower() in ("null", "none", "na", "n/a"):
        return None
    try:
        x = float(v)
    except ValueError:
        return v
    return int(x) if x.is_integer() and "." not in v and "e" not in v.lower() and math.isfinite(x) else x


def read_csv(path: Path, tags=None) -> RunRecord:
    if not path.is_file():
        raise RecordError(f"{path}: not a file (a CSV with a header row: step, loss, val_loss, lr, tokens)")
    with open(path, newline="", encoding="utf-8", errors="replace") as fh:
        sample = fh.read(4096)
        fh.seek(0)
        delim = "\t" if path.suffix.lower() == ".tsv" or ("\t" in sample and "," not in sample) else ","
        reader = csv.DictReader(fh, delimiter=delim)
        if not reader.fieldnames:
            raise RecordError(f"{path}: empty, or no header row")
        header = [h.strip() for h in reader.fieldnames]
        rows, bad = [], 0
        for raw in reader:
            if None in raw:                                 # more cells than the header has names
                bad += 1
                continue
            rows.append({h.strip(): _cell(v) for h, v in raw.items() if h is not None})
    if not {"step", "iter", "iteration", "global_step"} & set(header):
        raise RecordError(f"{path}: the header ({', '.join(header)}) has no step column; write step, loss, "
                          "val_loss, lr, tokens")
    return _record(path, rows, "csv", skipped=bad, label=path.stem)


def read_run(path: str | Path, fmt: str = "auto", tags: dict[str, str] | None = None) -> RunRecord:
    """Any trainer's record (train/record/formats.py: this project's run directory, JSON lines, Hugging Face
    trainer_state.json, TensorBoard event files, CSV). Raises RecordError when there is nothing to read."""
    return read_any(path, fmt, tags)
