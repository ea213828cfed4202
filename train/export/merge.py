"""Merged checkpoints: the weights of a run's last K checkpoints averaged into a run folder of their own.

    glassbox merge RUN --last K --out MERGED [--weights W1,W2,...] [--evaluate]

Each of the last K *whole* checkpoints (train/checkpoint/store.py ``verify``; any layout: tensor slices are
merged, pipeline layers read by name) gives the model's full state dict; the merge is their weighted mean
(``--weights``, oldest first, normalised; default equal), accumulated in float64 and stored in the
checkpoints' dtype. MERGED is a run folder that export, evaluation and serving read like any run: the run's
``config.json``, ``run.json``, ``manifest.json`` and ``data_order/`` (so the held-out documents are the run's),
and ``checkpoints/step_N/`` (N: the newest merged step) holding the merged module weights as one pipeline stage
(``layer_NN-model_00-model_states.pt``, the layout tp = pp = dp = 1) with its manifest ``complete.json``
(``merged``: the steps and weights). It holds no optimizer state: it is a model, not a point to resume
training from. No ``metrics.jsonl`` is copied, so nothing logged is taken for the merged model's.

``--evaluate`` prints the held-out validation loss (and bits per byte) of the newest checkpoint and of the merge.
"""
from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import time
from pathlib import Path

import torch

from train.checkpoint import store


class MergeError(RuntimeError):
    pass


def merge_weights(run: Path, last: int, weights: list[float] | None = None):
    """(steps, the merged Llama state dict) of the last ``last`` whole checkpoints of ``run``."""
    from train.plan import read_plan

    plan = read_plan(run)
    whole = [(s, d) for s, d in store.complete_checkpoints(run) if store.verify(d) is None]
    if len(whole) < last:
        raise MergeError(f"{run}: {len(whole)} whole checkpoints ({', '.join(str(s) for s, _ in whole) or 'none'}), "
                         f"--last {last} asked; train with checkpoint.keep >= {last} (0 keeps all)")
    chosen = whole[-last:]
    w = [1.0] * last if weights is None else list(weights)
    if len(w) != last or any(x < 0 for x in w) or not sum(w):
        raise MergeError(f"--weights: {last} non-negative numbers, oldest checkpoint first, not all 0; got {w}")
    w = [x / sum(w) for x in w]
    total: dict[str, torch.Tensor] = {}
    dtypes: dict[str, torch.dtype] = {}
    for (step, d), weight in zip(chosen, w):
        sd = store.load_llama_state_dict(d, plan.model.n_layers)
        for k, v in sd.items():
            dtypes[k] = v.dtype
            acc = total.setdefault(k, torch.zeros(v.shape, dtype=torch.float64))
            acc.add_(v.double(), alpha=weight)
    return [s for s, _ in chosen], w, {k: v.to(dtypes[k]) for k, v in total.items()}


def write_run(run: Path, out: Path, steps: list[int], w: list[float], sd: dict[str, torch.Tensor]) -> Path:
    """MERGED as a run folder (see the module docstring); returns its checkpoint folder."""
    from train.checkpoint.writer import write_file
    from train.plan import read_plan

    if out.exists():
        raise MergeError(f"{out} exists; choose a new --out")
    n_layers = read_plan(run).model.n_layers
    tmp = out.with_name(f".{out.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name in ("config.json", "config.yaml", "run.json", "manifest.json"):
        if (run / name).is_file():
            shutil.copy2(run / name, tmp / name)
    if (run / "data_order").is_dir():
        shutil.copytree(run / "data_order", tmp / "data_order")
    step = steps[-1]
    ckpt = store.checkpoints_dir(tmp) / store.tag_for(step)
    ckpt.mkdir(parents=True)
    files = {}
    for idx, prefix in enumerate(store.layer_names_for(n_layers)):
        part = {k[len(prefix) + 1:]: v for k, v in sd.items() if k.startswith(prefix + ".")}
        name = f"layer_{idx:02d}-model_00-model_states.pt"
        size, sha = write_file(part, ckpt / name)
        files[name] = {"size": size, "sha256": sha}
    info = {"step": step, "time": time.time(), "layout": {"tp": 1, "pp": 1, "dp": 1, "zero_stage": 0},
            "merged": {"run": str(run), "steps": steps, "weights": w}, "files": files}
    (ckpt / store.COMPLETE).write_text(json.dumps(info, indent=1))
    tmp.rename(out)
    return store.checkpoints_dir(out) / store.tag_for(step)


def heldout(run: Path, ckpt_dir: Path) -> dict:
    """Held-out validation loss (nats per token) and bits per byte of a checkpoint's weights, the run's sequences."""
    from train.export import rundata, weights
    from train.loop import heldout_loss

    ck = weights.find_checkpoint(run, int(ckpt_dir.name.split("_")[1]))
    manifest = rundata.run_manifest(ck.run)
    order = rundata.held_out(ck.run, manifest, ck.plan)
    model = weights.load_reference_model(ck.model_cfg, weights.merge_checkpoint(ck))
    table = None
    try:
        from train.tokenizer.token_bytes import token_bytes

        table = token_bytes(manifest.tokenizer["abs_path"], manifest.eos_id, ck.model_cfg.vocab_size)
    except Exception:            # an older tokenizer layout: loss only
        table = None
    kwargs = {"byte_table": table} if table is not None else {}
    per = heldout_loss.heldout_losses(lambda x: model(x)[0], order, ck.model_cfg.vocab_size, **kwargs)
    overall, _ = heldout_loss.combine(per, order)
    out = {"loss": overall["loss"]}
    if table is not None:
        nats = sum(v["loss"] * v["tokens"] for v in per.values())
        n_bytes = sum(v.get("bytes", 0) for v in per.values())
        out["bpb"] = nats / (math.log(2) * n_bytes) if n_bytes else None
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="glassbox merge", description=__doc__.split("\n\n")[0])
    ap.add_argument("run")
    ap.add_argument("--last", type=int, required=True, help="how many of the newest whole checkpoints to average")
    ap.add_argument("--out", required=True, help="the merged run folder (new)")
    ap.add_argument("--weights", default=None, help="comma-separated, oldest first (default: equal)")
    ap.add_argument("--evaluate", action="store_true", help="held-out loss of the newest checkpoint and the merge")
    a = ap.parse_args(argv)
    run, out = Path(a.run).resolve(), Path(a.out).resolve()
    try:
        if a.last < 1:
            raise MergeError(f"--last: at least 1, got {a.last}")
        w = [float(x) for x in a.weights.split(",")] if a.weights else None
        steps, w, sd = merge_weights(run, a.last, w)
        ckpt = write_run(run, out, steps, w, sd)
    except (MergeError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{out}: steps {', '.join(map(str, steps))} averaged (weights {', '.join(f'{x:.3g}' for x in w)}) into "
          f"{ckpt.relative_to(out)}")
    if a.evaluate:
        last = heldout(run, store.checkpoints_dir(run) / store.tag_for(steps[-1]))
        merged = heldout(out, ckpt)
        for name, r in (("last checkpoint", last), (f"merge of {a.last}", merged)):
            print(f"{name:<18} validation loss {r['loss']:.4f}" + (f", {r['bpb']:.4f} bits per byte"
                                                                  if r.get("bpb") is not None else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
