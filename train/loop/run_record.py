"""The run directory as a record: resolved config, manifest and its hash, code version, invocations.

``runs/<name>/``
  config.yaml          the config file as given (first invocation)
  config.json          the resolved config: every default filled in, plus what came from the manifest
                       (vocab size, sequence length), the model shape and the batch layout
  manifest.json        a copy of the manifest the run trains on (now)
  run.json             manifest path/content_hash/file sha256, the manifest timeline (which version fed which
                       steps: train/data/timeline.py), code version, and one entry per invocation (time, argv,
                       start step, stop step, layout, code version)
  data_order/          the sample index and its permutations (train/data/sample_index.py); ``seg-<k>/`` for
                       every later manifest version the run switched to
  checkpoints/         train/checkpoint/store.py
  metrics.jsonl        train/loop/metrics.py (data telemetry: train/monitor/telemetry.py)
  leakage.json         held-out documents also in training (train/monitor/leakage.py)
  samples/             decoded sequences every log.sample_every steps
  spikes.jsonl, rollbacks.jsonl, rollbacks/    train.on_spike (train/monitor/spike.py)
  diagnosis.json       train.record.diagnose on the metrics, at the end of the run

Running again with the same directory resumes; the resolved config must be the same in everything that
changes what is trained (model, data, batch, optimizer, schedule), else the run refuses and says so. The
parallel layout may change (``LAYOUT``: the checkpoint is resharded, train/checkpoint/reshard.py): config.json then takes
the new layout and the invocation in run.json records ``layout_change`` (step, from, to). So may the manifest
(another version, same tokenizer: train/data/timeline.py): the timeline gets a segment and the invocation
``manifest_switch`` (step, segment, from, to).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Sections and keys that may differ between invocations of one run (they change nothing trained).
MUTABLE = {"checkpoint": None, "log": None, "eval": {"every", "leakage"}, "data": {"cache_dir", "verify", "log_consumed"},
           # Spike handling may be switched on for a resumed run (what it skips is recorded in the run).
           "train": {"on_spike", "spike_window", "spike_min_history", "spike_loss_z", "spike_grad_norm_z",
                     "spike_min_rel", "spike_rollback_skip", "spike_max_rollbacks"}}
# Keys added after runs were recorded without them, with the value such a run trained with (its config.json
# lacks the key): absent and that value compare equal, so the run resumes.
LEGACY = {("model", "document_masking"): False, ("model", "document_positions"): None, ("model", "qk_norm"): False,
          ("optimizer", "kind"): "adamw", ("optimizer", "muon_lr"): 0.02, ("optimizer", "muon_momentum"): 0.95}
LEGACY_MODEL = {"document_masking": False, "document_positions": None, "qk_norm": False}
# How the same training is spread over processes: may change between invocations (train/checkpoint/reshard.py).
LAYOUT = {"parallel": None, "train": {"micro_batch_size", "zero_stage", "activation_checkpointing"}}


class RunError(RuntimeError):
    pass


def code_version() -> dict:
    """Git commit (and whether train/ has uncommitted changes), plus a hash of the trainer's sources."""
    h = hashlib.sha256()
    for p in sorted((REPO / "train").rglob("*.py")):
        h.update(p.relative_to(REPO).as_posix().encode() + b"\0" + p.read_bytes())
    out = {"train_sources_sha256": h.hexdigest()}
    try:
        out["git_commit"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                                           text=True, timeout=10, check=True).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--", "train"], cwd=REPO,
                                capture_output=True, text=True, timeout=10, check=True).stdout
        out["git_dirty"] = bool(status.strip())
    except (OSError, subprocess.SubprocessError):
        out["git_commit"] = None
    return out


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _differences(old: dict, new: dict, skip: dict = MUTABLE) -> list[str]:
    diffs = []
    for section in sorted(set(old) | set(new)):
        a, b = old.get(section), new.get(section)
        if section in skip and skip[section] is None:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b)):
                if skip.get(section) and key in skip[section]:
                    continue
                av, bv = (d.get(key, LEGACY.get((section, key))) for d in (a, b))
                if av != bv:
                    diffs.append(f"{section}.{key}: {av!r} -> {bv!r}")
        elif a != b:
            diffs.append(f"{section}: {a!r} -> {b!r}")
    return diffs


