"""llama.cpp GGUF files beside an export, with what quantization cost measured: ``glassbox export ... --gguf q8_0,q4_k_m``.

The checked Hugging Face export is converted by llama.cpp's own ``convert_hf_to_gguf.py`` (from the
llama-cpp-python sdist, extracted by ``make setup-gguf`` into ``build/llama.cpp/`` with the gguf-py it is written
against; PyPI's ``gguf`` reads the files here) to an fp32 GGUF, which
llama.cpp's quantizer (``llama_model_quantize`` in the llama-cpp-python library) turns into each asked format:
``<export>/model-<format>.gguf``. Then, per format, into ``glassbox_export.json`` under ``gguf``:

- ``perplexity``: held-out loss and perplexity per source (the trainer's held-out documents, as
  ``train.evaluate perplexity``) computed by llama.cpp on the GGUF file, and ``perplexity_ratio`` to the full
  precision export's (computed by transformers, fp32); ``overall`` weights the sources as the trainer does.
  Target: q8_0 within 1 % (``within_target``); other formats are reported.
- ``greedy``: greedy continuations of the blind prompt set (train/evaluation/prompts.jsonl, each after the
  end-of-document token, as ``train.evaluate compare`` does) by the GGUF file and by the export, on the same
  prompt ids: how many are identical, and the mean share of tokens before the first difference.
- ``size``: the file's bytes against train/estimate.py's weight memory for that precision (fp32 / bf16 / int8 /
  int4 bytes per parameter; the GGUF adds block scales, the vocabulary and metadata), and the parameters per
  storage type actually written (llama.cpp stores rows that are not a multiple of 256 values in another type
  than the k-quant asked for: small models' q4_k_m is partly q5_0 / q8_0).

The fp32 conversion itself is checked first, like the export: its held-out loss must match the export's within
``CONVERSION_RTOL`` (both fp32; llama.cpp runs other kernels and summation orders, ~1e-6 relative here, while a
wrong rotary layout, norm epsilon or vocabulary moves the loss by whole percents). Measurements keep llama.cpp's
KV cache in fp32 so that only the weights' precision differs from the reference.
"""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[2]
CONVERTER = Path(os.environ.get("GLASSBOX_LLAMA_CPP", REPO / "build" / "llama.cpp")) / "convert_hf_to_gguf.py"
SETUP_HINT = "run `make setup-gguf` (builds llama-cpp-python 0.3.36 and extracts llama.cpp's converter)"
# llama_ftype values (llama.h) and the estimator's precision for each format
FORMATS = {"f32": (0, "fp32"), "f16": (1, "bf16"), "bf16": (32, "bf16"), "q8_0": (7, "int8"),
           "q6_k": (18, "int8"), "q5_k_m": (17, "int4"), "q4_k_m": (15, "int4"), "q4_0": (2, "int4")}
TARGET_RATIO = {"q8_0": 1.01, "f16": 1.001, "bf16": 1.005, "f32": 1.0001}
CONVERSION_RTOL = 1e-4
GREEDY_TOKENS = 32
GGML_TYPE_F32 = 0


class GGUFError(RuntimeError):
    pass


def parse_formats(text: str) -> list[str]:
    formats = [f.strip().lower() for f in text.split(",") if f.strip()]
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise ValueError(f"--gguf {text!r}: unknown format(s) {', '.join(unknown) or '(none)'}; choose from "
                         f"{', '.join(FORMATS)} (comma-separated, e.g. q8_0,q4_k_m)")
    return list(dict.fromkeys(formats))


def available() -> str | None:
    """None when conversion and quantization can run here, else why not."""
    if not CONVERTER.is_file() or not (CONVERTER.parent / "gguf-py").is_dir():
        return f"llama.cpp's converter (and its gguf-py) is not at {CONVERTER.parent}; {SETUP_HINT}"
    try:
        import gguf  # noqa: F401
        import llama_cpp  # noqa: F401
    except ImportError as e:
        return f"{e.name} is not installed; {SETUP_HINT}"
    return None


# --- making the files --------------------------------------------------------------------------------------

