"""A small tokenized corpus and mixture manifest for trainer tests, written to the manifest contract.

Real text (the bundled WikiText-2 validation split, quality_models/data/), a real sentencepiece BPE
tokenizer trained on it, token shards in Parquet (``id``, ``source``, ``tokens`` list<int32> ending with one
end-of-document id, ``n_tokens``) and ``manifests/<name>.json`` with sha256 of every shard, the tokenizer and
the canonical content hash. Two sources, ``wiki`` (the first two thirds of the paragraphs) and ``prose`` (the
rest), two shards each.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from glassbox.contracts import manifest_content_hash, sha256_file

REPO = Path(__file__).resolve().parents[1]
TEXT = REPO / "quality_models" / "data" / "wikitext-2-valid.txt"


def paragraphs(text: str, min_chars: int = 40) -> list[str]:
    out = []
    for line in text.splitlines():
        line = line.strip()
        if len(line) >= min_chars and not re.fullmatch(r"=+ .* =+", line):
            out.append(line)
    return out


def train_tokenizer(out_dir: Path, text_lines: list[str], vocab_size: int = 384, model_type: str = "bpe",
                    **extra) -> Path:
    import sentencepiece as spm

    out_dir.mkdir(parents=True, exist_ok=True)
    corpus = out_dir / "corpus.txt"
    corpus.write_text("\n".join(text_lines) + "\n")
    prefix = out_dir / "sp"
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(prefix), vocab_size=vocab_size,
                                   model_type=model_type, pad_id=0, unk_id=1, bos_id=2, eos_id=3,
                                   minloglevel=2, num_threads=1, **extra)
    corpus.unlink()
    return prefix.with_suffix(".model")


def write_shards(out_dir: Path, source: str, docs: list[list[int]], texts: list[str], n_shards: int) -> list[dict]:
    out_dir.mkdir(parents=True, exist_ok=True)
    shards = []
    per = -(-len(docs) // n_shards)
    for k in range(n_shards):
        part = docs[k * per:(k + 1) * per]
        ptexts = texts[k * per:(k + 1) * per]
        if not part:
            continue
        path = out_dir / f"part-{k:05d}.parquet"
        table = pa.table({
            "id": pa.array([hashlib.sha256(f"{source}/{t}".encode()).hexdigest()[:24] for t in ptexts]),
            "source": pa.array([source] * len(part)),
            "tokens": pa.array(part, type=pa.list_(pa.int32())),
            "n_tokens": pa.array([len(d) for d in part], type=pa.int32()),
        })
        pq.write_table(table, path, compression="zstd")
        shards.append({"path": str(path), "sha256": sha256_file(path), "documents": len(part),
                       "tokens": sum(len(d) for d in part)})
    return shards


def write_manifest(root: Path, name: str, tokenizer: Path, sources: dict[str, list[dict]],
                   weights: dict[str, float], total_tokens: int, max_seq_len: int, seed: int = 0) -> Path:
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(tokenizer))
    man_dir = root / "manifests"
    man_dir.mkdir(parents=True, exist_ok=True)
    rel = lambda p: str(Path(p).resolve().relative_to(root.resolve()).as_posix())
    wsum = sum(weights.values())
    srcs = {}
    for sname, shards in sources.items():
        avail = sum(s["tokens"] for s in shards)
        w = weights[sname] / wsum
        target = int(total_tokens * w)
        srcs[sname] = {
            "weight": w, "requested_weight": weights[sname], "available_tokens": avail,
            "available_documents": sum(s["documents"] for s in shards), "target_tokens": target,
            "epochs": target / avail, "capped": False,
            "shards": [{"path": "../" + rel(s["path"]), "sha256": s["sha256"], "documents": s["documents"],
                        "tokens": s["tokens"]} for s in shards],
        }
    tok_sha = sha256_file(tokenizer)
    manifest = {
        "name": name, "seed": seed, "max_seq_len": max_seq_len, "total_tokens": total_tokens, "max_epochs": 4.0,
        "tokenizer_sha256": tok_sha,
        "tokenizer": {"path": "../" + rel(tokenizer), "sha256": tok_sha, "vocab_size": sp.vocab_size(),
                      "eos_id": sp.eos_id(), "bos_id": sp.bos_id(), "pad_id": sp.pad_id(), "unk_id": sp.unk_id()},
        "warnings": [], "sources": srcs,
    }
    manifest["content_hash"] = manifest_content_hash(manifest)
    path = man_dir / f"{name}.json"
    path.write_text(json.dumps(manifest, indent=1))
    return path


def make_dataset(root: Path, *, total_tokens: int = 60_000, max_seq_len: int = 32,
                 weights: dict[str, float] | None = None, seed: int = 0, vocab_size: int = 384,
                 max_paragraphs: int = 1200) -> Path:
    """Tokenizer, shards and manifest under ``root``; returns the manifest path."""
    import sentencepiece as spm

    root = Path(root)
    paras = paragraphs(TEXT.read_text(encoding="utf-8"))[:max_paragraphs]
    tok = train_tokenizer(root / "tokenizer", paras, vocab_size=vocab_size)
    sp = spm.SentencePieceProcessor(model_file=str(tok))
    cut = len(paras) * 2 // 3
    groups = {"wiki": paras[:cut], "prose": paras[cut:]}
    sources = {}
    for sname, texts in groups.items():
        docs = [ids + [sp.eos_id()] for ids in sp.encode(texts)]
        sources[sname] = write_shards(root / "tokenized" / sname, sname, docs, texts, n_shards=2)
    return write_manifest(root, "mix", tok, sources, weights or {"wiki": 0.7, "prose": 0.3},
                          total_tokens, max_seq_len, seed)


def launch(manifest: Path, config: Path, run: Path, nproc: int = 1, sets=(), steps=None, env=None, check=True,
           args=()):
    """`python -m train.pretrain` (one process) or torchrun with `nproc`, one thread each; the finished process.
    ``args``: more trainer arguments (``["--init", DIR]``); ``manifest`` None: the run's own (an existing run)."""
    if nproc == 1:
        cmd = [sys.executable, "-m", "train.pretrain"]
    else:
        cmd = [os.path.join(os.path.dirname(sys.executable), "torchrun"), "--standalone",
               f"--nproc_per_node={nproc}", "-m", "train.pretrain"]
    cmd += ["--config", str(config)] + (["--manifest", str(manifest)] if manifest else []) + ["--run-dir", str(run)]
    for s in sets:
        cmd += ["--set", s]
    if steps:
        cmd += ["--steps", str(steps)]
    cmd += list(args)
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})})
    if check:
        assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    return r


