"""Manifest versions inside a run: which manifest fed which steps, and the data order of each.

A run starts on one manifest: segment 0, whose data order is ``RUN/data_order/`` (train/data/sample_index.py).
Running the trainer again on the same RUN with another manifest (``make pretrain RUN=r MANIFEST=<version>``)
continues from the newest complete checkpoint S on the new mixture: segment k, with its own order in
``RUN/data_order/seg-<k>/`` that starts at the data batch D the cursor is at (S plus the rollback shift). Step
t > S trains on data batch t - 1 + shift, now of segment k; the batches before D keep the order that trained
them, so ``trace`` answers for every step. Going back to an earlier version is the same command (the data
rollback): one more segment, on that manifest.

What a new segment keeps from the run:

- each source's stream goes on where it stopped: a source with the same shards, seed and held-out documents
  in an earlier segment continues at the draw after the last one the cursor passed there, so changing the
  weights never replays documents from the start; a source new to the run (or with other shards) starts its
  stream at draw 0;
- the held-out validation documents: a source whose shards an earlier segment held out keeps those documents
  (``val_loss_<source>`` goes on over the same sequences); a source new to the run (or with other shards) holds
  out its own now, with the run's ``eval.samples_per_source`` (its ``val_loss_<source>`` starts at the switch);
  a source the new version leaves out is no longer evaluated. The overall ``val_loss`` weights the sources by
  the current version's plan, so it steps at a switch where the per-source losses do not. The leakage check
  runs again for the segment (``data_order/seg-<k>/leakage.json``);
- the tokenizer: a manifest with another tokenizer is refused, naming both sha256 (the model's embedding rows
  are that tokenizer's pieces); so is another sequence length.

``run.json`` holds the timeline, ``timeline``: one entry per segment (``segment``, ``first_step``, ``last_step``
(null while current), ``data_step`` (its first data batch), ``first_sample``, the manifest's ``name``, ``path``,
``version``, ``parent``, ``content_hash``, ``file_sha256``, ``tokenizer_sha256``, ``planned_shares``, and
``data_order``, its folder). ``manifest`` is the current one, ``manifest.json`` its copy; once a run switched,
every segment's folder holds a copy of its manifest too. A segment that a switch at the same checkpoint replaces
before it reached a later checkpoint moves to ``timeline_discarded``; switching back to the manifest of the
segment it interrupted reopens that segment. The token cache is keyed by shard content, so shards shared by
versions are flattened once.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from train.data.manifest import Manifest, ManifestError
from train.data.sample_index import DataOrder
from train.data.shards import ShardCache
from train.plan import read_plan_or_none

SEGMENT0 = "data_order"


class TimelineError(ManifestError):
    """A manifest this run cannot continue on (another tokenizer, no checkpoint to continue from)."""


# ----------------------------------------------------------------------------------------------- the record

def entry(manifest: Manifest, segment: int, first_step: int, data_step: int, global_batch: int) -> dict:
    total = sum(s.target_tokens for s in manifest.sources.values())
    return {"segment": segment, "first_step": first_step, "last_step": None, "data_step": data_step,
            "first_sample": data_step * global_batch, "name": manifest.name, "path": str(manifest.path),
            "version": manifest.raw.get("version"), "parent": manifest.raw.get("parent"),
            "content_hash": manifest.content_hash, "file_sha256": manifest.file_sha256,
            "tokenizer_sha256": manifest.tokenizer["sha256"],
            "planned_shares": {n: (s.target_tokens / total if total else 0.0) for n, s in manifest.sources.items()},
            "data_order": SEGMENT0 if segment == 0 else f"{SEGMENT0}/seg-{segment}"}


def _json(path: Path) -> dict | None:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def segments(record: dict, run: Path | None = None) -> list[dict]:
    """The active timeline of a run.json; a run from before timelines is one segment on its manifest."""
    if record.get("timeline"):
        return record["timeline"]
    man = record.get("manifest") or {}
    copy = _json(Path(run) / "manifest.json") if run is not None else None
    return [{"segment": 0, "first_step": 1, "last_step": None, "data_step": 0, "first_sample": 0,
             "name": man.get("name"), "path": man.get("path"), "version": (copy or {}).get("version"),
             "parent": (copy or {}).get("parent"), "content_hash": man.get("content_hash"),
             "file_sha256": man.get("file_sha256"),
             "tokenizer_sha256": ((copy or {}).get("tokenizer") or {}).get("sha256"), "data_order": SEGMENT0}]


def read(run: str | Path) -> list[dict]:
    """The run's active timeline ([] when it has no run.json)."""
    record = _json(Path(run) / "run.json")
    return segments(record, Path(run)) if record else []


