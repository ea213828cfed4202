"""Hardware estimator: memory for weights, training and the KV cache, and the smallest TP x PP layout that fits.

    python -m train.estimate --params 535e9
    python -m train.estimate --config train/configs/7b.yaml --gpu-mem 80 --batch 2 --seq 4096

Pure arithmetic (no torch, no trainer import). GB means 10^9 bytes; the KV cache per token is also shown in
MiB (2^20). The model is a Llama-style decoder (RMSNorm, rotary, SwiGLU, grouped-query attention, untied
embeddings unless the config ties them). ``--config`` reads the trainer's YAML (``model:``/``data:``/``train:``
sections) or a flat dict, or a Hugging Face ``config.json``. With ``--params`` alone the shape is assumed
(d_model/n_layers = 128, as in GPT-3) for the numbers that need it, and says so.

What is counted:
- Weights: parameters x 4 / 2 / 1 / 0.5 bytes for fp32 / bf16 / int8 / int4 (quantization scales ignored).
- Training with Adam: weights + gradients in the training precision, Adam's two moments in fp32 and, for
  bf16, an fp32 master copy (16 bytes per parameter either way).
- Activations kept for the backward pass, per token and layer: 6·d + 2·d_kv + 4·ffn values (the two norms'
  inputs and outputs, q, k, v, the attention output, the SwiGLU gate, up, activation and product), i.e.
  12·d + 4·d_kv + 8·ffn bytes in bf16 (about 37·d for Llama-2-7B, near the 34·d of Korthikanti et al. for
  GPT); plus h·s attention probabilities per token with ``--attention eager`` (flash attention keeps
  none); plus the logits and their gradient in the training precision, and one chunk of the loss in fp32
  (``LOSS_CHUNK_ROWS`` tokens x vocabulary x 8 bytes: train/parallel/cross_entropy.py). Full
  activation checkpointing keeps each layer's input (d values) and recomputes one layer at a time. An
  estimate: allocator slack, temporary buffers and communication buckets are what ``--reserve`` (10% of
  the GPU by default) is for.
- Layouts: tensor parallel splits every layer's weights, the heads and (with sequence parallelism) the
  activations over TP GPUs; pipeline parallel splits the layers into PP stages (ceil(n_layers/PP) on the
  largest, embedding on the first, head and logits on the last). Under the 1F1B schedule the first stage
  holds PP micro-batches of activations in flight. The smallest TP x PP is reported, TP first (up to
  ``--max-tp``, one node) since pipeline stages add bubbles; that is one data-parallel replica. ZeRO-1
  over ``--dp`` replicas divides the optimizer states (``--zero 1``).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from glassbox.contracts import llama_block_params, llama_param_count

LOSS_CHUNK_ROWS = 4096      # train/parallel/cross_entropy.py's CHUNK_ROWS (a test keeps them equal)

GB = 1e9
MIB = 2 ** 20
WEIGHT_BYTES = {"fp32": 4.0, "bf16": 2.0, "int8": 1.0, "int4": 0.5}
ACT_BYTES = {"fp32": 4, "bf16": 2}
DEFAULT_VOCAB = 32000


@dataclass
class Shape:
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    ffn_hidden: int
    vocab_size: int
    tie_embeddings: bool = False
    assumed: bool = False          # guessed from a parameter count

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def d_kv(self) -> int:
        return self.n_kv_heads * self.head_dim

    def layer_params(self) -> int:
        return llama_block_params(d_model=self.d_model, n_heads=self.n_heads, n_kv_heads=self.n_kv_heads,
                                  ffn_hidden=self.ffn_hidden)

    def embedding_params(self) -> int:
        return self.vocab_size * self.d_model

    def params(self) -> int:
        return llama_param_count(d_model=self.d_model, n_layers=self.n_layers, n_heads=self.n_heads,
                                 n_kv_heads=self.n_kv_heads, ffn_hidden=self.ffn_hidden, vocab_size=self.vocab_size,
                                 tied=self.tie_embeddings)

    def kv_bytes_per_token(self, bytes_per_value: float = 2) -> float:
        return 2 * self.n_layers * self.d_kv * bytes_per_value

    def act_bytes_per_token_layer(self, bytes_per_value: int, seq: int, attention: str) -> float:
        values = 6 * self.d_model + 2 * self.d_kv + 4 * self.ffn_hidden
        if attention == "eager":
            values += self.n_heads * seq
        return values * bytes_per_value

    def logits_bytes_per_token(self, bytes_per_value: float = 2) -> float:
        """The logits and, in backward, their gradient, in the training precision."""
        return 2 * bytes_per_value * self.vocab_size


def default_ffn(d_model: int) -> int:
    """The trainer's default SwiGLU width: 8/3 d_model rounded up to a multiple of 64."""
    return -(-(8 * d_model) // (3 * 64)) * 64


def assume_shape(params: float, vocab: int = DEFAULT_VOCAB) -> Shape:
    """A plausible shape for a parameter count: d_model ~ 128 n_layers, 12 d^2 per layer, heads of 128
    (d_model a multiple of 1024 from 2048 up, so that the head count splits over 8 tensor-parallel GPUs)."""
    d = (128 * params / 12) ** (1 / 3)
    step = 1024 if d >= 2048 else 128
    d = max(128, int(round(d / step)) * step)
    layers = max(1, round((params - 2 * vocab * d) / (12 * d * d)))
    heads = d // 128
    return Shape(layers, d, heads, heads, default_ffn(d), vocab, assumed=True)


ALIASES = {
    "n_layers": ("n_layers", "n_layer", "num_layers", "num_hidden_layers"),
    "d_model": ("d_model", "hidden_size", "n_embd", "dim"),
    "n_heads": ("n_heads", "n_head", "num_attention_heads"),
    "n_kv_heads": ("n_kv_heads", "n_kv_head", "num_key_value_heads"),
    "ffn_hidden": ("ffn_hidden", "ffn_hidden_size", "intermediate_size", "ffn_dim"),
    "vocab_size": ("vocab_size",),
    "seq_len": ("seq_len", "max_seq_len", "max_position_embeddings"),
    "micro_batch": ("micro_batch_size", "batch_size"),
    "precision": ("precision",),
    "checkpointing": ("activation_checkpointing",),
    "tie": ("tie_word_embeddings", "tie_embeddings"),
    "vocab_multiple": ("vocab_multiple",),
}


def flatten(cfg: dict) -> dict:
    """The trainer's sections (model/data/train/...) or a flat dict, as one flat dict."""
    flat = {}
    for key, value in cfg.items():
        if isinstance(value, dict) and key in ("model", "data", "train", "parallel", "optimizer"):
            for k, v in value.items():
                flat.setdefault(k, v)
        else:
            flat[key] = value
    return flat


def from_config(cfg: dict, vocab_override: int | None = None) -> tuple[Shape, dict]:
    """(shape, run settings found: seq_len, micro_batch, precision, checkpointing); names the missing key."""
    flat = flatten(cfg)

    def get(name):
        for alias in ALIASES[name]:
            if flat.get(alias) is not None:
                return flat[alias]
        return None

    missing = [ALIASES[k][0] for k in ("n_layers", "d_model", "n_heads") if get(k) is None]
    if missing:
        raise ValueError(f"config: missing {', '.join(missing)} (also read as "
                         f"{', '.join(a for k in missing for a in ALIASES[k][1:])})")
    d, heads = int(get("d_model")), int(get("n_heads"))
    if d % heads:
        raise ValueError(f"config: d_model {d} is not a multiple of n_heads {heads}")
    vocab = vocab_override or get("vocab_size") or DEFAULT_VOCAB
    multiple = get("vocab_multiple")
    if multiple:
        vocab = -(-int(vocab) // int(multiple)) * int(multiple)
    shape = Shape(int(get("n_layers")), d, heads, int(get("n_kv_heads") or heads),
                  int(get("ffn_hidden") or default_ffn(d)), int(vocab), bool(get("tie")))
    settings = {"seq_len": get("seq_len"), "micro_batch": get("micro_batch"), "precision": get("precision"),
                "checkpointing": get("checkpointing"), "vocab_given": bool(vocab_override or get("vocab_size"))}
    return shape, settings


def load_config(path: str | Path) -> dict:
    text = Path(path).read_text()
    if str(path).endswith(".json"):
        return json.loads(text)
    import yaml
    data = yaml.safe_load(text)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a mapping")
    return data


# --- memory ----------------------------------------------------------------------------------------------

def weight_memory(params: float) -> dict[str, float]:
    """Bytes of the weights per dtype."""
    return {dtype: params * b for dtype, b in WEIGHT_BYTES.items()}


def state_bytes_per_param(precision: str) -> dict[str, float]:
    w = WEIGHT_BYTES[precision]
    parts = {"weights": w, "gradients": w, "adam_moments": 8.0}
    if precision != "fp32":
        parts["master_weights"] = 4.0
    return parts


def activation_bytes(shape: Shape, batch: int, seq: int, precision: str, checkpointing: bool,
                     attention: str, layers: int | None = None, logits: bool = True, in_flight: int = 1) -> float:
    """Activations kept for backward: ``in_flight`` micro-batches through ``layers`` layers (default all),
    plus, optionally, the logits of one. With checkpointing only layer inputs are kept, and one layer of
    one micro-batch is recomputed at a time."""
    layers = shape.n_layers if layers is None else layers
    per_layer = shape.act_bytes_per_token_layer(ACT_BYTES[precision], seq, attention)
    tokens = batch * seq
    if checkpointing:
        inputs = in_flight * tokens * layers * shape.d_model * ACT_BYTES[precision]
        kept = inputs + (tokens * per_layer if layers else 0)
    else:
        kept = in_flight * tokens * layers * per_layer
    if not logits:
        return kept
    # The loss upcasts one chunk of rows at a time (fp32 logits and their exponentials).
    loss_chunk = min(tokens, LOSS_CHUNK_ROWS) * 8 * shape.vocab_size
    return kept + tokens * shape.logits_bytes_per_token(ACT_BYTES[precision]) + loss_chunk


def training_memory(params: float, shape: Shape, batch: int, seq: int, precision: str = "bf16",
                    checkpointing: bool = False, attention: str = "flash") -> dict[str, float]:
    """Bytes on one device holding the whole model (no parallelism)."""
    out = {k: params * v for k, v in state_bytes_per_param(precision).items()}
    out["activations"] = activation_bytes(shape, batch, seq, precision, checkpointing, attention)
    out["total"] = sum(out.values())
    return out


@dataclass
class Layout:
    tp: int
    pp: int
    per_gpu_bytes: float
    budget_bytes: float

    @property
    def gpus(self) -> int:
        return self.tp * self.pp


def tp_candidates(shape: Shape, max_tp: int) -> list[int]:
    out, tp = [], 1
    while tp <= max_tp:
        if shape.n_heads % tp == 0 and (shape.n_kv_heads % tp == 0 or tp % shape.n_kv_heads == 0):
            out.append(tp)
        tp *= 2
    return out


def stage_params(params: float, shape: Shape, pp: int) -> float:
    """Parameters on the largest pipeline stage (the model's own count scaled to its shape)."""
    per_stage_layers = math.ceil(shape.n_layers / pp)
    emb = shape.embedding_params()
    if pp == 1:
        biggest = shape.params()
    else:
        biggest = per_stage_layers * shape.layer_params() + emb + shape.d_model
    return params * biggest / shape.params()


def training_per_gpu(params: float, shape: Shape, tp: int, pp: int, batch: int, seq: int, precision: str,
                     checkpointing: bool, attention: str, dp: int = 1, zero: int = 0) -> float:
    states = state_bytes_per_param(precision)
    p = stage_params(params, shape, pp) / tp
    opt = states["adam_moments"] + states.get("master_weights", 0.0)
    model = p * (states["weights"] + states["gradients"]) + p * opt / (dp if zero >= 1 else 1)
    layers = math.ceil(shape.n_layers / pp)
    in_flight = pp                                     # 1F1B: the first stage holds PP micro-batches
    first = activation_bytes(shape, batch, seq, precision, checkpointing, attention, layers, logits=pp == 1,
                             in_flight=in_flight)
    last = activation_bytes(shape, batch, seq, precision, checkpointing, attention, layers, logits=True)
    return model + max(first, last) / tp


def inference_per_gpu(params: float, shape: Shape, tp: int, pp: int, batch: int, seq: int, dtype: str) -> float:
    weights = stage_params(params, shape, pp) * WEIGHT_BYTES[dtype] / tp
    kv_heads_per_rank = math.ceil(shape.n_kv_heads / tp)
    kv = 2 * math.ceil(shape.n_layers / pp) * kv_heads_per_rank * shape.head_dim * 2 * batch * seq
    return weights + kv


def smallest_layout(per_gpu, shape: Shape, gpu_mem_gb: float, reserve: float, max_tp: int,
                    max_pp: int | None = None) -> Layout | None:
    """The fewest GPUs (TP x PP) whose per-GPU memory fits; ties go to more TP. ``per_gpu(tp, pp)`` in bytes."""
    budget = gpu_mem_gb * GB * (1 - reserve)
    best = None
    for pp in range(1, (max_pp or shape.n_layers) + 1):
        for tp in tp_candidates(shape, max_tp):
            need = per_gpu(tp, pp)
            if need <= budget:
                cand = Layout(tp, pp, need, budget)
                if best is None or (cand.gpus, -cand.tp) < (best.gpus, -best.tp):
                    best = cand
        if best is not None and best.gpus <= pp:      # more stages cannot use fewer GPUs
            break
    return best


# --- report --------------------------------------------------------------------------------------------

@dataclass
class Estimate:
    params: float
    shape: dict
    notes: list
    weights_gb: dict
    kv_cache_bytes_per_token: float
    kv_cache_gb: float
    training_gb: dict
    run: dict
    inference_layout: dict | None
    training_layout: dict | None


def estimate(params: float | None, shape: Shape | None, *, batch: int = 1, seq: int = 2048, gpu_mem: float = 80.0,
             precision: str = "bf16", checkpointing: bool = False, attention: str = "flash",
             infer_dtype: str = "bf16", infer_batch: int = 1, max_tp: int = 8, reserve: float = 0.1,
             dp: int = 1, zero: int = 0, notes: list | None = None) -> Estimate:
    notes = list(notes or [])
    if shape is None:
        if params is None:
            raise ValueError("give --params or --config")
        shape = assume_shape(params)
        notes.append(f"shape assumed from the parameter count ({shape.n_layers} layers, d_model {shape.d_model}, "
                     f"{shape.n_heads} heads, ffn {shape.ffn_hidden}, vocab {shape.vocab_size}); pass --config or "
                     "--layers/--d-model/--heads for exact activation and KV-cache numbers")
    if params is None:
        params = shape.params()
    train = training_memory(params, shape, batch, seq, precision, checkpointing, attention)

    def lay(fn):
        found = smallest_layout(fn, shape, gpu_mem, reserve, max_tp)
        return None if found is None else {"tp": found.tp, "pp": found.pp, "gpus": found.gpus,
                                           "per_gpu_gb": found.per_gpu_bytes / GB}

    inference = lay(lambda tp, pp: inference_per_gpu(params, shape, tp, pp, infer_batch, seq, infer_dtype))
    training = lay(lambda tp, pp: training_per_gpu(params, shape, tp, pp, batch, seq, precision, checkpointing,
                                                   attention, dp, zero))
    return Estimate(
        params=params, shape=asdict(shape), notes=notes,
        weights_gb={k: v / GB for k, v in weight_memory(params).items()},
        kv_cache_bytes_per_token=shape.kv_bytes_per_token(2),
        kv_cache_gb=shape.kv_bytes_per_token(2) * infer_batch * seq / GB,
        training_gb={k: v / GB for k, v in train.items()},
        run={"batch": batch, "seq": seq, "precision": precision, "checkpointing": checkpointing,
             "attention": attention, "gpu_mem_gb": gpu_mem, "reserve": reserve, "max_tp": max_tp,
             "infer_dtype": infer_dtype, "infer_batch": infer_batch, "dp": dp, "zero": zero},
        inference_layout=inference, training_layout=training)


def _gb(x: float) -> str:
    return f"{x:,.1f} GB" if x >= 1 else f"{x * 1000:,.1f} MB"


def render(e: Estimate) -> str:
    s, r = e.shape, e.run
    lines = [f"Model: {e.params / 1e9:,.2f}B parameters"
             f" ({s['n_layers']} layers, d_model {s['d_model']}, {s['n_heads']} heads / {s['n_kv_heads']} kv, "
             f"ffn {s['ffn_hidden']}, vocab {s['vocab_size']}{', assumed' if s['assumed'] else ''})"]
    lines += [f"  note: {n}" for n in e.notes]
    lines += ["", "Weights (GB = 1e9 bytes)", f"  {'dtype':<6} {'bytes/param':>11} {'memory':>14}"]
    for dtype, gb in e.weights_gb.items():
        lines.append(f"  {dtype:<6} {WEIGHT_BYTES[dtype]:>11g} {_gb(gb):>14}")
    kv = e.kv_cache_bytes_per_token
    lines += ["", f"KV cache (bf16): {kv / MIB:.4g} MiB per token (2 x {s['n_layers']} layers x {s['n_kv_heads']} kv "
                  f"heads x {s['d_model'] // s['n_heads']} x 2 bytes); {_gb(e.kv_cache_gb)} for "
                  f"{r['infer_batch']} x {r['seq']} tokens"]
    ckpt = "full activation checkpointing" if r["checkpointing"] else "no activation checkpointing"
    lines += ["", f"Training on one device ({r['precision']}, Adam), micro-batch {r['batch']} x {r['seq']} tokens, "
                  f"{ckpt}, {r['attention']} attention"]
    labels = {"weights": f"weights ({r['precision']})", "gradients": f"gradients ({r['precision']})",
              "adam_moments": "Adam moments m, v (fp32)", "master_weights": "master weights (fp32)",
              "activations": "activations", "total": "total"}
    for k, gb in e.training_gb.items():
        lines.append(f"  {labels[k]:<26} {_gb(gb):>14}")
    lines += ["", f"Smallest layout on {r['gpu_mem_gb']:g} GB GPUs ({100 * (1 - r['reserve']):.0f}% usable, "
                  f"TP up to {r['max_tp']}):"]
    for name, lay, what in (("inference", e.inference_layout, f"{r['infer_dtype']} weights + KV cache for "
                                                              f"{r['infer_batch']} x {r['seq']} tokens"),
                            ("training", e.training_layout, "one data-parallel replica" +
                             (f", ZeRO-1 over {r['dp']}" if r["zero"] and r["dp"] > 1 else ""))):
        if lay is None:
            lines.append(f"  {name:<10} does not fit at TP <= {r['max_tp']} and PP <= {s['n_layers']}")
        else:
            gpus = f"{lay['gpus']} GPU{'s' if lay['gpus'] > 1 else ''}"
            lines.append(f"  {name:<10} TP {lay['tp']} x PP {lay['pp']} = {gpus}, "
                         f"{_gb(lay['per_gpu_gb'])} per GPU ({what})")
    return "\n".join(lines)


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m train.estimate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_argument_group("model")
    src.add_argument("--params", type=float, help="parameter count, e.g. 535e9")
    src.add_argument("--config", help="trainer YAML (train/configs/*.yaml), a flat YAML/JSON dict or an HF config.json")
    for flag, help_ in (("--layers", "n_layers"), ("--d-model", "d_model"), ("--heads", "attention heads"),
                        ("--kv-heads", "key/value heads (GQA)"), ("--ffn", "SwiGLU hidden size"),
                        ("--vocab", "vocabulary size")):
        src.add_argument(flag, type=int, help=help_)
    run = p.add_argument_group("run")
    run.add_argument("--batch", type=int, help="micro-batch per GPU (default: the config's, else 1)")
    run.add_argument("--seq", type=int, help="sequence length (default: the config's, else 2048)")
    run.add_argument("--gpu-mem", type=float, default=80.0, help="GB per GPU (default 80)")
    run.add_argument("--precision", choices=("bf16", "fp32"), help="training precision (default: config's, else bf16)")
    run.add_argument("--checkpointing", action=argparse.BooleanOptionalAction, default=None,
                     help="full activation checkpointing (default: the config's, else off)")
    run.add_argument("--attention", choices=("flash", "eager"), default="flash")
    run.add_argument("--infer-dtype", choices=tuple(WEIGHT_BYTES), default="bf16")
    run.add_argument("--infer-batch", type=int, default=1, help="sequences in the KV cache when serving")
    run.add_argument("--max-tp", type=int, default=8, help="largest tensor-parallel size (GPUs per node)")
    run.add_argument("--reserve", type=float, default=0.1, help="share of GPU memory kept free (default 0.1)")
    run.add_argument("--dp", type=int, default=1, help="data-parallel replicas (for --zero 1)")
    run.add_argument("--zero", type=int, choices=(0, 1), default=0, help="1: ZeRO-1 shards optimizer states over --dp")
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    a = p.parse_args(argv)
    if a.params is None and a.config is None and not (a.layers and a.d_model and a.heads):
        p.error("give --params, --config, or --layers/--d-model/--heads")
    for name in ("params", "batch", "seq", "gpu_mem", "infer_batch", "max_tp", "dp"):
        v = getattr(a, name)
        if v is not None and v <= 0:
            p.error(f"--{name.replace('_', '-')} must be positive")
    if not 0 <= a.reserve < 1:
        p.error("--reserve must be in [0, 1)")
    return a


def main(argv=None) -> int:
    a = parse_args(argv)
    flags = {"n_layers": a.layers, "d_model": a.d_model, "n_heads": a.heads, "n_kv_heads": a.kv_heads,
             "ffn_hidden": a.ffn, "vocab_size": a.vocab}
    overrides = {k: v for k, v in flags.items() if v}
    settings: dict = {}
    shape, notes = None, []
    try:
        if a.config or {"n_layers", "d_model", "n_heads"} <= set(overrides):
            flat = flatten(load_config(a.config)) if a.config else {}
            for name, value in overrides.items():          # flags refine the config
                for alias in ALIASES[name]:
                    flat.pop(alias, None)
                flat[name] = value
            shape, settings = from_config(flat)
            if not settings["vocab_given"]:
                notes.append(f"vocab_size not in the config: {DEFAULT_VOCAB} assumed (--vocab to set it)")
            if a.params:
                notes.append(f"--params {a.params:g} used for memory; the shape has {shape.params():,} parameters")
        elif overrides and set(overrides) != {"vocab_size"}:
            raise ValueError("--layers, --d-model and --heads go together (or come with --config)")
        else:
            shape = assume_shape(a.params, a.vocab or DEFAULT_VOCAB)
            notes.append(f"shape assumed from the parameter count ({shape.n_layers} layers, d_model "
                         f"{shape.d_model}, {shape.n_heads} heads, ffn {shape.ffn_hidden}, vocab {shape.vocab_size}); "
                         "pass --config or --layers/--d-model/--heads for exact activation and KV-cache numbers")
    except (OSError, ValueError) as e:
        print(f"estimate: {e}", file=sys.stderr)
        return 2
    e = estimate(a.params, shape,
                 batch=a.batch or int(settings.get("micro_batch") or 1),
                 seq=a.seq or int(settings.get("seq_len") or 2048),
                 gpu_mem=a.gpu_mem,
                 precision=a.precision or (settings.get("precision") or "bf16"),
                 checkpointing=a.checkpointing if a.checkpointing is not None else bool(settings.get("checkpointing")),
                 attention=a.attention, infer_dtype=a.infer_dtype, infer_batch=a.infer_batch, max_tp=a.max_tp,
                 reserve=a.reserve, dp=a.dp, zero=a.zero, notes=notes)
    print(json.dumps(asdict(e), indent=2) if a.json else render(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
