"""A run's checkpoint as one state dict, whatever layout trained it, and its Hugging Face form.

How a checkpoint is laid out (train/checkpoint/store.py, DeepSpeed's ``PipelineModule``): ``checkpoints/step_N/``
holds one file per pipeline layer and tensor-parallel rank, ``layer_XX-model_YY-model_states.pt``. XX is the
*global* layer index of ``train.engine.pipeline_stages.layer_specs`` (0 the embedding, 1..n_layers the blocks,
n_layers + 1 the head), so pipeline stages need no mapping of their own: the stage that held a layer does not
appear in the name. YY is the tensor-parallel rank; data-parallel rank 0 writes every layer, the other data
replicas hold the same weights and write none. ZeRO optimizer partitions (``zero_pp_rank_*``) and
``mp_rank_*_model_states.pt`` (engine state) are not needed: the layer files hold the module weights in the
dtype the module trained in.

Merging tensor-parallel slices: every weight records how it is split (``partition_dim``, set by the layers of
train/parallel/tensor_parallel.py), and those dims are read from the model itself, built on the meta device,
rather than from a table of names: column-parallel weights (q/k/v, gate/up, lm_head) and the vocabulary-parallel
embedding are concatenated along dim 0 (rank r holds output rows [r*n/tp, (r+1)*n/tp): for q/k/v those are
whole heads, n_heads/tp query heads and n_kv_heads/tp key/value heads per rank, so grouped-query attention
needs nothing special; gate and up are separate weights, not a fused one), row-parallel weights (o_proj,
down_proj) along dim 1, and replicated weights (the norms) are taken from rank 0 after checking the ranks agree.

The Hugging Face form renames (``embed.embed_tokens`` -> ``model.embed_tokens``, ``layers.N`` ->
``model.layers.N``, ``head.norm`` -> ``model.norm``, ``head.lm_head`` -> ``lm_head``) and drops the padding
rows of the embedding and head beyond ``vocab_size`` (the trainer pads the vocabulary to a multiple for an
even split and masks those logits to -inf, so without them the logits over the real vocabulary are the same).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import torch

from train.checkpoint.store import (COMPLETE, VOCAB_ROWS, checkpoints_dir, complete_checkpoints,  # noqa: F401
                              layer_files, layer_names_for, meta_model, partition_dims, verify)
from train.checkpoint.hf_files import safetensors_files
from train.model.transformer import Llama, ModelConfig
from train.plan import Plan, PlanError, read_plan


class ExportError(RuntimeError):
    """The run or checkpoint cannot be exported as asked; the message names the file and the fix."""


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass
class RunCheckpoint:
    run: Path
    step: int
    path: Path
    layout: dict            # {"tp", "pp", "dp"}
    info: dict              # complete.json
    plan: Plan              # the run's config.json

    @property
    def model_cfg(self) -> ModelConfig:
        return self.plan.model


def load_plan(run: Path) -> Plan:
    """The run's plan (config.json), as an ExportError when it is missing or incomplete."""
    try:
        return read_plan(run)
    except PlanError as e:
        raise ExportError(str(e)) from None


def find_checkpoint(run: str | Path, step: int | None = None) -> RunCheckpoint:
    """The newest complete checkpoint of ``run`` (or the one of ``step``)."""
    run = Path(run).resolve()
    plan = load_plan(run)
    done = complete_checkpoints(run)
    steps = [s for s, _ in done]
    if step is None:
        if not done:
            raise ExportError(f"{run}: no complete checkpoint ({checkpoints_dir(run)}/step_N/{COMPLETE}); "
                              "train first, or wait until the run's first save has finished")
        step, path = done[-1]
    else:
        match = [d for s, d in done if s == step]
        if not match:
            torn = checkpoints_dir(run) / f"step_{step:08d}"
            why = " (it has no complete.json: the save did not finish)" if torn.is_dir() else ""
            raise ExportError(f"{run}: no complete checkpoint for step {step}{why}; complete steps: "
                              f"{', '.join(map(str, steps)) or 'none'}")
        path = match[0]
    problem = verify(path)            # every file against the size and sha256 its manifest recorded
    if problem:
        whole = [s for s, d in done if s != step and verify(d) is None]
        raise ExportError(f"{run}: {problem}; refused" + (f" (whole checkpoints: steps {', '.join(map(str, whole))}; "
                                                          "pass STEP= one of them)" if whole else ""))
    info = json.loads((path / COMPLETE).read_text())
    layout = info.get("layout") or plan.section("parallel")
    layout = {k: int(layout.get(k, 1)) for k in ("tp", "pp", "dp")}
    return RunCheckpoint(run=run, step=step, path=path, layout=layout, info=info, plan=plan)