def segment_at_step(segs: list[dict], step: int) -> dict:
    """The segment that trains (or trained) optimizer step ``step`` (1-based)."""
    return [s for s in segs if s["first_step"] <= max(step, 1)][-1]


def current_manifest_path(run: str | Path) -> str | None:
    """The manifest the run trains on now (run.json), None for a new run."""
    record = _json(Path(run) / "run.json")
    return (record.get("manifest") or {}).get("path") if record else None


def switch_from(run: str | Path, manifest: Manifest, seq_len: int, asked: bool = True) -> dict | None:
    """Before any process group: the current segment when ``manifest`` is another one than the run trains on
    now (a switch), else None. Raises TimelineError for a manifest the run cannot continue on. ``asked``: the
    manifest was named (else it is the run's own, read from its recorded path, and must not have changed)."""
    segs = read(run)
    if not segs or segs[-1]["content_hash"] == manifest.content_hash:
        return None
    cur = segs[-1]
    if not asked:
        raise TimelineError(
            f"{manifest.path}: changed since run {run} trained on it (content_hash {cur['content_hash'][:12]}... "
            f"then, {manifest.content_hash[:12]}... now); pass MANIFEST={manifest.path} to switch the run to the "
            "new content, or restore the file")
    old_tok, new_tok = cur.get("tokenizer_sha256"), manifest.tokenizer["sha256"]
    if old_tok != new_tok:
        raise TimelineError(
            f"{manifest.path}: its tokenizer (sha256 {new_tok}) is not the one run {run} trains with (sha256 "
            f"{old_tok}, manifest {cur['path']}); token ids would mean other pieces to the model. A run continues "
            "only on manifests of its own tokenizer: tokenize the new data with it (tokenize.tokenizer: <the run's "
            "tokenizer.model>) and mix again, or train this manifest in a new RUN")
    plan = read_plan_or_none(run)
    if plan is not None and plan.seq_len != seq_len:
        raise TimelineError(
            f"{manifest.path}: its max_seq_len gives sequences of {seq_len} tokens, run {run} trains "
            f"{plan.seq_len}; mix the new version with max_seq_len {plan.seq_len}")
    return cur


def apply_switch(record: dict, run: Path, manifest: Manifest, start: int, data_step: int, global_batch: int) -> dict:
    """Rank 0, from run_record.prepare: the timeline of ``record`` (run.json) continues on ``manifest`` after
    checkpoint ``start``, whose data cursor is at batch ``data_step``. Returns the segment now current (new, or
    the one a discarded segment had interrupted). Keeps the manifest copies."""
    segs = segments(record, run)
    if start < 1:
        raise TimelineError(f"{run} has no trained step to continue from on {segs[-1]['path']}; a mixture from step 0 "
                            f"is a new run: use a new RUN (or remove {run})")
    previous = segs[-1]
    kept = [s for s in segs if s["first_step"] <= start]
    gone = [s for s in segs if s["first_step"] > start]      # switched at this checkpoint, never checkpointed since
    if gone:
        record.setdefault("timeline_discarded", []).extend(
            {**s, "discarded": f"replaced by a switch at step {start}"} for s in gone)
    discarded = record.get("timeline_discarded", [])
    _keep_copy(run, previous)
    if kept[-1]["content_hash"] == manifest.content_hash:
        seg = kept[-1]
        seg["last_step"] = None
    else:
        kept[-1]["last_step"] = start
        number = 1 + max(s["segment"] for s in segs + discarded)
        seg = entry(manifest, number, start + 1, data_step, global_batch)
        kept.append(seg)
    record["timeline"] = kept
    record["manifest"] = {"path": str(manifest.path), "name": manifest.name, "content_hash": manifest.content_hash,
                          "file_sha256": manifest.file_sha256}
    (run / seg["data_order"]).mkdir(parents=True, exist_ok=True)
    shutil.copyfile(manifest.path, run / seg["data_order"] / "manifest.json")
    shutil.copyfile(manifest.path, run / "manifest.json")
    return seg


def _keep_copy(run: Path, seg: dict) -> None:
    """The segment's manifest copy in its data-order folder, from ``manifest.json`` before it is replaced."""
    copy = run / seg["data_order"] / "manifest.json"
    if not copy.is_file() and (run / "manifest.json").is_file():
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(run / "manifest.json", copy)


