"""Perplexity per source on the run's held-out validation documents, for a run's checkpoint or an export.

The held-out set is the trainer's own (train/data/sample_index.py): per source, whole documents chosen by a
seeded shuffle before step one, never trained on, cut into ``eval.samples_per_source`` sequences of
``seq_len`` + 1 tokens. The loss per source is the mean next-token cross entropy over every target token of
those sequences, exactly what the trainer logs as ``val_loss_<source>``; ``overall`` weights the sources by
their planned share of the training mix, as the trainer's ``val_loss`` does (``token_weighted`` is the plain
mean over all tokens). Perplexity is exp(loss), in nats per token of the run's tokenizer, so it compares
models with the same tokenizer only.

For a run directory the checkpoint (newest complete, or ``--step``) is merged into the single-process training
model; for an export (``glassbox_export.json``) the Hugging Face model is loaded with ``AutoModelForCausalLM``
and the held-out data is found through the run it records. Both evaluate in fp32. When the run logged a
validation row at that step, it is written beside the result for comparison.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import torch

from train.export.files import EXPORT_RECORD
from train.loop.heldout_loss import combine, heldout_losses, logged_val  # noqa: F401  (the measure itself)


class EvalError(RuntimeError):
    pass


def open_model(path: Path, step: int | None = None):
    """(kind, run dir, step, logits_fn, vocab_size, description) for a run directory or an export."""
    from train.export import weights

    path = Path(path)
    if (path / EXPORT_RECORD).is_file():
        from transformers import AutoModelForCausalLM

        rec = json.loads((path / EXPORT_RECORD).read_text())
        if step is not None and step != rec["step"]:
            raise EvalError(f"{path} is the export of step {rec['step']}, not {step}")
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32).eval()
        return ("export", Path(rec["run_dir"]), int(rec["step"]), lambda x: model(x).logits,
                int(model.config.vocab_size), {"export": str(path.resolve()), "manifest": rec["manifest"]["path"]})
    if (path / "config.json").is_file() and (path / "checkpoints").is_dir():
        ckpt = weights.find_checkpoint(path, step)
        model = weights.load_reference_model(ckpt.model_cfg, weights.reference_state_dict(
            weights.merge_checkpoint(ckpt), torch.float32))
        return ("run", ckpt.run, ckpt.step, lambda x: model(x)[0], ckpt.model_cfg.vocab_size,
                {"checkpoint": str(ckpt.path), "layout": ckpt.layout, "manifest": None})
    raise EvalError(f"{path}: neither a run directory (config.json + checkpoints/) nor an export "
                    f"({EXPORT_RECORD}); pass runs/<name> or the directory glassbox export wrote")


def perplexity(path, *, step=None, manifest=None, batch_size=8) -> dict:
    from train.export import rundata, weights

    t0 = time.perf_counter()
    kind, run, step, logits_fn, vocab, where = open_model(Path(path), step)
    man = rundata.run_manifest(run, manifest or where.get("manifest"))
    order = rundata.held_out(run, man, weights.load_plan(run))
    if order is None:
        raise EvalError(f"{run} held out no validation documents (it trained with eval.every: 0, or every source "
                        "was too small to hold any out); perplexity on held-out data needs a run with eval.every > 0")
    from train.tokenizer.token_bytes import token_bytes

    per = heldout_losses(logits_fn, order, vocab, batch_size,
                         byte_table=token_bytes(man.tokenizer["abs_path"], man.eos_id, vocab))
    overall, token_weighted = combine(per, order)
    return {
        "model": str(Path(path).resolve()), "kind": kind, "run_dir": str(run), "step": step, **where,
        "manifest": {"path": str(man.path), "name": man.name, "content_hash": man.content_hash},
        "held_out": {"sequences_per_source": order.val_samples, "seq_len": order.L,
                     "sources": [order.names[s] for s in order.val_sources],
                     "definition": "the trainer's held-out documents (run data_order/meta.json), the sequences "
                                   "val_loss is computed on"},
        "dtype": "float32", "per_source": per, "overall": overall, "token_weighted": token_weighted,
        "logged_val_at_step": logged_val(run, step), "seconds": time.perf_counter() - t0, "time": time.time(),
    }


def format_table(result: dict) -> str:
    rows = [f"perplexity of {result['model']} ({result['kind']}, step {result['step']}) on "
            f"{result['held_out']['sequences_per_source']} held-out sequences x {result['held_out']['seq_len']} "
            "tokens per source (bpb: bits per byte, what compares across sources and tokenizers)",
            f"{'source':<16} {'loss':>9} {'perplexity':>11} {'tokens':>9} {'bpb':>7}"]
    logged = result.get("logged_val_at_step") or {}
    for name, v in result["per_source"].items():
        bpb = f"{v['bpb']:>7.4f}" if "bpb" in v else f"{'-':>7}"
        rows.append(f"{name:<16} {v['loss']:>9.4f} {v['perplexity']:>11.3f} {v['tokens']:>9,} {bpb}"
                    + (f"   (val_loss logged {logged['val_loss_' + name]:.4f})"
                       if f"val_loss_{name}" in logged else ""))
    o = result["overall"]
    rows.append(f"{'overall':<16} {o['loss']:>9.4f} {o['perplexity']:>11.3f}"
                + (f"   (val_loss logged {logged['val_loss']:.4f})" if "val_loss" in logged else ""))
    return "\n".join(rows)