def convert(export_dir: Path, out: Path) -> None:
    """The export as an fp32 GGUF, by llama.cpp's converter (a subprocess: it sets up its own logging)."""
    cmd = [sys.executable, str(CONVERTER), str(export_dir), "--outfile", str(out), "--outtype", "f32"]
    # The converter puts its own gguf-py (beside it) first on its path: PyPI's gguf 0.19.0 lacks what it uses.
    env = {k: v for k, v in os.environ.items() if k != "NO_LOCAL_GGUF"}
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0 or not out.is_file():
        raise GGUFError(f"convert_hf_to_gguf.py failed (status {r.returncode}):\n{r.stderr[-3000:]}")


def quantize(src: Path, dst: Path, fmt: str, threads: int | None = None) -> None:
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = FORMATS[fmt][0]
    params.nthread = threads or 0
    rc = llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), ctypes.byref(params))
    if rc != 0 or not dst.is_file():
        raise GGUFError(f"llama.cpp could not quantize {src.name} to {fmt} (status {rc})")


def load(path: Path, n_ctx: int, threads: int | None = None, logits_all: bool = False):
    from llama_cpp import Llama

    return Llama(model_path=str(path), n_ctx=n_ctx, n_batch=n_ctx, n_ubatch=n_ctx, logits_all=logits_all,
                 n_threads=threads, n_threads_batch=threads, type_k=GGML_TYPE_F32, type_v=GGML_TYPE_F32,
                 verbose=False)


# --- measuring them ----------------------------------------------------------------------------------------

def gguf_logits_fn(llm):
    """(batch of token rows) -> logits, one row at a time through llama.cpp."""
    def logits(x: torch.Tensor) -> torch.Tensor:
        rows = []
        for row in x.tolist():
            llm.reset()
            llm.eval(row)
            rows.append(torch.from_numpy(np.array(llm.scores[:len(row)], dtype=np.float32)))
        return torch.stack(rows)
    return logits


def heldout(order, logits_fn, vocab: int) -> dict:
    from train.loop.heldout_loss import combine, heldout_losses

    per = heldout_losses(logits_fn, order, vocab)
    overall, _ = combine(per, order)
    return {"per_source": per, "overall": {"loss": overall["loss"], "perplexity": overall["perplexity"]}}


def with_ratios(measured: dict, reference: dict) -> dict:
    out = {"per_source": {}, "overall": dict(measured["overall"])}
    for name, v in measured["per_source"].items():
        out["per_source"][name] = {**v, "perplexity_ratio": v["perplexity"] / reference["per_source"][name]["perplexity"]}
    out["overall"]["perplexity_ratio"] = measured["overall"]["perplexity"] / reference["overall"]["perplexity"]
    return out


def prompt_ids(tokenizer, eos: int | None, ctx: int, n_new: int) -> list[list[int]]:
    from train.loop.prompts import read_prompts

    out = []
    for p in read_prompts():
        ids = ([eos] if eos is not None else []) + tokenizer.encode(p["prompt"], add_special_tokens=False)
        out.append(ids[-(ctx - n_new):])
    return out


@torch.no_grad()
def hf_greedy(model, prompts: list[list[int]], n_new: int, eos: set[int]) -> list[list[int]]:
    from transformers import GenerationConfig

    cfg = GenerationConfig(max_new_tokens=n_new, do_sample=False, eos_token_id=sorted(eos) or None,
                           pad_token_id=min(eos) if eos else 0)
    out = []
    for ids in prompts:
        x = torch.tensor([ids])
        new = model.generate(x, attention_mask=torch.ones_like(x), generation_config=cfg)[0, len(ids):].tolist()
        out.append(new[:-1] if new and new[-1] in eos else new)
    return out


def gguf_greedy(llm, prompts: list[list[int]], n_new: int, eos: set[int]) -> list[list[int]]:
    out = []
    for ids in prompts:
        new = []
        for tok in llm.generate(ids, top_k=0, top_p=1.0, min_p=0.0, temp=0.0, repeat_penalty=1.0, reset=True):
            if tok in eos:
                break
            new.append(tok)
            if len(new) >= n_new:
                break
        out.append(new)
    return out