def row_fields(run: str | Path) -> dict:
    """Fields of every metrics row the current segment writes: ``manifest_version`` once the run has switched
    (rows of segment 0 go without; the timeline attributes them)."""
    segs = read(run)
    if segs and segs[-1]["segment"] and segs[-1].get("version") is not None:
        return {"manifest_version": segs[-1]["version"]}
    return {}


def realized_shares(run: Path, seg: dict, data_steps: list[int], global_batch: int) -> dict[str, float] | None:
    """Each source's share of the sequences of ``data_steps`` (0-based data batches of segment ``seg``), counted
    in the segment's index; None when its order is not on record."""
    record = Path(run) / seg["data_order"]
    meta = _json(record / "meta.json")
    if not meta or not data_steps or not (record / "index_source.npy").is_file():
        return None
    src = np.load(record / "index_source.npy", mmap_mode="r")
    rows = np.add.outer(np.asarray(data_steps, np.int64) * global_batch, np.arange(global_batch)).ravel()
    rows -= int(meta.get("first_sample", 0))
    if rows.min() < 0 or rows.max() >= len(src):
        return None
    counts = np.bincount(np.asarray(src[rows], np.int64), minlength=len(meta["sources"]))
    return {info["name"]: float(c / counts.sum()) for info, c in zip(meta["sources"], counts)}


def describe(seg: dict) -> str:
    v = f" v{seg['version']}" if seg.get("version") is not None else ""
    return f"{seg.get('name')}{v} ({str(seg.get('content_hash'))[:12]}...)"


# ----------------------------------------------------------------------------------------------- data orders

def order_dir(run: str | Path, content_hash: str | None = None) -> Path:
    """The data-order folder of the current segment (of the newest one on ``content_hash``, when given)."""
    segs = read(run)
    match = [s for s in segs if content_hash is None or s["content_hash"] == content_hash]
    return Path(run) / (match[-1]["data_order"] if match else SEGMENT0)


def leakage_file(run: Path) -> Path:
    """Where the current segment's leakage check goes: ``leakage.json``, or in a later segment's folder."""
    segs = read(run)
    if not segs or segs[-1]["segment"] == 0:
        return run / "leakage.json"
    return run / segs[-1]["data_order"] / "leakage.json"


def sources(run: Path, segment: int | None = None) -> list[str]:
    """Every source of the run's manifests so far (of one segment), sorted: the names telemetry counts."""
    names: set[str] = set()
    for seg in read(run):
        if segment is None or seg["segment"] == segment:
            meta = _json(run / seg["data_order"] / "meta.json") or {}
            names |= {s["name"] for s in meta.get("sources", [])}
    return sorted(names)


def load_order(run: Path, manifest: Manifest, cache: ShardCache) -> DataOrder:
    return DataOrder.load(manifest, cache, order_dir(run))


def open_order(run: Path, manifest: Manifest, cache: ShardCache, seq_len: int, needed: int,
               val_samples: int) -> DataOrder:
    """Rank 0: the current segment's data order, built on first use and extended to global sample ``needed``.
    ``val_samples``: sequences held out per source when the run starts (0: no validation)."""
    segs = read(run)
    seg = segs[-1]
    record = run / seg["data_order"]
    if seg["segment"] == 0:
        return _open_first(manifest, cache, seq_len, record, needed, val_samples)
    if (record / "meta.json").is_file():
        order = DataOrder.load(manifest, cache, record)
        if order.n_samples < needed:
            order = _extended(order, needed)
        return order
    return _new_segment(run, segs, manifest, cache, seq_len, needed)


def _open_first(manifest, cache, seq_len, record: Path, needed: int, val_samples: int) -> DataOrder:
    if (record / "meta.json").is_file():
        order = DataOrder.load(manifest, cache, record)
        if order.n_samples < needed:
            fresh = DataOrder(manifest, cache, seq_len, record)
            fresh.hold_out(order.val_samples)
            if any(not np.array_equal(a.val_docs, b.val_docs) for a, b in zip(fresh.streams, order.streams)):
                raise RuntimeError(f"{record}: the held-out validation documents rebuilt now differ "
                                   "from the recorded ones; start a new RUN")
            fresh.build(needed)
            fresh.save()
            order = fresh
        return order
    order = DataOrder(manifest, cache, seq_len, record)
    if val_samples:
        order.hold_out(val_samples)
    order.build(needed)
    order.save()
    return order


