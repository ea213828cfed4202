"""A corpus and runs for the run-watching tests (telemetry, leakage, spikes, tracing).

``make_watch_dataset``: the WikiText-2 paragraphs of ``train_fixtures`` with a real sentencepiece tokenizer,
in three sources built to make every telemetry field move:

- ``wiki``: 500 unique paragraphs;
- ``prose``: 250 paragraphs, each twice (the copy under another id, as if dedup had missed it), so held-out
  validation documents have exact copies in training (leakage) and batches hold duplicate documents;
- ``boiler``: one document of exactly ``seq_len`` tokens, a quarter of the mixture: every sequence drawn from it
  is the same sequence, so most batches hold duplicate sequences;

plus ``decontaminated/`` document shards (Spark-style part files and ``_SUCCESS``) with ``url``,
``quality``, ``perplexity`` and ``ppl_bucket`` per id, for tracing. ``SIGNALS[id]`` holds what was written.

``shared_run`` trains one 2-process (data parallel) run on it once per test session, for the telemetry and
the trace tests.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from train_fixtures import REPO, TEXT, launch, paragraphs, train_tokenizer, write_manifest, write_shards

SEQ_LEN = 32
SIGNALS: dict[str, dict] = {}


def _doc_id(source: str, text: str) -> str:
    return hashlib.sha256(f"{source}/{text}".encode()).hexdigest()[:24]


def make_watch_dataset(root: Path) -> Path:
    import sentencepiece as spm

    root = Path(root)
    paras = paragraphs(TEXT.read_text(encoding="utf-8"))[:800]
    tok = train_tokenizer(root / "tokenizer", paras, vocab_size=384)
    sp = spm.SentencePieceProcessor(model_file=str(tok))
    eos = sp.eos_id()
    wiki = paras[:500]
    prose = paras[500:750]
    boiler_ids = (sp.encode(paras[750] + " " + paras[751]))[:SEQ_LEN - 1] + [eos]
    groups = {
        "wiki": ([ids + [eos] for ids in sp.encode(wiki)], wiki),
        "prose": ([ids + [eos] for ids in sp.encode(prose)] * 2, prose + [t + " [copy]" for t in prose]),
        "boiler": ([boiler_ids], [sp.decode(boiler_ids)]),
    }
    sources, doc_rows = {}, []
    for name, (docs, texts) in groups.items():
        sources[name] = write_shards(root / "tokenized" / name, name, docs, texts,
                                     n_shards=2 if len(docs) > 1 else 1)
        for i, text in enumerate(texts):
            did = _doc_id(name, text)
            sig = {"url": None if name == "boiler" else f"https://example.org/{name}/{i}",
                   "quality": round((i % 97) / 97, 4), "perplexity": 100.0 + i,
                   "ppl_bucket": ("head", "middle", "tail")[i % 3]}
            SIGNALS[did] = sig
            doc_rows.append({"id": did, "source": name, "text": text, **sig})
    dec = root / "decontaminated"
    dec.mkdir(parents=True, exist_ok=True)
    half = len(doc_rows) // 2
    for k, part in enumerate((doc_rows[:half], doc_rows[half:])):
        pq.write_table(pa.Table.from_pylist(part), dec / f"part-0000{k}-test.zstd.parquet", compression="zstd")
    (dec / "_SUCCESS").write_text("")
    return write_manifest(root, "watch", tok, sources, {"wiki": 0.45, "prose": 0.30, "boiler": 0.25},
                          total_tokens=60_000, max_seq_len=SEQ_LEN, seed=3)


SHARED_CONFIG = """
model: {n_layers: 2, d_model: 64, n_heads: 4, ffn_hidden: 128, vocab_multiple: 64}
parallel: {dp: 2}
data: {log_consumed: true}
train: {steps: 12, micro_batch_size: 2, global_batch_size: 8, seed: 5}
optimizer: {lr: 3.0e-3, min_lr: 3.0e-4}
schedule: {kind: cosine, warmup_steps: 2}
log: {every: 4, sample_every: 4}
eval: {every: 12, samples_per_source: 4}
"""


def shared_run(base: Path) -> tuple[Path, Path, object]:
    """(manifest, run directory, completed process) of the shared run, trained on first use."""
    base = Path(base) / "watch-shared"
    manifest = base / "data" / "manifests" / "watch.json"
    run = base / "run"
    if not (base / "done").is_file():
        if not manifest.is_file():
            make_watch_dataset(base / "data")
        cfg = base / "watch.yaml"
        cfg.write_text(SHARED_CONFIG)
        r = launch(manifest, cfg, run, nproc=2)
        (base / "stdout.txt").write_text(r.stdout)
        (base / "done").write_text("")
    else:
        make_signals(base / "data")
    return manifest, run, (base / "stdout.txt").read_text()


def make_signals(root: Path) -> None:
    """Reload SIGNALS from the decontaminated shards written earlier in this session."""
    if SIGNALS:
        return
    for f in sorted((Path(root) / "decontaminated").glob("*.parquet")):
        for rec in pq.read_table(f).to_pylist():
            SIGNALS[rec["id"]] = {k: rec[k] for k in ("url", "quality", "perplexity", "ppl_bucket")}