def agreement(reference: list[list[int]], other: list[list[int]]) -> dict:
    def prefix(a, b):
        n = 0
        for x, y in zip(a, b):
            if x != y:
                break
            n += 1
        return n

    shares = [prefix(a, b) / max(len(a), len(b), 1) for a, b in zip(reference, other)]
    return {"prompts": len(reference), "identical": sum(a == b for a, b in zip(reference, other)),
            "token_agreement": sum(shares) / len(shares),
            "definition": "identical: greedy continuations equal token for token; token_agreement: mean share of "
                          "the longer continuation before the first differing token"}


def tensor_types(path: Path) -> dict[str, int]:
    """Parameters per storage type in the file: llama.cpp falls back from k-quants to other types for rows
    that are not a multiple of 256 values (small models), and keeps norms in f32."""
    import gguf as gguf_py

    counts: dict[str, int] = {}
    for t in gguf_py.GGUFReader(str(path)).tensors:
        counts[t.tensor_type.name] = counts.get(t.tensor_type.name, 0) + int(t.n_elements)
    return dict(sorted(counts.items()))


def size_against_estimate(path: Path, fmt: str, hf_config: dict) -> dict:
    from train.estimate import from_config, weight_memory

    shape, _ = from_config(hf_config)
    precision = FORMATS[fmt][1]
    predicted = weight_memory(shape.params())[precision]
    actual = path.stat().st_size
    return {"bytes": actual, "estimate_bytes": int(predicted), "estimate_precision": precision,
            "ratio_to_estimate": actual / predicted, "parameters": shape.params(),
            "parameters_by_type": tensor_types(path)}


# --- the whole step --------------------------------------------------------------------------------------

