"""What a run directory points at: the manifest it trained on, the tokenizer, the held-out documents.

``run.json`` records the manifest's path and ``content_hash`` (train/loop/run_record.py); the manifest names the
sentencepiece model (path relative to the manifest, sha256) and its special ids. The held-out validation
documents are the trainer's own (``data_order/meta.json``, train/data/sample_index.py; after a switch of manifest
version, the current segment's, train/data/timeline.py): perplexity here is computed on exactly the sequences
``val_loss`` was, so the two agree.

When the data moved since training, ``--manifest PATH`` names where the same manifest (same content hash) is
now.
"""
from __future__ import annotations

import json
from pathlib import Path

from glassbox.contracts import sha256_file
from train.data.manifest import Manifest, ManifestError, read_manifest


class RunDataError(RuntimeError):
    """The run's manifest, tokenizer or held-out data cannot be found as recorded; says what to pass."""


def run_manifest(run: str | Path, override: str | Path | None = None) -> Manifest:
    """The manifest the run trained on, its content hash checked against ``run.json``."""
    run = Path(run)
    rec_path = run / "run.json"
    if not rec_path.is_file():
        raise RunDataError(f"{run}: no run.json; not a run directory written by train.pretrain")
    recorded = json.loads(rec_path.read_text())["manifest"]
    want = recorded["content_hash"]
    path = override or recorded["path"]
    try:
        manifest = read_manifest(path)
    except ManifestError as e:
        raise RunDataError(f"{e}. The run trained on {recorded['path']} (content_hash {want[:12]}...); if it "
                           "moved, pass --manifest PATH") from None
    if manifest.content_hash != want:
        raise RunDataError(f"{manifest.path}: content_hash {manifest.content_hash[:12]}... is not the run's "
                           f"manifest ({want[:12]}...); pass --manifest with the manifest the run trained on")
    return manifest


def tokenizer_model(manifest: Manifest) -> Path:
    """The sentencepiece model the manifest names, its sha256 checked."""
    path = Path(manifest.tokenizer["abs_path"])
    if not path.is_file():
        raise RunDataError(f"tokenizer {path} (manifest {manifest.path}: tokenizer.path) is missing")
    actual = sha256_file(path)
    if actual != manifest.tokenizer["sha256"]:
        raise RunDataError(f"tokenizer {path}: sha256 {actual[:12]}... differs from the manifest's "
                           f"{manifest.tokenizer['sha256'][:12]}...: not the tokenizer the run trained with")
    return path


def special_ids(manifest: Manifest) -> dict[str, int | None]:
    """bos/eos/pad/unk ids from the manifest's tokenizer entry (None where it has none)."""
    out = {}
    for key in ("bos_id", "eos_id", "pad_id", "unk_id"):
        value = manifest.tokenizer.get(key)
        out[key] = int(value) if isinstance(value, int) and value >= 0 else None
    return out


def held_out(run: str | Path, manifest: Manifest, plan):
    """The run's ``DataOrder`` when it held out validation documents, else None. Verifies the shards against
    the manifest and builds the token cache where missing, as the trainer does."""
    from train.data.sample_index import DataOrder
    from train.data.shards import ShardCache

    from train.data.timeline import order_dir

    run = Path(run)
    record = order_dir(run, manifest.content_hash)       # data_order/, or the segment on this manifest version
    if not (record / "meta.json").is_file():
        return None
    meta = json.loads((record / "meta.json").read_text())
    if not meta.get("val_sources"):
        return None
    data_cfg = plan.section("data")          # plan: train.plan.Plan
    cache_dir = (Path(data_cfg["cache_dir"]) if data_cfg.get("cache_dir")
                 else manifest.path.parent.parent / "token_cache")
    cache = ShardCache(cache_dir, plan.vocab_size, manifest.eos_id)
    try:
        for src in manifest.sources.values():
            for shard in src.shards:
                cache.verify(shard, "stamp")
                cache.ensure(shard)
    except ManifestError as e:
        raise RunDataError(f"held-out data of {run}: {e}") from None
    order = DataOrder.load(manifest, cache, record)
    return order if order.val_sources and order.val_samples else None