def roundtrip(config: Path, manifest: Path, chain: list, src: Path, step: int, root: Path) -> None:
    """Carry checkpoint `step` of run `src` through the layouts of `chain` ([(name, sets)]): each `root/name` loads
    the previous one's (train.checkpoint.reshard.load) and saves it at once, untrained (tests/reshard_worker.py)."""
    prev = src
    for name, sets in chain:
        (root / name).mkdir()
        shutil.copy(src / "config.json", root / name / "config.json")
        nproc = 1
        for s in sets:
            if s.startswith("parallel."):
                nproc *= int(s.split("=")[1])
        cmd = [os.path.join(os.path.dirname(sys.executable), "torchrun"), "--standalone", f"--nproc_per_node={nproc}",
               "tests/reshard_worker.py", str(config), str(manifest), "roundtrip", str(prev), str(step), str(root / name)]
        for s in sets:
            cmd += ["--set", s]
        r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600,
                           env={**os.environ, "OMP_NUM_THREADS": "1"})
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        prev = root / name


# Cross-layout weight comparisons train with a large Adam eps. In fp32 two layouts differ only in the order of
# summations, so one gradient element differs by dg, a few ulps of its largest terms (<= ~1e-9 in these tiny
# models). Adam's step lr * m / (sqrt(v) + eps) amplifies that: d(step)/dg <= lr / eps (the first step is
# lr * g / (|g| + eps)), so with the default eps 1e-8 an element whose gradient is ~0 by cancellation takes a
# step of +lr in one layout and -lr in the other (1.9e-3 seen in CI). With eps 1e-4 the same noise moves a
# weight by <= 3e-3 * 1e-9 / 1e-4 = 3e-8 per step, and gradients above eps are still normalised, so training
# stays Adam-like. WEIGHT_ATOL leaves a wide margin over that (measured below 1e-6 after six steps) while a
# tensor-parallel slice in the wrong place is off by about the init std (0.02).
EQUIVALENCE_EPS = 1.0e-4
WEIGHT_ATOL = 1.0e-5


def weight_mismatches(a: dict, b: dict, atol: float = WEIGHT_ATOL) -> list[tuple[str, float]]:
    """(name, max |a - b|) of every tensor that differs by more than ``atol`` (or in shape); [] when equal."""
    assert a.keys() == b.keys(), sorted(set(a) ^ set(b))
    out = []
    for k in sorted(a):
        if a[k].shape != b[k].shape:
            out.append((k, float("inf")))
        elif (d := (a[k].float() - b[k].float()).abs().max().item()) > atol:
            out.append((k, d))
    return out


@contextmanager
def cpu_hog():
    """A busy loop on every core while the block runs: a loaded machine, as CI often is."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    try:
        yield
    finally:
        for h in hogs:
            h.kill()
            h.wait()