def merge_checkpoint(ckpt: RunCheckpoint) -> dict[str, torch.Tensor]:
    """The ``train.model.transformer.Llama`` state dict of a checkpoint: pipeline layers renamed, tensor slices merged,
    every shape checked against the model and every value checked finite."""
    cfg, tp = ckpt.model_cfg, ckpt.layout["tp"]
    names = layer_names_for(cfg.n_layers)
    files = layer_files(ckpt.path)
    extra = sorted(set(files) - set(range(len(names))))
    if extra:
        raise ExportError(f"{ckpt.path}: layer files {extra} beyond the model's {len(names)} pipeline layers "
                          f"(embedding, {cfg.n_layers} blocks, head): not a checkpoint of this run's model")
    reference = meta_model(cfg)
    shapes = {k: tuple(v.shape) for k, v in reference.state_dict().items()}
    dims = partition_dims(reference)
    out: dict[str, torch.Tensor] = {}
    for idx, prefix in enumerate(names):
        ranks = files.get(idx, {})
        if sorted(ranks) != list(range(tp)):
            raise ExportError(f"{ckpt.path}: pipeline layer {idx} ({prefix}) has tensor-parallel slices "
                              f"{sorted(ranks) or 'none'}, the layout tp={tp} needs 0..{tp - 1}; the checkpoint "
                              "is incomplete or was not written by this run")
        parts = [torch.load(ranks[r], map_location="cpu", weights_only=True) for r in range(tp)]
        want = {k[len(prefix) + 1:] for k in shapes if k.startswith(prefix + ".")}
        for r, part in enumerate(parts):
            if set(part) != want:
                raise ExportError(f"{ranks[r]}: tensors {sorted(set(part) ^ want)} differ from the model's "
                                  f"{prefix} ({sorted(want)})")
        for key in sorted(want):
            full = f"{prefix}.{key}"
            slices = [p[key] for p in parts]
            dim = dims.get(full)
            if dim is None:
                merged = slices[0]
                for r, other in enumerate(slices[1:], 1):
                    if other.shape != merged.shape or not torch.allclose(other.float(), merged.float(),
                                                                         rtol=0, atol=1e-6):
                        raise ExportError(f"{ranks[r]}: replicated tensor {full} differs from tensor-parallel "
                                          "rank 0's; the ranks diverged")
            else:
                merged = torch.cat(slices, dim)
            if tuple(merged.shape) != shapes[full]:
                raise ExportError(f"{ckpt.path}: {full} merges to shape {tuple(merged.shape)}, the model's is "
                                  f"{shapes[full]} (config.json and the checkpoint disagree)")
            if not torch.isfinite(merged).all():
                raise ExportError(f"{ckpt.path}: {full} has non-finite values: the run diverged by step "
                                  f"{ckpt.step}; export an earlier complete step with --step")
            out[full] = merged
    return out


def hf_name(name: str) -> str:
    """``train.model.transformer.Llama`` parameter name -> ``LlamaForCausalLM``'s (and ``Qwen3ForCausalLM``'s, whose
    ``self_attn.q_norm`` / ``k_norm`` are ours under the same names)."""
    if name == "embed.embed_tokens.weight":
        return "model.embed_tokens.weight"
    if name == "head.norm.weight":
        return "model.norm.weight"
    if name == "head.lm_head.weight":
        return "lm_head.weight"
    if name.startswith("layers."):
        return "model." + name
    raise KeyError(f"no Hugging Face name for {name}")


