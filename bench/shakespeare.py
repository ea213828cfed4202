"""A published anchor: nanoGPT's character-level Shakespeare on CPU, trained by this trainer.

nanoGPT's README (the "I only have a MacBook" settings): ``train.py config/train_shakespeare_char.py
--device=cpu --compile=False --eval_iters=20 --log_interval=1 --block_size=64 --batch_size=12 --n_layer=4
--n_head=4 --n_embd=128 --max_iters=2000 --lr_decay_iters=2000 --dropout=0.0`` reaches a validation loss of
about 1.88. Same settings here: tinyshakespeare split 90/10 by characters as nanoGPT's ``prepare.py``, a
character-level sentencepiece model (``model_type=char``, identity normalisation, no dummy prefix; newlines
mapped to a placeholder character, so one token is one character as in nanoGPT), 4 layers x 4 heads x 128,
context 64, batch 12, 2000 iterations, lr 1e-3 -> 1e-4 cosine after 100 warmup iterations, betas
(0.9, 0.99), weight decay 0.1, clipping 1.0, no dropout, fp32. The model is this project's Llama (RMSNorm,
RoPE, SwiGLU with the MLP width chosen for nanoGPT's parameter count, untied embeddings), not GPT-2.

The validation loss is the mean next-character cross entropy over every position of the 10% split, cut into
windows of 64 (nanoGPT averages random windows of the same length: the same quantity, less noise), with
the final checkpoint loaded back from the run directory.

    .venv/bin/python bench/shakespeare.py [--text ../shared/data/text/reference/tinyshakespeare.txt]
    .venv/bin/python bench/shakespeare.py --threads 2 --nanogpt DIR     # and nanoGPT itself, back to back

Several minutes on a CPU core. Target: val loss <= 1.88.

With ``--nanogpt DIR`` (a checkout of karpathy/nanoGPT; nothing of it enters this repository) the bench also
runs nanoGPT's ``train.py`` with exactly those settings in a scratch copy under the work directory (its own
``prepare.py`` on the same text), both processes with the same thread count, one after the other, and prints
the wall ratio (whole processes: start-up, data, training, nanoGPT's evaluations) and both validation losses.
nanoGPT's is its own estimate at step 2000 (20 random windows), ours is over every window of the split.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

NEWLINE = "\u00b6"      # pilcrow: sentencepiece reads lines, so newlines travel as this character

CONFIG = """
model: {{n_layers: 4, d_model: 128, n_heads: 4, ffn_hidden: 344, vocab_multiple: 64}}
parallel: {{tp: 1, pp: 1, dp: 1}}
data: {{seq_len: 64}}
train: {{steps: {steps}, micro_batch_size: 12, global_batch_size: 12, precision: fp32, seed: 1337}}
optimizer: {{lr: 1.0e-3, min_lr: 1.0e-4, betas: [0.9, 0.99], weight_decay: 0.1, grad_clip: 1.0}}
schedule: {{kind: cosine, warmup_steps: 100}}
checkpoint: {{every: 0, keep: 1}}
log: {{every: 100}}
"""


def build_data(text: str, root: Path, steps: int):
    import sentencepiece as spm

    from train_fixtures import train_tokenizer, write_manifest, write_shards

    assert NEWLINE not in text
    n = len(text)
    train_text, val_text = text[:int(n * 0.9)], text[int(n * 0.9):]
    chars = sorted(set(train_text.replace("\n", NEWLINE)))
    lines = [line + NEWLINE for line in train_text.split("\n")]
    tok = train_tokenizer(root / "tokenizer", lines, vocab_size=len(chars) + 4, model_type="char",
                          normalization_rule_name="identity", add_dummy_prefix=False,
                          remove_extra_whitespaces=False, character_coverage=1.0)
    sp = spm.SentencePieceProcessor(model_file=str(tok))

    def encode(s: str) -> list[int]:
        ids = sp.encode(s.replace("\n", NEWLINE))
        assert len(ids) == len(s) and sp.unk_id() not in ids, "not one token per character"
        return ids

    train_ids, val_ids = encode(train_text), encode(val_text)
    shards = write_shards(root / "tokenized" / "shakespeare", "shakespeare", [train_ids + [sp.eos_id()]],
                          [train_text[:100]], n_shards=1)
    tokens = steps * 12 * 64
    manifest = write_manifest(root, "shakespeare", tok, {"shakespeare": shards}, {"shakespeare": 1.0},
                              total_tokens=tokens + 64, max_seq_len=64, seed=1337)
    return manifest, val_ids, train_ids, sp.vocab_size()


def window_loss(model, ids: list[int], T: int = 64, limit: int | None = None) -> float:
    import torch

    x = torch.tensor(ids, dtype=torch.long)
    n = (len(x) - 1) // T
    if limit:
        n = min(n, limit)
    total, count = 0.0, 0
    with torch.no_grad():
        for b in range(0, n, 64):
            idx = torch.arange(b, min(n, b + 64))
            inp = torch.stack([x[i * T:i * T + T] for i in idx])
            tgt = torch.stack([x[i * T + 1:i * T + T + 1] for i in idx])
            _, loss = model(inp, tgt)
            total += loss.item() * len(idx)
            count += len(idx)
    return total / count


NANOGPT_FLAGS = ["config/train_shakespeare_char.py", "--device=cpu", "--compile=False", "--eval_iters=20",
                 "--log_interval=1", "--block_size=64", "--batch_size=12", "--n_layer=4", "--n_head=4",
                 "--n_embd=128", "--lr_decay_iters=2000", "--dropout=0.0"]


def run_nanogpt(checkout: Path, text: str, work: Path, steps: int, threads: int) -> dict:
    """nanoGPT's README CPU run in a scratch copy of the checkout; returns its wall and losses."""
    import re
    import shutil

    dest = work / "nanogpt"
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(checkout, dest, ignore=shutil.ignore_patterns(".git", "assets", "*.ipynb"))
    data = dest / "data" / "shakespeare_char"
    (data / "input.txt").write_text(text, encoding="utf-8")      # prepare.py downloads only when it is missing
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    subprocess.run([sys.executable, "prepare.py"], cwd=data, check=True, env=env, stdout=subprocess.DEVNULL)
    t0, c0 = time.time(), children_cpu()
    out = subprocess.run([sys.executable, "train.py", *NANOGPT_FLAGS, f"--max_iters={steps}",
                          f"--out_dir={dest / 'out'}"], cwd=dest, check=True, env=env, capture_output=True,
                         text=True).stdout
    wall, cpu = time.time() - t0, children_cpu() - c0
    evals = re.findall(r"step (\d+): train loss ([\d.]+), val loss ([\d.]+)", out)
    if not evals:
        raise SystemExit(f"nanoGPT printed no evaluation:\n{out[-2000:]}")
    step, train, val = evals[-1]
    return {"wall_s": wall, "cpu_s": cpu, "val_loss": float(val), "train_loss": float(train), "at_step": int(step)}


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children: less disturbed than the wall by
    other load on a shared machine, so printed beside it."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--text", default=str(REPO.parent / "shared" / "data" / "text" / "reference" / "tinyshakespeare.txt"))
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--work", default=None)
    ap.add_argument("--nanogpt", default=None, metavar="DIR", help="a nanoGPT checkout to run back to back")
    args = ap.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="glassbox-shakespeare-"))
    text = Path(args.text).read_text(encoding="utf-8")
    manifest, val_ids, train_ids, vocab = build_data(text, work / "data", args.steps)
    (work / "config.yaml").write_text(CONFIG.format(steps=args.steps))
    run = work / "run"
    t0, c0 = time.time(), children_cpu()
    subprocess.run([sys.executable, "-m", "train.pretrain", "--config", str(work / "config.yaml"), "--manifest",
                    str(manifest), "--run", str(run)], cwd=REPO, check=True,
                   env={**os.environ, "OMP_NUM_THREADS": str(args.threads)})
    wall, cpu = time.time() - t0, children_cpu() - c0

    import torch

    from train.checkpoint.store import latest_complete, load_llama_state_dict
    from train.model.transformer import Llama
    from train.plan import read_plan

    torch.set_num_threads(args.threads)
    mcfg = read_plan(run).model
    model = Llama(mcfg).eval()
    model.load_state_dict(load_llama_state_dict(latest_complete(run)[1], mcfg.n_layers))
    val = window_loss(model, val_ids)
    train = window_loss(model, train_ids, limit=2000)
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    result = {"val_loss": val, "train_loss_sample": train, "nanogpt_val_loss": 1.88, "pass": val <= 1.88,
              "steps": args.steps, "vocab_size": vocab, "params": mcfg.num_params(),
              "uniform_loss": math.log(vocab), "final_train_batch_loss": rows[-1]["loss"], "wall_s": wall, "cpu_s": cpu,
              "run": str(run)}
    if args.nanogpt:
        ref = run_nanogpt(Path(args.nanogpt), text, work, args.steps, args.threads)
        result["nanogpt"] = ref
        result["wall_ratio"], result["cpu_ratio"] = wall / ref["wall_s"], cpu / ref["cpu_s"]
        print(f"threads {args.threads}: glassbox {wall:.1f} s wall, {cpu:.1f} s CPU (val {val:.3f}); nanoGPT "
              f"{ref['wall_s']:.1f} s wall, {ref['cpu_s']:.1f} s CPU (val {ref['val_loss']:.3f} at step "
              f"{ref['at_step']}); ratio wall {result['wall_ratio']:.2f}, CPU {result['cpu_ratio']:.2f}", flush=True)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
