"""What a classifier is trained on: the pipeline's own inputs named on the command line, and label files.

An input is ``PATH[:key=value,key=value...]``. PATH is a file, a glob, or a pipeline DATA folder:

- JSONL (``.jsonl``, ``.json.gz``, ``.ndjson``, gzipped or not): one document a line, its ``text`` (``field=``
  names another), with ``id``, ``lang``, ``source`` and ``license`` used when present;
- Parquet: the same columns;
- WARC / ARC / WET (``.warc``, ``.warc.gz``, ``.arc.gz``, ``.wet.gz``): pages run through the pipeline's own
  extractor;
- any other file: plain text, one document;
- a DATA folder (it holds ``dedup/`` or ``rejected/``): its kept documents (``part=kept``, the default:
  ``DATA/dedup``) or the documents a stage rejected (``part=rejected``, narrowed by ``stage=`` and ``reason=``).

Filters: ``source=`` and ``lang=`` keep the documents whose column says so; ``lang=`` also states the language of
documents without a ``lang`` column (prose files), and any other document without one gets it from the language
identifier (lid.176). ``name=`` names the input in the
card (default: the file's folder and stem, e.g. ``textbook/openstax``), ``license=`` states its licence (a
``license`` field of the rows is used too).

A label file (``--labels``) is JSONL in the annotation contract (docs/quality.md): ``id``, ``source``,
``lang``, ``text``, ``grade`` (a number in [0, 5] or null), ``status``, ``reply``, ``model``, ``rubric``. Rows
without a usable grade are counted by reason and kept out of training, never an error.
"""
from __future__ import annotations

import glob
import gzip
import json
import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

KEYS = ("name", "source", "lang", "license", "part", "stage", "reason", "field", "weight", "class")
PARTS = ("kept", "rejected")
_SPEC_TAIL = re.compile(r"^(\w+=[^,]*)(,\w+=[^,]*)*$")
GRADE_RANGE = (0.0, 5.0)


class InputError(ValueError):
    """A mistake in what the command was given: the message names the input and the fix."""


@dataclass
class InputSpec:
    path: str
    options: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        if "name" in self.options:
            return self.options["name"]
        p = Path(self.path.rstrip("/"))
        stem = p.name.split(".")[0] if "*" not in p.name else p.name
        return f"{p.parent.name}/{stem}" if p.parent.name and p.parent.name not in (".", "..") else stem


@dataclass
class Doc:
    """One document of an input: its text, the unit the held-out split keeps whole (a book, an article, a page),
    and what the card reports."""
    text: str
    group: str | None      # None: every chunk of the document is a unit of its own (a plain text file)
    input: str
    lang: str | None = None
    license: str | None = None
    source: str | None = None
    file: str | None = None
    id: str | None = None    # the row's own id, when it has one (what an annotation's label rows are keyed by)


def parse_spec(arg: str) -> InputSpec:
    """``PATH[:key=value,...]``; the options are split off only when they read as options (a path such as
    ``s3://bucket/x`` keeps its colon)."""
    path, options = arg, {}
    if ":" in arg:
        head, tail = arg.rsplit(":", 1)
        if _SPEC_TAIL.match(tail):
            path = head
            for item in tail.split(","):
                k, v = item.split("=", 1)
                if k not in KEYS:
                    raise InputError(f"{arg}: unknown option {k!r}; options are {', '.join(KEYS)}")
                options[k] = v
    if options.get("part", "kept") not in PARTS:
        raise InputError(f"{arg}: part={options['part']} is not one of {', '.join(PARTS)}")
    return InputSpec(path, options)


def is_data_folder(path: str) -> bool:
    return os.path.isdir(path) and any(os.path.isdir(os.path.join(path, d)) for d in ("dedup", "rejected"))


def files_of(spec: InputSpec) -> list[str]:
    """The files an input names (a DATA folder: its Parquet files of the part asked for)."""
    path = spec.path
    if is_data_folder(path):
        if spec.options.get("part", "kept") == "kept":
            folder = os.path.join(path, "dedup")
            if not os.path.isdir(folder):
                raise InputError(f"{path}: no dedup/ folder with the kept documents; run `make clean-dedup "
                                 f"DATA={path}` first (or use part=rejected)")
            pattern = os.path.join(folder, "**", "*.parquet")
        else:
            stage = spec.options.get("stage", "*")
            pattern = os.path.join(path, "rejected", f"stage={stage}", "**", "*.parquet")
        return sorted(glob.glob(pattern, recursive=True))
    if os.path.isdir(path):
        raise InputError(f"{path}: a folder, but not a pipeline DATA folder (no dedup/ or rejected/); name its "
                         "files or a glob")
    matched = sorted(glob.glob(path)) if glob.has_magic(path) else ([path] if os.path.isfile(path) else [])
    if not matched:
        raise InputError(f"{path}: no such file (paths are relative to where the command runs)")
    return matched


def _kind(path: str) -> str:
    name = path.lower()
    if name.endswith((".warc", ".warc.gz", ".arc", ".arc.gz")):
        return "warc"
    if name.endswith((".wet", ".wet.gz")):
        return "wet"
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith((".jsonl", ".jsonl.gz", ".json.gz", ".ndjson", ".ndjson.gz", ".json")):
        return "jsonl"
    return "text"


def _group(row_id, fallback: str) -> str:
    """The split unit: a document id up to '#' (``<parent>#pNN`` pieces of one work stay together)."""
    return str(row_id).split("#", 1)[0] if row_id not in (None, "") else fallback


