"""Which documents a training step saw: ``glassbox trace RUN_DIR --step N [--json]``.

Reads the run record only, never reruns anything:

1. the data batch of step N: ``samples_consumed`` of step N's row in ``metrics.jsonl`` (the cursor after the
   step, rollbacks included), else ``rollbacks.jsonl`` (the last rollback that restored a step before N
   gives the data shift), else N - 1;
2. its G samples -> (source, document, token range) pieces from ``data_order/`` (the recorded index and
   permutations) over the manifest's token shards (``id`` column; the token cache is rebuilt from the
   shards if it is gone); in a run that switched manifest versions, from the order and manifest of the
   segment of ``run.json``'s timeline that trained step N (train/data/timeline.py), named in the answer;
3. each document's provenance and quality signals (``url``, ``lang``, ``quality``, ``perplexity``,
   ``ppl_bucket``) joined on ``id`` from the corpus's document shards, ``<data>/decontaminated/`` then
   ``<data>/dedup/`` (``<data>`` = the manifest's folder's parent, or ``--data``), with a pyarrow filter
   on the ids: only the matching rows are read.

Exit status 0, or 2 when the record cannot answer (no such run, step beyond the data order, manifest moved
or changed: pass ``--manifest``).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from train.plan import PlanError, read_plan

SIGNALS = ("url", "lang", "quality", "perplexity", "ppl_bucket")
LEGACY = {"quality": "quality_ft"}   # a corpus scored before per-language classifiers named quality so
DOC_DIRS = ("decontaminated", "dedup")


class TraceError(RuntimeError):
    pass


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise TraceError(f"{path}: cannot read ({e}); is this a run directory written by train.pretrain?") from None


def read_jsonl(path: Path) -> list[dict]:
    """The whole JSON rows of a file written line by line (a line cut short by a kill is skipped)."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def data_step_of(run: Path, step: int, global_batch: int) -> tuple[int, str, dict | None]:
    """(0-based data batch of optimizer step ``step``, how it was found, the step's metrics row or None)."""
    from train.record.load import RecordError, load_metrics, row_kind

    row = None
    try:
        row = next((r for r in load_metrics(run) if row_kind(r) == "train" and r["step"] == step), None)
    except RecordError:
        pass
    if row is not None and isinstance(row.get("samples_consumed"), int):
        return row["samples_consumed"] // global_batch - 1, "metrics.jsonl samples_consumed", row
    shift, how = 0, "step - 1 (no rollbacks recorded)"
    for rb in read_jsonl(run / "rollbacks.jsonl"):
        if rb.get("restored_step", step) < step:
            shift, how = int(rb["data_shift"]), f"rollbacks.jsonl (rollback at step {rb['step']})"
    return step - 1 + shift, how, row


