"""Bits per byte (train/tokenizer/token_bytes.py): every id's bytes counted as stated (byte-fallback pieces one
byte, the end-of-document id none), the trainer's logged val_bpb equal to sum of nats / (ln 2 x sum of bytes)
computed here by hand on its held-out sequences, and the reason for it: the same text under two vocabulary sizes
gives per-token losses further apart than its bits per byte."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from train_fixtures import REPO, TEXT, make_dataset, paragraphs, train_tokenizer

EMOJI_TEXT = "Résumé 🙂 of the naïve café: 鬱 and ʘ, spelled in bytes."


@pytest.fixture(scope="module")
def byte_tokenizer(tmp_path_factory):
    paras = paragraphs(TEXT.read_text(encoding="utf-8"))[:400]
    return train_tokenizer(tmp_path_factory.mktemp("tok"), paras, vocab_size=512, byte_fallback=True,
                           user_defined_symbols=["<tab>"])


def test_every_id_counts_the_bytes_it_decodes_to(byte_tokenizer):
    import sentencepiece as spm

    from train.tokenizer.token_bytes import token_bytes

    sp = spm.SentencePieceProcessor(model_file=str(byte_tokenizer))
    table = token_bytes(byte_tokenizer, sp.eos_id())
    assert table[sp.eos_id()] == 0 and table[sp.bos_id()] == 0 and table[sp.unk_id()] == 0
    byte_ids = [i for i in range(sp.get_piece_size()) if sp.is_byte(i)]
    assert len(byte_ids) == 256 and all(table[i] == 1 for i in byte_ids)
    docs = paragraphs(TEXT.read_text(encoding="utf-8"))[400:430] + [EMOJI_TEXT, "a <tab> b"]
    for doc in docs:
        ids = sp.encode(doc) + [sp.eos_id()]
        # by hand: the document's UTF-8 bytes, plus the one space of sentencepiece's dummy prefix
        assert int(table[ids].sum()) == len(doc.encode("utf-8")) + 1, doc
    assert any(sp.is_byte(i) for i in sp.encode(EMOJI_TEXT))          # the emoji and rare characters fell back
    assert sp.piece_to_id("<tab>") in sp.encode("a <tab> b")           # a user-defined piece counts its text


def test_bits_per_byte_of_a_shard_by_hand(byte_tokenizer):
    """A unigram model's nats over a shard of real text, by hand, against ablation.heldout's windows/bytes."""
    import sentencepiece as spm

    from ablation.heldout import domain_bytes, windows

    sp = spm.SentencePieceProcessor(model_file=str(byte_tokenizer))
    docs = paragraphs(TEXT.read_text(encoding="utf-8"))[430:470] + [EMOJI_TEXT]
    win = windows(docs, str(byte_tokenizer), 32, 4000)
    n_bytes = domain_bytes({"d": win}, str(byte_tokenizer))["d"]
    targets = win[:, 1:].ravel()
    # by hand: each target piece's text (U+2581 as a space, <0xAB> one byte, <eod> nothing)
    hand = 0
    for i in targets:
        piece = sp.id_to_piece(int(i))
        hand += 1 if sp.is_byte(int(i)) else 0 if sp.is_control(int(i)) else len(piece.replace("\u2581", " ").encode())
    assert n_bytes == hand
    counts = np.bincount(targets, minlength=sp.get_piece_size()) + 1.0
    logp = np.log(counts / counts.sum())
    nats = float(-logp[targets].sum())
    from train.tokenizer.token_bytes import bits_per_byte

    assert bits_per_byte(nats, n_bytes) == pytest.approx(nats / (math.log(2) * hand))


CONFIG = """
model: {n_layers: 2, d_model: 64, n_heads: 4, n_kv_heads: 2, ffn_hidden: 128, vocab_multiple: 64}
train: {steps: 40, micro_batch_size: 8, global_batch_size: 8, seed: 3}
optimizer: {lr: 3.0e-3, min_lr: 3.0e-4}
schedule: {kind: cosine, warmup_steps: 4}
checkpoint: {every: 0, keep: 1}
log: {every: 20}
eval: {every: 40, samples_per_source: 8}
"""


def _train(root, vocab):
    manifest = make_dataset(root / "data", total_tokens=40 * 8 * 32, max_seq_len=32, vocab_size=vocab,
                            max_paragraphs=900)
    cfg = root / "tiny.yaml"
    cfg.write_text(CONFIG)
    run = root / "run"
    r = subprocess.run([sys.executable, "-m", "train.pretrain", "--config", str(cfg), "--manifest", str(manifest),
                        "--run-dir", str(run)], cwd=REPO, capture_output=True, text=True, timeout=600,
                       env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", "HOME": str(root)})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return manifest, run


@pytest.mark.trainer
def test_logged_bpb_and_two_vocabulary_sizes(tmp_path):
    import sentencepiece as spm

    from ablation.heldout import domain_bytes, proxy_losses, windows
    from train.data.manifest import read_manifest
    from train.export import rundata, weights

    out = {}
    for vocab in (256, 2048):
        manifest, run = _train(tmp_path / f"v{vocab}", vocab)
        rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
        val = [r for r in rows if r.get("kind") == "val"][-1]
        assert {"val_bpb", "val_bpb_wiki", "val_bpb_prose"} <= set(val)
        # by hand on the run's own held-out sequences: mean nats x tokens / (ln 2 x bytes of the pieces)
        man = read_manifest(manifest)
        sp = spm.SentencePieceProcessor(model_file=man.tokenizer["abs_path"])
        order = rundata.held_out(run, man, weights.load_plan(run))
        for s in order.val_sources:
            name = order.names[s]
            tok = byt = 0
            for v in range(order.val_samples):
                for i in order.val_sample(s, v)[1:]:
                    tok += 1
                    i = int(i)          # this tokenizer has no byte fallback: an unknown id stands for no known bytes
                    byt += 0 if sp.is_control(i) or sp.is_unknown(i) else len(sp.id_to_piece(i).replace("\u2581", " ").encode())
            assert val[f"val_bpb_{name}"] == pytest.approx(val[f"val_loss_{name}"] * tok / (math.log(2) * byt),
                                                           rel=1e-6)
        # the same held-out text (paragraphs no run trained on), each under its own tokenizer
        docs = paragraphs(TEXT.read_text(encoding="utf-8"))[900:1000]
        win = windows(docs, man.tokenizer["abs_path"], 32, 3000)
        _, losses, _ = proxy_losses(str(run), {"text": win},
                                    n_bytes=domain_bytes({"text": win}, man.tokenizer["abs_path"]))
        out[vocab] = losses["text"]
    nats_gap = abs(out[256]["loss"] - out[2048]["loss"])
    bpb_gap = abs(out[256]["bpb"] - out[2048]["bpb"])
    assert nats_gap > bpb_gap, out