def prepare(run: Path, config_path: str, resolved: dict, manifest, invocation: dict,
            switch_at: tuple[int, int] | None = None) -> dict:
    """Create or check the run directory (rank 0 only). Returns run.json's content. ``switch_at``: (checkpoint
    step, its data batch) where the run continues when ``manifest`` is another version than its current one."""
    from train.data import timeline

    run.mkdir(parents=True, exist_ok=True)
    cfg_json = run / "config.json"
    if cfg_json.is_file():
        old = json.loads(cfg_json.read_text())
        skip = {**MUTABLE, **{k: (None if v is None else v | (MUTABLE.get(k) or set())) for k, v in LAYOUT.items()}}
        diffs = _differences(old["config"], resolved["config"], skip)
        if isinstance(old.get("model"), dict) and isinstance(resolved.get("model"), dict):
            old["model"] = {**LEGACY_MODEL, "eos_id": resolved["model"].get("eos_id"), **old["model"]}
        for key in ("model", "seq_len", "vocab_size"):
            if old.get(key) != resolved.get(key):
                diffs.append(f"{key}: {old.get(key)!r} -> {resolved.get(key)!r}")
        if diffs:
            raise RunError(f"{run} was started with a different config; resuming it would train something else. "
                           f"Differences: {'; '.join(diffs)}. Use a new RUN directory (or the original config). "
                           "Only the parallel layout (parallel.*, train.micro_batch_size, train.zero_stage, "
                           "train.activation_checkpointing) may change between invocations.")
        if _differences(old["config"], resolved["config"]):      # a new layout: config.json says the current one
            for section, keys in LAYOUT.items():
                for key in (keys or old["config"][section]):
                    old["config"][section][key] = resolved["config"][section][key]
            for key in ("world_size", "grad_accum"):
                old[key] = resolved[key]
            _atomic_write(cfg_json, json.dumps(old, indent=1))
    else:
        shutil.copyfile(config_path, run / "config.yaml")
        _atomic_write(cfg_json, json.dumps(resolved, indent=1))
    man_copy = run / "manifest.json"
    run_json = run / "run.json"
    if run_json.is_file():
        record = json.loads(run_json.read_text())
        if record["manifest"]["content_hash"] != manifest.content_hash:
            if switch_at is None:
                raise RunError(f"{run} trains on manifest {record['manifest']['path']} (content_hash "
                               f"{record['manifest']['content_hash'][:12]}...), not {manifest.path} "
                               f"({manifest.content_hash[:12]}...)")
            before = timeline.segments(record, run)[-1]
            G = resolved["config"]["train"]["global_batch_size"]
            seg = timeline.apply_switch(record, run, manifest, *switch_at, G)
            invocation = {**invocation, "manifest_switch": {
                "step": switch_at[0], "data_step": switch_at[1], "segment": seg["segment"],
                "from": {k: before.get(k) for k in ("path", "version", "content_hash")},
                "to": {k: seg.get(k) for k in ("path", "version", "content_hash")}}}
    else:
        shutil.copyfile(manifest.path, man_copy)
        record = {"manifest": {"path": str(manifest.path), "name": manifest.name,
                               "content_hash": manifest.content_hash, "file_sha256": manifest.file_sha256},
                  "timeline": [timeline.entry(manifest, 0, 1, 0, resolved["config"]["train"]["global_batch_size"])],
                  "created": time.time(), "invocations": []}
    record["invocations"].append({"time": time.time(), "argv": sys.argv, "code": code_version(), **invocation})
    _atomic_write(run_json, json.dumps(record, indent=1))
    return record