def document_signals(data_dir: Path, ids: set[str]) -> tuple[dict[str, dict], str | None]:
    """id -> {url, lang, quality, perplexity, ppl_bucket} from the corpus's document shards, and the
    folder they came from (None when none holds them)."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    found: dict[str, dict] = {}
    used = None
    for name in DOC_DIRS:
        folder = data_dir / name
        missing = ids - set(found)
        if not missing or not folder.is_dir():
            continue
        try:
            dataset = ds.dataset(folder, format="parquet")
        except (OSError, ValueError):
            continue
        names = dataset.schema.names
        cols = {c: c if c in names else LEGACY.get(c) for c in SIGNALS}
        cols = {k: v for k, v in cols.items() if v in names}
        if "id" not in names:
            continue
        table = dataset.to_table(columns=["id"] + list(cols.values()), filter=pc.field("id").isin(sorted(missing)))
        for rec in table.to_pylist():
            found.setdefault(rec.pop("id"), {k: rec[v] for k, v in cols.items()})
            used = used or str(folder)
    return found, used


def trace(run: str | Path, step: int, manifest_path: str | Path | None = None,
          data_dir: str | Path | None = None) -> dict:
    from train.data import timeline
    from train.data.manifest import ManifestError, read_manifest
    from train.data.sample_index import DataOrder
    from train.data.shards import ShardCache

    run = Path(run)
    if not run.is_dir():
        raise TraceError(f"{run}: no such run directory")
    try:
        plan = read_plan(run)
    except PlanError as e:
        raise TraceError(str(e)) from None
    record = _read_json(run / "run.json")
    G = plan.global_batch_size
    if step < 1:
        raise TraceError(f"--step: steps count from 1, got {step}")
    segs = timeline.segments(record, run)
    seg = timeline.segment_at_step(segs, step)          # the manifest version that fed this step
    want = seg["content_hash"]
    path = Path(manifest_path) if manifest_path else Path(seg["path"])
    try:
        manifest = read_manifest(path)
    except ManifestError as e:
        raise TraceError(f"{e} (step {step} trained on {seg['path']}; pass --manifest if it moved)") from None
    if manifest.content_hash != want:
        raise TraceError(f"{path}: content_hash {manifest.content_hash[:12]}... is not the {want[:12]}... of "
                         f"{seg['path']}, the manifest step {step} trained on; pass that one")
    cache_dir = plan.section("data").get("cache_dir")
    cache = ShardCache(Path(cache_dir) if cache_dir else manifest.path.parent.parent / "token_cache",
                       manifest.vocab_size, manifest.eos_id)
    for src in manifest.sources.values():
        for shard in src.shards:
            cache.ensure(shard)          # a no-op when the run's cache is still there
    order = DataOrder.load(manifest, cache, run / seg["data_order"])
    data_step, how, row = data_step_of(run, step, G)
    first = data_step * G
    if first + G > order.n_samples:
        raise TraceError(f"step {step} reads samples {first}-{first + G - 1}; the data order holds {order.n_samples}")
    docs = order.documents(range(first, first + G))
    data = Path(data_dir) if data_dir else manifest.path.parent.parent
    signals, signals_from = document_signals(data, {d["id"] for d in docs})
    for d in docs:
        d["rows"] = sorted({p[0] - first for p in d["pieces"]})
        d["tokens_used"] = sum(b - a for _, a, b, _ in d["pieces"])
        d.update({k: signals.get(d["id"], {}).get(k) for k in SIGNALS})
    spikes = [s for s in read_jsonl(run / "spikes.jsonl") if s.get("step") == step and s.get("data_step") == data_step]
    trained_to = None
    try:
        from train.record.load import load_metrics, row_kind
        steps = [r["step"] for r in load_metrics(run) if row_kind(r) == "train"]
        trained_to = max(steps) if steps else None
    except Exception:
        pass
    return {"run": str(run), "step": step, "data_step": data_step, "data_step_from": how,
            "samples": [first, first + G], "global_batch": G, "seq_len": order.L,
            "update_skipped": bool(row.get("update_skipped")) if row else None,
            "spike": spikes[-1] if spikes else None,
            "trained": row is not None, "last_logged_step": trained_to,
            "signals_from": signals_from,
            "manifest": {k: seg.get(k) for k in ("segment", "version", "name", "path", "content_hash", "first_step",
                                                 "last_step", "data_order")},
            "segments": len(segs), "documents": docs}


def _short(v, width: int) -> str:
    s = "-" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))
    return s if len(s) <= width else s[:width - 1] + "…"


def format_trace(t: dict) -> str:
    head = (f"{t['run']} step {t['step']}: data batch {t['data_step']} (samples {t['samples'][0]}-"
            f"{t['samples'][1] - 1}, {t['global_batch']} sequences of {t['seq_len'] + 1} tokens; "
            f"from {t['data_step_from']}), {len(t['documents'])} documents")
    lines = [head]
    m = t.get("manifest") or {}
    if t.get("segments", 1) > 1:
        version = f" v{m['version']}" if m.get("version") is not None else ""
        lines.append(f"data: manifest {m['name']}{version} ({m['content_hash'][:12]}..., {m['path']}), segment "
                     f"{m['segment']} of the run's {t['segments']} (steps {m['first_step']}-"
                     f"{m['last_step'] if m['last_step'] is not None else ''})")
    if not t["trained"]:
        lines.append(f"note: no metrics row for step {t['step']} (last logged {t['last_logged_step']}): this is "
                     "the batch the data order assigns it, if no rollback moves the cursor first")
    if t["update_skipped"]:
        lines.append("note: this step's update was skipped (spike; spikes.jsonl)")
    if not t["signals_from"]:
        lines.append("note: no decontaminated/ or dedup/ document shards with these ids: url and signals unknown "
                     "(pass --data)")
    id_w = max([len("id")] + [len(d["id"]) for d in t["documents"]])      # ids are never cut
    src_w = max([len("source")] + [len(d["source"]) for d in t["documents"]])
    cols = [("rows", 9), ("source", src_w), ("id", id_w), ("tokens [a-b)", 13), ("of", 6), ("quality", 10),
            ("perplexity", 10), ("bucket", 7), ("url", 60)]
    lines.append("  ".join(n.ljust(w) for n, w in cols).rstrip())
    for d in t["documents"]:
        rng = ",".join(f"{a}-{b}" for _, a, b, _ in d["pieces"])
        vals = [",".join(map(str, d["rows"])), d["source"], d["id"], rng, d["doc_tokens"], d["quality"],
                d["perplexity"], d["ppl_bucket"], d["url"]]
        lines.append("  ".join(_short(v, w).ljust(w) for v, (_, w) in zip(vals, cols)).rstrip())
    return "\n".join(lines)


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="glassbox trace", description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="run directory written by train.pretrain")
    ap.add_argument("--step", type=int, required=True, help="optimizer step (1-based, as in metrics.jsonl)")
    ap.add_argument("--json", action="store_true", help="print everything as JSON")
    ap.add_argument("--manifest", default=None, help="the run's manifest, when it moved since the run")
    ap.add_argument("--data", default=None,
                    help="corpus folder holding decontaminated/ or dedup/ (default: the manifest's ../)")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    a = parse_args(argv)
    try:
        t = trace(a.run, a.step, a.manifest, a.data)
    except TraceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(t, indent=1) if a.json else format_trace(t))
    return 0


if __name__ == "__main__":
    sys.exit(main())
