"""``glassbox export RUN_DIR [--out DIR] [--step N]``: a run's checkpoint as a Hugging Face model directory.

    glassbox export runs/x                       # newest complete checkpoint -> runs/x/export
    glassbox export runs/x --out exports/x --step 400 --dtype bfloat16
    glassbox export --check exports/x            # re-run the consistency check of an export
    glassbox export runs/x --out exports/x --gguf q8_0,q4_k_m   # plus llama.cpp GGUF files, measured
    glassbox export exports/x --gguf q8_0        # GGUF files for an existing export

Reads the newest complete checkpoint (or ``--step N``) in whatever layout it was trained (train/export/weights.py
merges tensor-parallel slices and pipeline layers), and writes

    model.safetensors                  (or model-0000k-of-0000n.safetensors + index, over --max-shard-size)
    config.json                        LlamaConfig: sizes, rope_theta, rms_norm_eps, num_key_value_heads,
                                       untied embeddings, vocab_size, max_position_embeddings = the trained
                                       sequence length, bos/eos/pad ids of the manifest's tokenizer
    generation_config.json
    tokenizer.json, tokenizer_config.json, special_tokens_map.json, tokenizer.model
                                       the run's sentencepiece model via train.export.hf_tokenizer
    glassbox_export.json               run, step, layout, manifest hash, code version, files with sha256,
                                       and the consistency results

The directory is written beside ``--out`` under a temporary name and checked before it is renamed into place,
so ``--out`` only ever holds a complete export that passed: weights bit-identical to the merged checkpoint,
logits and greedy generations of ``transformers`` equal to the training model's (train/export/consistency.py),
and, for fp32 runs that logged validation at that step, the merged checkpoint's held-out loss equal to the
logged ``val_loss`` (relative 1e-5). The last is the check of the merge itself: the comparison with
``transformers`` holds the merged weights on both sides, so only the run's own record can say the merge is
right; a slice in the wrong order or on the wrong dim fails it. A failed check exits with status 1, prints the
largest difference and where, and leaves the files in ``<out>.failed/`` for inspection. There is no option to
skip the check.

``--gguf FORMATS`` then writes ``model-<format>.gguf`` beside the export with llama.cpp and records what each
format costs (held-out perplexity ratio, greedy agreement, size against the estimator): train/export/gguf.py.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

from glassbox.contracts import sha256_file
from train.export.files import EXPORT_RECORD

STATUS_FAILED, STATUS_ERROR = 1, 2
# The merged checkpoint's held-out loss against the run's logged val_loss (fp32 runs): the trainer and the
# single-process model differ in summation order only (~1e-7 relative), as the layouts do in
# tests/train/test_train_runs.py, whose 1e-5 this reuses. Skipped above ~1e12 FLOPs (a minute or so on a CPU).
VAL_CHECK_RTOL = 1e-5
VAL_CHECK_FLOPS = 1e12


def _dtype_name(sd) -> str:
    import torch

    dtypes = {t.dtype for t in sd.values()}
    if dtypes == {torch.float32}:
        return "float32"
    if dtypes == {torch.bfloat16}:
        return "bfloat16"
    if dtypes == {torch.float16}:
        return "float16"
    return "float32"


class Prepared:
    """Everything both the export and ``--check`` need from a run: checkpoint, weights, tokenizer, probes."""

    def __init__(self, run, step, manifest_override, dtype: str):
        from train.export import consistency, rundata, weights

        self.ckpt = weights.find_checkpoint(run, step)
        self.cfg = self.ckpt.model_cfg
        self.manifest = rundata.run_manifest(self.ckpt.run, manifest_override)
        self.sp_model = rundata.tokenizer_model(self.manifest)
        self.ids = rundata.special_ids(self.manifest)
        self.sd = weights.merge_checkpoint(self.ckpt)
        self.checkpoint_dtype = _dtype_name(self.sd)
        self.dtype = self.checkpoint_dtype if dtype == "auto" else dtype
        torch_dtype = weights.DTYPES[self.dtype]
        self.hf_sd = weights.to_hf(self.sd, self.cfg, torch_dtype)
        self.reference_sd = weights.reference_state_dict(self.sd, torch_dtype)
        try:
            order = rundata.held_out(self.ckpt.run, self.manifest, self.ckpt.plan)
        except rundata.RunDataError as e:
            print(f"warning: held-out data unavailable ({e}); checking on fixed text", file=sys.stderr)
            order = None
        self.order = order
        self.probes = consistency.make_probes(self.cfg, order, self.sp_model)

    def check(self, export_dir: Path, rtol: float) -> dict:
        from train.export import consistency

        result = consistency.run_check(export_dir, self.cfg, self.reference_sd, self.hf_sd, self.probes,
                                       eos_id=self.ids["eos_id"], pad_id=self.ids["pad_id"], rtol=rtol)
        result["val_loss"] = self.val_loss_check()
        if result["val_loss"].get("passed") is False:
            result["failures"].append(result["val_loss"]["message"])
            result["passed"] = False
        return result

    def val_loss_check(self) -> dict:
        """The merged weights against the run's own validation loss at this step (a check of the merge
        itself, which the comparison with transformers cannot see: both sides hold the merged weights)."""
        from train.loop import heldout_loss as heldout
        from train.export import weights

        logged = heldout.logged_val(self.ckpt.run, self.ckpt.step)
        if self.order is None or not logged or "val_loss" not in logged:
            return {"skipped": "the run logged no validation loss at this step (or its held-out data is unavailable)"}
        tokens = len(self.order.val_sources) * self.order.val_samples * self.order.L
        flops = 2 * self.cfg.num_params() * tokens
        if flops > VAL_CHECK_FLOPS:
            return {"skipped": f"{tokens:,} held-out tokens x {self.cfg.num_params():,} parameters is over the "
                               "export's budget; glassbox evaluate perplexity computes it"}
        # fp32 checkpoints: the merged weights themselves (no copy); others: as upcast for the logit check.
        model = weights.load_reference_model(self.cfg, self.sd if self.checkpoint_dtype == "float32"
                                             else self.reference_sd)
        per = heldout.heldout_losses(lambda x: model(x)[0], self.order, self.cfg.vocab_size)
        overall, _ = heldout.combine(per, self.order)
        diff = abs(overall["loss"] - logged["val_loss"])
        out = {"logged": logged["val_loss"], "computed": overall["loss"],
               "per_source": {k: {"computed": v["loss"], "logged": logged.get(f"val_loss_{k}")}
                              for k, v in per.items()},
               "rel_diff": diff / max(1e-12, abs(logged["val_loss"])), "rtol": VAL_CHECK_RTOL}
        if self.checkpoint_dtype != "float32":
            out["note"] = (f"informational: the trainer evaluated in {self.checkpoint_dtype}, this in fp32 "
                           "with the same weights")
            return out
        out["passed"] = out["rel_diff"] <= VAL_CHECK_RTOL
        out["message"] = (f"the merged checkpoint's validation loss {overall['loss']:.6f} differs from the "
                          f"{logged['val_loss']:.6f} the run logged at step {self.ckpt.step} (relative "
                          f"{out['rel_diff']:.2e} > {VAL_CHECK_RTOL:g}): the tensor-parallel/pipeline merge is wrong")
        return out


def write_export(prep: Prepared, out: Path, max_shard_bytes: int, chat_template: bool) -> list[str]:
    from transformers import GenerationConfig

    from train.export import weights
    from train.export.hf_tokenizer import SIMPLE_CHAT_TEMPLATE, save_hf_tokenizer

    ids = prep.ids
    files = weights.write_safetensors(prep.hf_sd, out, max_shard_bytes)
    config = weights.hf_config(prep.cfg, prep.dtype, bos_id=ids["bos_id"], eos_id=ids["eos_id"], pad_id=ids["pad_id"])
    config.save_pretrained(str(out))
    # transformers 5 writes rope_theta inside rope_parameters; older readers (transformers 4, some servers) look
    # for the top-level key, which 5 also accepts.
    cj = json.loads((out / "config.json").read_text())
    cj.setdefault("rope_theta", prep.cfg.rope_theta)
    (out / "config.json").write_text(json.dumps(cj, indent=2, sort_keys=True) + "\n")
    GenerationConfig(bos_token_id=ids["bos_id"], eos_token_id=ids["eos_id"], pad_token_id=ids["pad_id"]
                     ).save_pretrained(str(out))
    save_hf_tokenizer(prep.sp_model, out, eos_id=ids["eos_id"] if ids["eos_id"] is not None else -1,
                      bos_id=ids["bos_id"] if ids["bos_id"] is not None else -1,
                      pad_id=ids["pad_id"] if ids["pad_id"] is not None else -1,
                      model_max_length=prep.cfg.max_seq_len,
                      chat_template=SIMPLE_CHAT_TEMPLATE if chat_template else None)
    return files + ["config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                    "special_tokens_map.json", "tokenizer.model"]


def record(prep: Prepared, out_final: Path, files: list[str], out_tmp: Path, result: dict, chat_template: bool) -> dict:
    import dataclasses

    from train.loop.run_record import code_version

    return {
        "format": 1,
        "run_dir": str(prep.ckpt.run),
        "step": prep.ckpt.step,
        "checkpoint": str(prep.ckpt.path),
        "layout": prep.ckpt.layout,
        "samples_consumed": prep.ckpt.info.get("samples_consumed"),
        "manifest": {"path": str(prep.manifest.path), "name": prep.manifest.name,
                     "content_hash": prep.manifest.content_hash},
        "tokenizer": {"path": str(prep.sp_model), "sha256": prep.manifest.tokenizer["sha256"], **prep.ids},
        "model": dataclasses.asdict(prep.cfg),
        "dtype": prep.dtype,
        "checkpoint_dtype": prep.checkpoint_dtype,
        "vocab": {"size": prep.cfg.vocab_size, "trained_rows": prep.cfg.padded_vocab,
                  "note": "padding rows beyond vocab_size (masked to -inf in training) are not exported"},
        "chat_template": "SIMPLE_CHAT_TEMPLATE" if chat_template else None,
        "files": {f: {"bytes": (out_tmp / f).stat().st_size, "sha256": sha256_file(out_tmp / f)} for f in files},
        "out": str(out_final),
        "exported_at": time.time(),
        "code": code_version(),
        "consistency": result,
    }


def _place(tmp: Path, out: Path) -> None:
    if out.exists():                   # an earlier export (--force) or an empty directory
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        os.replace(out, old)
        os.replace(tmp, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, out)


def export(run, out=None, *, step=None, manifest=None, dtype="auto", max_shard_size="5GB", chat_template=False,
           force=False, rtol=None, gguf=None, threads=None) -> tuple[int, dict | None]:
    """Export and check (then, with ``gguf`` formats, add GGUF files); returns (exit status, the export record)."""
    from train.export import consistency, weights

    if gguf and (why := _gguf_unavailable()):
        print(f"error: --gguf: {why}", file=sys.stderr)
        return STATUS_ERROR, None
    run = Path(run)
    out = Path(out) if out else run / "export"
    if out.exists():
        if not out.is_dir() or not ((out / EXPORT_RECORD).is_file() or not any(out.iterdir())):
            print(f"error: {out} exists and is not an export; choose another --out", file=sys.stderr)
            return STATUS_ERROR, None
        if (out / EXPORT_RECORD).is_file() and not force:
            print(f"error: {out} exists; pass --force to replace it", file=sys.stderr)
            return STATUS_ERROR, None
    t0 = time.perf_counter()
    prep = Prepared(run, step, manifest, dtype)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    files = write_export(prep, tmp, weights.parse_size(max_shard_size), chat_template)
    umask = os.umask(0)
    os.umask(umask)
    for f in files:                    # safetensors creates its files owner-only; readable like the rest
        os.chmod(tmp / f, 0o666 & ~umask)
    result = prep.check(tmp, rtol or consistency.RTOL)
    rec = record(prep, out, files, tmp, result, chat_template)
    (tmp / EXPORT_RECORD).write_text(json.dumps(rec, indent=1, default=str) + "\n")
    print(consistency.summary(result))
    if not result["passed"]:
        failed = out.with_name(out.name + ".failed")
        shutil.rmtree(failed, ignore_errors=True)
        os.replace(tmp, failed)
        print(f"error: the export of {prep.ckpt.run} step {prep.ckpt.step} does not match the training model; "
              f"nothing was written to {out}; the rejected files are in {failed}", file=sys.stderr)
        return STATUS_FAILED, rec
    _place(tmp, out)
    print(f"exported {prep.ckpt.run} step {prep.ckpt.step} (layout tp={prep.ckpt.layout['tp']} "
          f"pp={prep.ckpt.layout['pp']} dp={prep.ckpt.layout['dp']}, {prep.dtype}) to {out} in "
          f"{time.perf_counter() - t0:.1f}s")
    if gguf:
        return add_gguf(out, gguf, threads)
    return 0, rec


def _gguf_unavailable() -> str | None:
    from train.export import gguf

    return gguf.available()


def add_gguf(export_dir: Path, formats: list[str], threads: int | None = None) -> tuple[int, dict | None]:
    """GGUF files for a checked export (train/export/gguf.py); the export itself stays as it is on failure."""
    from train.export import gguf

    if why := gguf.available():
        print(f"error: --gguf: {why}", file=sys.stderr)
        return STATUS_ERROR, None
    try:
        entry = gguf.add_gguf(export_dir, formats, threads=threads)
    except gguf.GGUFError as e:
        print(f"error: --gguf: {e}", file=sys.stderr)
        return STATUS_FAILED, None
    print(gguf.summary(entry))
    return 0, json.loads((Path(export_dir) / EXPORT_RECORD).read_text())


def check(export_dir, manifest=None, rtol=None) -> tuple[int, dict | None]:
    """Re-run the consistency check of an existing export against the checkpoint it records."""
    from train.export import consistency

    export_dir = Path(export_dir)
    rec_path = export_dir / EXPORT_RECORD
    if not rec_path.is_file():
        print(f"error: {export_dir}: no {EXPORT_RECORD}; not a directory written by train.export", file=sys.stderr)
        return STATUS_ERROR, None
    rec = json.loads(rec_path.read_text())
    prep = Prepared(rec["run_dir"], rec["step"], manifest or rec["manifest"]["path"], rec["dtype"])
    result = prep.check(export_dir, rtol or rec["consistency"]["tolerance"]["rtol"])
    print(consistency.summary(result))
    if not result["passed"]:
        print(f"error: {export_dir} does not match {rec['run_dir']} step {rec['step']}", file=sys.stderr)
        return STATUS_FAILED, result
    return 0, result


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="glassbox export", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", help="run directory (runs/<name>); with --check, an export directory")
    p.add_argument("--out", help="export directory (default RUN_DIR/export)")
    p.add_argument("--step", type=int, help="checkpoint step (default: the newest complete one)")
    p.add_argument("--manifest", help="the run's manifest, when it moved since training (same content hash)")
    p.add_argument("--dtype", choices=("auto", "float32", "bfloat16", "float16"), default="auto",
                   help="weight dtype of the export (default: the checkpoint's)")
    p.add_argument("--max-shard-size", default="5GB", help="split the weights into files of at most this size")
    p.add_argument("--chat-template", action="store_true",
                   help="record SIMPLE_CHAT_TEMPLATE as the tokenizer's chat template (vLLM then renders chats "
                        "as glassbox serve's CPU server does; that server adds the stop '\\nUser:' only without one)")
    p.add_argument("--force", action="store_true", help="replace an existing export at --out")
    p.add_argument("--rtol", type=float, default=None,
                   help="logit tolerance factor (default 1e-4; see train/export/consistency.py)")
    p.add_argument("--check", action="store_true", help="PATH is an export: re-run its consistency check")
    p.add_argument("--gguf", default=None, metavar="FORMATS",
                   help="also write llama.cpp GGUF files, e.g. q8_0,q4_k_m (f32, f16, bf16, q8_0, q6_k, q5_k_m, "
                        "q4_k_m, q4_0), measured against the export; PATH may be an existing export")
    p.add_argument("--threads", type=int, default=None, help="CPU threads for llama.cpp (--gguf)")
    p.add_argument("--skip-check", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.skip_check:
        print("error: --skip-check is not offered: an export that was not checked against the training model "
              "is not an export of it. If the check fails, its message says where; --rtol loosens the "
              "tolerance (recorded in glassbox_export.json).", file=sys.stderr)
        return STATUS_ERROR
    from train.export.rundata import RunDataError
    from train.export.weights import ExportError

    try:
        formats = None
        if args.gguf is not None:
            from train.export.gguf import parse_formats
            formats = parse_formats(args.gguf)
        if args.check:
            status, _ = check(args.path, args.manifest, args.rtol)
        elif formats and args.out is None and (Path(args.path) / EXPORT_RECORD).is_file():
            status, _ = add_gguf(Path(args.path), formats, args.threads)
        else:
            status, _ = export(args.path, args.out, step=args.step, manifest=args.manifest, dtype=args.dtype,
                               max_shard_size=args.max_shard_size, chat_template=args.chat_template,
                               force=args.force, rtol=args.rtol, gguf=formats, threads=args.threads)
    except (ExportError, RunDataError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return STATUS_ERROR
    return status


if __name__ == "__main__":
    sys.exit(main())