def add_gguf(export_dir: str | Path, formats: list[str], *, threads: int | None = None,
             greedy_tokens: int = GREEDY_TOKENS) -> dict:
    """Write ``model-<format>.gguf`` for each format into an export, measure them, record them; returns the
    ``gguf`` entry written to glassbox_export.json."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from train.export import rundata, weights
    from glassbox.contracts import sha256_file
    from train.export.files import EXPORT_RECORD

    why = available()
    if why:
        raise GGUFError(why)
    export_dir = Path(export_dir)
    rec_path = export_dir / EXPORT_RECORD
    rec = json.loads(rec_path.read_text())
    t0 = time.perf_counter()
    hf_config = json.loads((export_dir / "config.json").read_text())
    ctx = int(hf_config["max_position_embeddings"])
    vocab = int(hf_config["vocab_size"])
    run = Path(rec["run_dir"])
    order = rundata.held_out(run, rundata.run_manifest(run, rec["manifest"]["path"]), weights.load_plan(run))

    model = AutoModelForCausalLM.from_pretrained(str(export_dir), dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(export_dir))
    eos_id = rec["tokenizer"].get("eos_id")
    eos = {eos_id} if eos_id is not None else set()
    n_new = min(greedy_tokens, ctx // 2)
    prompts = prompt_ids(tokenizer, eos_id, ctx, n_new)
    reference = {"greedy": hf_greedy(model, prompts, n_new, eos)}
    if order is not None:
        reference["perplexity"] = heldout(order, torch.no_grad()(lambda x: model(x).logits), vocab)
    del model

    byte_pieces = _byte_pieces(export_dir)
    if byte_pieces < 256:
        print(f"warning: --gguf: the tokenizer has {byte_pieces} of the 256 byte-fallback pieces; llama.cpp aborts on "
              "text it cannot spell without them, so glassbox serve refuses to serve these files (the measurements "
              "below use token ids and are unaffected)", file=sys.stderr)
    base = export_dir / ".convert-f32.gguf.tmp"
    convert(export_dir, base)
    entry: dict = {"byte_fallback_pieces": byte_pieces, "converter": {"script": "convert_hf_to_gguf.py (llama-cpp-python 0.3.36's llama.cpp)",
                                 "llama_cpp_python": _llama_cpp_version(), "base": "f32"},
                   "measured_with": {"kv_cache": "f32", "threads": threads, "greedy_new_tokens": n_new},
                   "reference": {"what": "the export in fp32 with transformers",
                                 **({"perplexity": reference["perplexity"]} if "perplexity" in reference else {})},
                   "formats": {}}
    try:
        if order is not None:          # the conversion itself, before any quantization
            llm = load(base, order.L, threads, logits_all=True)
            conv = heldout(order, gguf_logits_fn(llm), vocab)
            llm.close()
            rel = abs(conv["overall"]["loss"] - reference["perplexity"]["overall"]["loss"]) / max(
                1e-12, abs(reference["perplexity"]["overall"]["loss"]))
            entry["conversion_check"] = {"loss": conv["overall"]["loss"], "rel_diff": rel, "rtol": CONVERSION_RTOL,
                                         "passed": rel <= CONVERSION_RTOL}
            if rel > CONVERSION_RTOL:
                raise GGUFError(f"the fp32 GGUF's held-out loss {conv['overall']['loss']:.6f} differs from the export's "
                                f"{reference['perplexity']['overall']['loss']:.6f} (relative {rel:.2e} > "
                                f"{CONVERSION_RTOL:g}): the conversion is wrong; no GGUF file was kept")
        for fmt in formats:
            path = export_dir / f"model-{fmt}.gguf"
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.unlink(missing_ok=True)
            if fmt == "f32":
                os.link(base, tmp)
            else:
                quantize(base, tmp, fmt, threads)
            os.replace(tmp, path)
            result = {"file": path.name, "sha256": sha256_file(path), "size": size_against_estimate(path, fmt, hf_config)}
            llm = load(path, max(ctx, order.L if order is not None else 0), threads, logits_all=order is not None)
            if order is not None:
                result["perplexity"] = with_ratios(heldout(order, gguf_logits_fn(llm), vocab), reference["perplexity"])
                if fmt in TARGET_RATIO:
                    result["target_perplexity_ratio"] = TARGET_RATIO[fmt]
                    result["within_target"] = result["perplexity"]["overall"]["perplexity_ratio"] <= TARGET_RATIO[fmt]
            else:
                result["perplexity"] = {"skipped": "the run held out no validation documents (eval.every: 0)"}
            result["greedy"] = agreement(reference["greedy"], gguf_greedy(llm, prompts, n_new, eos))
            llm.close()
            entry["formats"][fmt] = result
    finally:
        base.unlink(missing_ok=True)
    entry["seconds"] = round(time.perf_counter() - t0, 1)
    earlier = {f: r for f, r in (rec.get("gguf") or {}).get("formats", {}).items()
               if f not in entry["formats"] and (export_dir / r["file"]).is_file()}
    entry["formats"] = {**earlier, **entry["formats"]}       # files written by an earlier --gguf stay on record
    rec["gguf"] = entry
    for fmt, r in entry["formats"].items():
        rec["files"][r["file"]] = {"bytes": r["size"]["bytes"], "sha256": r["sha256"]}
    tmp = rec_path.with_name(rec_path.name + ".tmp")
    tmp.write_text(json.dumps(rec, indent=1, default=str) + "\n")
    os.replace(tmp, rec_path)
    return entry


def _byte_pieces(export_dir: Path) -> int:
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(export_dir / "tokenizer.model"))
    return sum(sp.IsByte(i) for i in range(sp.vocab_size()))


def _llama_cpp_version() -> str | None:
    try:
        import llama_cpp
        return getattr(llama_cpp, "__version__", None)
    except ImportError:
        return None


def summary(entry: dict) -> str:
    lines = ["gguf: format      file bytes  /estimate  perplexity ratio  greedy identical  token agreement"]
    for fmt, r in entry["formats"].items():
        ppl = r.get("perplexity", {}).get("overall", {})
        ratio = f"{ppl['perplexity_ratio']:.4f}" if "perplexity_ratio" in ppl else "-"
        mark = "" if "within_target" not in r else (" (within target)" if r["within_target"] else " (OVER TARGET)")
        g = r["greedy"]
        lines.append(f"gguf: {fmt:<8} {r['size']['bytes']:>12,}  {r['size']['ratio_to_estimate']:>9.3f}  "
                     f"{ratio:>16}{mark}  {g['identical']:>7}/{g['prompts']:<8}  {g['token_agreement']:>15.3f}")
    return "\n".join(lines)