def _extended(order: DataOrder, needed: int) -> DataOrder:
    """A later segment's order rebuilt longer from its recorded parameters (the old index must be a prefix)."""
    fresh = DataOrder(order.manifest, order.cache, order.L, order.record)
    fresh.first_sample, fresh.draw_offset = order.first_sample, order.draw_offset.copy()
    fresh.val_samples, fresh.val_sources = order.val_samples, list(order.val_sources)
    for a, b in zip(fresh.streams, order.streams):
        a.set_val_docs(b.val_docs)
    fresh.build(needed)
    fresh.warnings = list(dict.fromkeys(order.warnings + fresh.warnings))
    fresh.save()
    return fresh


def _source_info(meta: dict, name: str) -> dict | None:
    return next((s for s in meta["sources"] if s["name"] == name), None)


def _shas(info: dict) -> list[str]:
    return [sh["sha256"] for sh in info["shards"]]


def _stream_key(meta: dict, info: dict) -> tuple:
    """What makes two segments' streams of a source the same stream: documents, held-out set, seed, length."""
    return (tuple(_shas(info)), tuple(info["val_documents"]), meta["seed"], meta["seq_len"])


def _end_draw(run: Path, seg: dict, meta: dict, name: str, end_sample: int) -> int:
    """The draw after the last one of source ``name`` among the segment's samples before ``end_sample``."""
    record = run / seg["data_order"]
    s = [x["name"] for x in meta["sources"]].index(name)
    n = max(0, end_sample - int(meta.get("first_sample", 0)))
    src = np.load(record / "index_source.npy", mmap_mode="r")[:n]
    draws = np.load(record / "index_draw.npy", mmap_mode="r")[:n][np.asarray(src) == s]
    return int(draws.max()) + 1 if len(draws) else int(_source_info(meta, name).get("draw_offset", 0))


def _new_segment(run: Path, segs: list[dict], manifest: Manifest, cache: ShardCache, seq_len: int,
                 needed: int) -> DataOrder:
    seg, earlier = segs[-1], segs[:-1]
    metas = []
    for s in earlier:
        meta = _json(run / s["data_order"] / "meta.json")
        if meta is None:
            raise RuntimeError(f"{run / s['data_order']}: no meta.json; segment {s['segment']} of the run's "
                               "timeline has no recorded data order")
        metas.append(meta)
    order = DataOrder(manifest, cache, seq_len, run / seg["data_order"])
    order.first_sample = seg["first_sample"]
    order.val_samples = int(metas[0]["val_samples_per_source"])
    notes = []
    # Held-out documents: those of the newest earlier segment over the same shards, else held out now.
    new = set()
    for i, name in enumerate(order.names):
        shas = [sh.sha256 for sh in manifest.sources[name].shards]
        donor = next((m for m in reversed(metas) if (x := _source_info(m, name)) and _shas(x) == shas), None)
        if donor is None:
            new.add(i)
            continue
        order.streams[i].set_val_docs(np.asarray(_source_info(donor, name)["val_documents"], np.int64))
        if name in donor["val_sources"]:
            order.val_sources.append(i)
    if order.val_samples and new:
        order.hold_out(order.val_samples, only=new)
        for i in sorted(new):
            if i in order.val_sources:
                notes.append(f"source {order.names[i]}: new to the run (or new shards): "
                             f"{len(order.streams[i].val_docs)} documents held out; val_loss_{order.names[i]} "
                             f"starts at step {seg['first_step']}")
    order.val_sources.sort()
    for name in metas[-1]["val_sources"]:
        if name not in [order.names[i] for i in order.val_sources]:
            notes.append(f"source {name}: not evaluated on this version; val_loss_{name} ends at step "
                         f"{seg['first_step'] - 1}")
    # Each stream goes on after the last draw the cursor passed in the newest earlier segment sharing it.
    for i, name in enumerate(order.names):
        stream = order.streams[i]
        key = (tuple(sh.sha256 for sh in manifest.sources[name].shards), tuple(stream.val_docs.tolist()),
               manifest.seed, seq_len)
        for j in range(len(earlier) - 1, -1, -1):
            info = _source_info(metas[j], name)
            if info and _stream_key(metas[j], info) == key:
                end = earlier[j + 1]["first_sample"] if j + 1 < len(earlier) else seg["first_sample"]
                order.draw_offset[i] = _end_draw(run, earlier[j], metas[j], name, end)
                break
    order.warnings += notes
    order.build(needed)
    order.save()
    return order
