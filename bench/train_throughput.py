"""Trainer throughput against a plain PyTorch loop of the same model, measured in the same run.

The floor is what anyone would write first: ``train.model.transformer.Llama`` in one process, ``torch.optim.AdamW``,
gradient accumulation, ``clip_grad_norm_``, the learning rate set each step, the same data order and batch
shapes. The trainer is ``python -m train.pretrain`` with tp = pp = dp = 1 (DeepSpeed's pipeline engine,
ZeRO-1). Both read tokens/s per optimizer step (data, forward, backward, optimizer) and the medians after
warm-up are compared. The two alternate ``--rounds`` times, each in a fresh process with the same thread
count, because this machine is shared and noisy; besides the medians, the 90th percentile of the per-step
rates (the steps least disturbed by other load) is compared too.

    .venv/bin/python bench/train_throughput.py [--steps 30] [--rounds 2] [--threads 1]

Target: trainer / plain >= 0.9.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CONFIG = """
model: {n_layers: 4, d_model: 256, n_heads: 8, ffn_hidden: 704, vocab_multiple: 64}
parallel: {tp: 1, pp: 1, dp: 1}
data: {seq_len: 128}
train: {steps: 1000, micro_batch_size: 8, global_batch_size: 16, seed: 1}
optimizer: {lr: 1.0e-3, min_lr: 1.0e-4, weight_decay: 0.1, grad_clip: 1.0}
schedule: {kind: cosine, warmup_steps: 10}
checkpoint: {every: 0, keep: 1}
log: {every: 10}
"""
WARMUP = 5


def plain_loop(run_dir: Path, manifest: Path, steps: int, out: Path) -> None:
    """The floor: one process, no DeepSpeed."""
    import torch

    from train.config import load_config
    from train.data.loader import Loader
    from train.data.manifest import read_manifest
    from train.data.sample_index import DataOrder
    from train.data.shards import ShardCache
    from train.model.transformer import Llama
    from train.plan import read_plan
    from train.loop.schedule import lr_at

    plan = read_plan(run_dir)
    cfg = load_config(run_dir / "config.yaml")
    man = read_manifest(manifest)
    cache = ShardCache(man.path.parent.parent / "token_cache", man.vocab_size, man.eos_id)
    order = DataOrder.load(man, cache, run_dir / "data_order")
    loader = Loader(order, cfg.train.global_batch_size, cfg.train.micro_batch_size, 1, 0)
    model = Llama(plan.model)
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    o = cfg.optimizer
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": o.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=o.lr, betas=tuple(o.betas), eps=o.eps)
    gas = cfg.grad_accum
    tokens = plan.tokens_per_step
    rates = []
    for step in range(steps):
        lr = lr_at(step, kind=cfg.schedule.kind, lr=o.lr, min_lr=o.min_lr,
                   warmup_steps=cfg.schedule.warmup_steps, total_steps=cfg.train.steps)
        for g in opt.param_groups:
            g["lr"] = lr
        t0 = time.perf_counter()
        for x, y in loader.train(step):
            _, loss = model(x, y)
            (loss / gas).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), o.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        rates.append(tokens / (time.perf_counter() - t0))
    out.write_text(json.dumps(rates))


def p90_rate(rates: list[float]) -> float:
    return sorted(rates)[int(0.9 * (len(rates) - 1))]


def trainer_rates(run_dir: Path) -> list[float]:
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines() if x.strip()]
    return [r["tokens_per_s"] for r in rows if r.get("kind") == "train"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of both (default 1)")
    ap.add_argument("--work", default=None, help="scratch directory (default: a temporary one)")
    ap.add_argument("--plain", nargs=3, metavar=("RUN", "MANIFEST", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.plain:
        plain_loop(Path(args.plain[0]), Path(args.plain[1]), args.steps, Path(args.plain[2]))
        return 0

    sys.path.insert(0, str(REPO / "tests"))
    from train_fixtures import make_dataset

    work = Path(args.work or tempfile.mkdtemp(prefix="glassbox-bench-train-"))
    manifest = make_dataset(work / "data", total_tokens=2_000_000, max_seq_len=128, vocab_size=2000,
                            max_paragraphs=3000)
    (work / "bench.yaml").write_text(CONFIG)
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "PYTHONPATH": str(REPO)}
    results = []
    for r in range(args.rounds):
        run = work / f"run{r}"
        cmd = [sys.executable, "-m", "train.pretrain", "--config", str(work / "bench.yaml"), "--manifest",
               str(manifest), "--run", str(run), "--steps", str(args.steps)]
        subprocess.run(cmd, cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)
        t_rates = trainer_rates(run)[WARMUP:]
        out = work / f"plain{r}.json"
        subprocess.run([sys.executable, __file__, "--steps", str(args.steps), "--plain", str(run), str(manifest),
                        str(out)], cwd=REPO, env=env, check=True)
        p_rates = json.loads(out.read_text())[WARMUP:]
        trainer, plain = statistics.median(t_rates), statistics.median(p_rates)
        t90, p90 = p90_rate(t_rates), p90_rate(p_rates)
        results.append((trainer, plain, t90, p90))
        print(f"round {r}: median tok/s trainer {trainer:,.0f} / plain {plain:,.0f} = {trainer / plain:.3f}; "
              f"p90 {t90:,.0f} / {p90:,.0f} = {t90 / p90:.3f}", flush=True)
    ratio = statistics.median(t / p for t, p, _, _ in results)
    ratio90 = statistics.median(t / p for _, _, t, p in results)
    print(json.dumps({"trainer_tokens_per_s": [round(x[0]) for x in results],
                      "plain_tokens_per_s": [round(x[1]) for x in results],
                      "ratio_median": round(ratio, 3), "ratio_p90": round(ratio90, 3), "threads": args.threads,
                      "steps": args.steps, "target": 0.9, "pass": ratio >= 0.9}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