def read_input(spec: InputSpec, skipped: Counter) -> list[Doc]:
    """Every document of the input that passes its filters; `skipped` counts the others by reason."""
    out: list[Doc] = []
    text_field = spec.options.get("field", "text")
    for path in files_of(spec):
        kind = _kind(path)
        if kind == "jsonl":
            rows = _jsonl_rows(path, spec, skipped)
        elif kind == "parquet":
            rows = _parquet_rows(path, text_field)
        elif kind in ("warc", "wet"):
            rows = _warc_rows(path, kind, skipped)
        else:
            rows = _text_rows(path)
        for i, row in enumerate(rows):
            text = row.get(text_field) if kind in ("jsonl", "parquet") else row.get("text")
            if not isinstance(text, str) or not text.strip():
                skipped[f"{spec.name}: no text"] += 1
                continue
            if not _passes(row, spec, skipped):
                continue
            fallback = f"{os.path.basename(path)}:{row.get('url') or i}"
            group = None if row.get("split_by_chunk") else _group(row.get("id"), fallback)
            out.append(Doc(text=text, group=group, input=spec.name, lang=row.get("lang") or spec.options.get("lang"),
                           license=row.get("license") or spec.options.get("license"),
                           source=row.get("source"), file=path,
                           id=None if row.get("id") in (None, "") else str(row.get("id"))))
    return out


def _passes(row: dict, spec: InputSpec, skipped: Counter) -> bool:
    o = spec.options
    if "source" in o and row.get("source") != o["source"]:
        skipped[f"{spec.name}: source is not {o['source']}"] += 1
        return False
    if "lang" in o and row.get("lang") is not None and row.get("lang") != o["lang"]:
        skipped[f"{spec.name}: lang is not {o['lang']}"] += 1
        return False
    if "reason" in o and row.get("reason") != o["reason"]:
        skipped[f"{spec.name}: reason is not {o['reason']}"] += 1
        return False
    return True


def _jsonl_rows(path: str, spec: InputSpec, skipped: Counter):
    opener = gzip.open if path.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError:
                    skipped[f"{spec.name}: not JSON ({os.path.basename(path)} line {n})"] += 1
                    continue
                if isinstance(obj, dict):
                    yield obj
                else:
                    skipped[f"{spec.name}: not a JSON object"] += 1
    except (OSError, EOFError) as e:
        raise InputError(f"{path}: unreadable ({e})") from None


def _parquet_rows(path: str, text_field: str):
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    names = pf.schema_arrow.names
    if text_field not in names:
        raise InputError(f"{path}: no column {text_field!r} (columns: {', '.join(names[:20])}); name it with "
                         "field=COLUMN")
    cols = [c for c in (text_field, "id", "source", "lang", "reason", "url", "license") if c in names]
    for batch in pf.iter_batches(columns=cols, batch_size=2048):
        yield from batch.to_pylist()


def _warc_rows(path: str, kind: str, skipped: Counter):
    from pipeline.extract.html import extract_file
    from pipeline.extract.settings import ExtractConfig

    for r in extract_file(path, "web", kind, ExtractConfig()):
        if r["status"] == "kept" and r["text"]:
            yield {"text": r["text"], "url": r["url"], "id": r["url"] or r["id"]}
        else:
            skipped[f"{os.path.basename(path)}: {r['reason'] or r['status']}"] += 1


def _text_rows(path: str):
    opener = gzip.open if path.lower().endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
        # one document; each chunk of it is its own split unit (a text file names no parts)
        yield {"text": fh.read(), "id": None, "split_by_chunk": True}


# --- label files ------------------------------------------------------------------------------------------------
@dataclass
class Labelled:
    doc: Doc
    grade: float


def read_labels(path: str, skipped: Counter) -> list[Labelled]:
    """The rows of a label file that hold a usable grade; every other row is counted in `skipped` by reason
    (no grade, not a number, out of range, no text, not JSON), with no exception for bad rows."""
    if not os.path.isfile(path):
        raise InputError(f"--labels {path}: no such file")
    out: list[Labelled] = []
    opener = gzip.open if path.lower().endswith(".gz") else open
    name = f"labels/{Path(path).name.split('.')[0]}"
    with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                skipped["labels: not JSON"] += 1
                continue
            if not isinstance(row, dict):
                skipped["labels: not a JSON object"] += 1
                continue
            grade = row.get("grade")
            if grade is None:
                skipped[f"labels: no grade (status {row.get('status') or 'missing'})"] += 1
                continue
            if isinstance(grade, bool) or not isinstance(grade, (int, float)) or not math.isfinite(grade):
                skipped["labels: grade is not a number"] += 1
                continue
            if not GRADE_RANGE[0] <= grade <= GRADE_RANGE[1]:
                skipped[f"labels: grade outside [{GRADE_RANGE[0]:g}, {GRADE_RANGE[1]:g}]"] += 1
                continue
            text = row.get("text")
            if not isinstance(text, str) or not text.strip():
                skipped["labels: no text"] += 1
                continue
            doc = Doc(text=text, group=_group(row.get("id"), f"{name}:{n}"),
                      input=f"{name}/{row.get('source') or 'unknown'}", lang=row.get("lang"),
                      source=row.get("source"), file=path)
            out.append(Labelled(doc, float(grade)))
    return out