def to_hf(sd: dict[str, torch.Tensor], cfg: ModelConfig, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """HF names, the padding vocabulary rows dropped, cast to ``dtype`` (no copy where nothing changes)."""
    out = {}
    for name, t in sd.items():
        t = t.to(dtype)
        if name in VOCAB_ROWS and t.shape[0] != cfg.vocab_size:
            t = t[:cfg.vocab_size].clone()
        out[hf_name(name)] = t.contiguous()
    return out


def reference_state_dict(sd: dict[str, torch.Tensor], dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """The training model's weights as exported (rounded to the export dtype), in fp32 for the check."""
    return {k: v.to(dtype).float() for k, v in sd.items()}


def load_reference_model(cfg: ModelConfig, sd: dict[str, torch.Tensor]) -> Llama:
    """``train.model.transformer.Llama`` (one process, fp32) holding ``sd``."""
    model = meta_model(cfg)
    model.load_state_dict(sd, strict=True, assign=True)
    return model.eval()


def hf_architecture(cfg: ModelConfig) -> str:
    """The transformers class that computes this model: LlamaForCausalLM, or with QK-norm Qwen3ForCausalLM, whose
    q_norm / k_norm are an RMSNorm over each head's head_dim (one weight shared by the heads) applied before
    the rotary embedding, as here (OLMo 2's q_norm normalises all heads together: not this model)."""
    return "Qwen3ForCausalLM" if cfg.qk_norm else "LlamaForCausalLM"


def hf_config(cfg: ModelConfig, dtype: str, *, bos_id: int | None, eos_id: int | None, pad_id: int | None):
    from transformers import LlamaConfig, Qwen3Config

    common = dict(
        vocab_size=cfg.vocab_size, hidden_size=cfg.d_model, intermediate_size=cfg.ffn_hidden,
        num_hidden_layers=cfg.n_layers, num_attention_heads=cfg.n_heads, num_key_value_heads=cfg.n_kv_heads,
        head_dim=cfg.head_dim, max_position_embeddings=cfg.max_seq_len, rms_norm_eps=cfg.norm_eps,
        rope_theta=cfg.rope_theta, hidden_act="silu", tie_word_embeddings=False, attention_bias=False,
        initializer_range=cfg.init_std, bos_token_id=bos_id, eos_token_id=eos_id,
        pad_token_id=pad_id, architectures=[hf_architecture(cfg)], dtype=dtype)
    if cfg.qk_norm:
        return Qwen3Config(**common, use_sliding_window=False)
    return LlamaConfig(**common, mlp_bias=False)


# -- safetensors, sharded when big ---------------------------------------------------------------------

_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMG]i?B|B)?\s*", str(text), re.IGNORECASE)
    if not m:
        raise ValueError(f"size {text!r}: expected a number with KB/MB/GB (or KiB/MiB/GiB), e.g. 5GB")
    return int(float(m.group(1)) * _UNITS[(m.group(2) or "").upper()])


def write_safetensors(tensors: dict[str, torch.Tensor], out_dir: Path, max_shard_bytes: int) -> list[str]:
    """``model.safetensors``, or ``model-0000k-of-0000n.safetensors`` + ``model.safetensors.index.json`` when
    the weights exceed ``max_shard_bytes`` (tensors in name order, a shard closed before it would overflow)."""
    from safetensors.torch import save_file

    sizes = {k: t.numel() * t.element_size() for k, t in tensors.items()}
    total = sum(sizes.values())
    if total <= max_shard_bytes:
        save_file(tensors, str(out_dir / "model.safetensors"), metadata={"format": "pt"})
        return ["model.safetensors"]
    shards: list[list[str]] = [[]]
    used = 0
    for name in tensors:
        if shards[-1] and used + sizes[name] > max_shard_bytes:
            shards.append([])
            used = 0
        shards[-1].append(name)
        used += sizes[name]
    files, weight_map = [], {}
    for i, names in enumerate(shards, 1):
        fname = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        save_file({k: tensors[k] for k in names}, str(out_dir / fname), metadata={"format": "pt"})
        files.append(fname)
        weight_map.update({k: fname for k in names})
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (out_dir / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")
    return files + ["model.safetensors.index.json"]


def weight_files(export_dir: Path) -> list[Path]:
    try:
        return safetensors_files(export_dir)
    except FileNotFoundError as e:
        raise ExportError(str(e)) from None


def iter_safetensors(export_dir: Path):
    """(name, tensor) of an export's weight files, one tensor in memory at a time."""
    from safetensors import safe_open

    for f in weight_files(export_dir):
        with safe_open(str(f), framework="pt") as g:
            for name in g.keys():
                yield name, g.get_tensor(name)


def read_safetensors(export_dir: Path) -> dict[str, torch.Tensor]:
    return dict(iter_safetensors(export_dir))
