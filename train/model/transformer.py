"""A Llama-style decoder: RMSNorm, rotary embeddings, SwiGLU, untied input and output embeddings.

Readable in one sitting, in the spirit of nanoGPT's ``model.py``. Parameter names follow Hugging Face's
``LlamaForCausalLM`` (``embed_tokens``, ``layers.N.self_attn.q_proj``, ``mlp.gate_proj``, ``norm``,
``lm_head``; rotary embeddings in the same rotate-half layout) so export is a renaming, not a
re-derivation.

The model is a sequence of three kinds of layers, ``Embedding``, ``Block`` x n_layers and ``Head``, which is
exactly what the pipeline stages are cut from (``train/engine/pipeline_stages.py``). Every linear layer is one of
the tensor-parallel layers of ``train/parallel/tensor_parallel.py``; with no tensor-parallel group they are
plain linear layers, so ``Llama(cfg)`` is the ordinary single-process model.

Packed rows (``document_masking``, ``document_positions``): a row holds several documents, each ending with the
end-of-document id. ``Embedding`` then returns ``(hidden, document, position)``: per token the index of its
document in the row and its position in that document; each ``Block`` passes the triple on (the pipeline
engine sends the integer tensors between stages beside the hidden states) and ``Head`` takes the hidden
states. Attention keeps a token to the earlier tokens of its own document (a block-diagonal causal mask, or on
a GPU flex attention's block mask, which never materialises T x T: ``DOCUMENT_KERNEL``), and rotary embeddings
use the positions within the document.

Initialization is deterministic per parameter and independent of the parallel layout: every weight is
drawn in full from a generator seeded by (seed, parameter name) and each tensor-parallel rank keeps its
slice. One process and eight start from the same numbers.
"""
from __future__ import annotations

import hashlib
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from train.model.config import ModelConfig  # noqa: F401  (re-exported)
from train.parallel.cross_entropy import vocab_parallel_cross_entropy
from train.parallel.tensor_parallel import (ColumnParallelLinear, RowParallelLinear, VocabParallelEmbedding,
                                            copy_to_tp, shard, tp_rank, tp_size)


def _param_seed(seed: int, name: str) -> int:
    digest = hashlib.sha256(f"{seed}/{name}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def init_parameters(module: nn.Module, prefix: str, cfg: ModelConfig) -> None:
    """Draw every weight in full from its own seeded generator, keep this rank's slice.

    Linear and embedding weights ~ N(0, init_std); the projections that write into the residual stream
    (``o_proj``, ``down_proj``) use init_std / sqrt(2 n_layers) as in GPT-2. Norm weights are 1.
    """
    for name, p in module.named_parameters():
        full_name = f"{prefix}.{name}"
        with torch.no_grad():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
                continue
            std = cfg.init_std
            if name.endswith(("o_proj.weight", "down_proj.weight")):
                std = cfg.init_std / math.sqrt(2 * cfg.n_layers)
            dim = getattr(p, "partition_dim", None)
            group = getattr(_owner(module, name), "group", None)
            full_shape = list(p.shape)
            if dim is not None:
                full_shape[dim] *= tp_size(group)
            g = torch.Generator().manual_seed(_param_seed(cfg.seed, full_name))
            full = torch.empty(full_shape, dtype=torch.float32).normal_(0.0, std, generator=g)
            p.copy_(shard(full, dim, group))


def _owner(module: nn.Module, param_name: str) -> nn.Module:
    for part in param_name.split(".")[:-1]:
        module = getattr(module, part)
    return module


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


_ROPE_CACHE: dict = {}


def rope_cos_sin(seq_len: int, head_dim: int, theta: float, device, dtype):
    """cos, sin of shape [seq_len, head_dim] in Hugging Face's rotate-half layout (frequencies repeated)."""
    key = (seq_len, head_dim, theta, str(device), dtype)
    if key not in _ROPE_CACHE:
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
        freqs = torch.outer(torch.arange(seq_len, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        _ROPE_CACHE[key] = (emb.cos().to(device=device, dtype=dtype), emb.sin().to(device=device, dtype=dtype))
    return _ROPE_CACHE[key]


def document_layout(ids: torch.Tensor, eos_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per token of ids [B, T]: the index of its document in the row and its position within that document. A
    document starts at the row's first token and after every eos_id (the eos belongs to the document it ends)."""
    start = torch.ones_like(ids, dtype=torch.bool)
    start[:, 1:] = ids[:, :-1] == eos_id
    idx = torch.arange(ids.shape[1], device=ids.device).expand_as(ids)
    document = start.long().cumsum(1) - 1
    position = idx - torch.cummax(torch.where(start, idx, torch.zeros_like(idx)), dim=1).values
    return document, position


# How attention keeps tokens to their documents, chosen once per process (train/model/kernels.py):
# "sdpa_mask": SDPA with a boolean block-diagonal causal mask [B, 1, T, T] (CPU, and any device);
# "flex": flex attention with a block mask built from the document ids (GPU; no T x T tensor).
DOCUMENT_KERNEL = "sdpa_mask"


def document_attention(q, k, v, document: torch.Tensor, gqa: bool) -> torch.Tensor:
    """Causal attention within documents: q [B, H, T, D], k and v [B, H_kv, T, D], document [B, T]."""
    if DOCUMENT_KERNEL == "flex":
        from torch.nn.attention.flex_attention import flex_attention

        return flex_attention(q, k, v, block_mask=_flex_block_mask(document), enable_gqa=gqa)
    T = q.shape[2]
    causal = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    mask = (document[:, None, :, None] == document[:, None, None, :]) & causal
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=gqa)


_BLOCK_MASK: list = [None, None]     # (key of the document tensor, its block mask): built once per stage forward


@torch.compiler.disable
def _flex_block_mask(document: torch.Tensor):
    from torch.nn.attention.flex_attention import create_block_mask

    key = (document.data_ptr(), document._version, tuple(document.shape))
    if _BLOCK_MASK[0] != key:
        B, T = document.shape

        def same_document_causal(b, h, q_idx, kv_idx):
            return (document[b, q_idx] == document[b, kv_idx]) & (q_idx >= kv_idx)
        _BLOCK_MASK[:] = [key, create_block_mask(same_document_causal, B, None, T, T, device=document.device)]
    return _BLOCK_MASK[1]


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return x * cos + rotate_half(x) * sin


class Attention(nn.Module):
    """Causal self-attention; the heads (and key/value heads) are split across the tensor-parallel group."""

    def __init__(self, cfg: ModelConfig, group=None):
        super().__init__()
        tp = tp_size(group)
        self.group, self.cfg = group, cfg
        self.n_heads, self.n_kv_heads, self.head_dim = cfg.n_heads // tp, cfg.n_kv_heads // tp, cfg.head_dim
        self.q_proj = ColumnParallelLinear(cfg.d_model, cfg.n_heads * cfg.head_dim, group)
        self.k_proj = ColumnParallelLinear(cfg.d_model, cfg.n_kv_heads * cfg.head_dim, group)
        self.v_proj = ColumnParallelLinear(cfg.d_model, cfg.n_kv_heads * cfg.head_dim, group)
        self.o_proj = RowParallelLinear(cfg.n_heads * cfg.head_dim, cfg.d_model, group)
        if cfg.qk_norm:                      # one weight over head_dim, shared by the heads (replicated across ranks)
            self.q_norm = RMSNorm(cfg.head_dim, cfg.norm_eps)
            self.k_norm = RMSNorm(cfg.head_dim, cfg.norm_eps)

    def forward(self, x: torch.Tensor, document: torch.Tensor | None = None,
                position: torch.Tensor | None = None) -> torch.Tensor:
        B, T, _ = x.shape
        x = copy_to_tp(x, self.group)
        q = self.q_proj(x).view(B, T, self.n_heads, self.head_dim)
        k = self.k_proj(x).view(B, T, self.n_kv_heads, self.head_dim)
        v = self.v_proj(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        if self.cfg.qk_norm:                 # per head, before the rotation (Qwen3)
            q, k = self._head_norm(self.q_norm, q), self._head_norm(self.k_norm, k)
        cos, sin = rope_cos_sin(T, self.head_dim, self.cfg.rope_theta, x.device, q.dtype)
        if position is not None and self.cfg.restart_positions:
            cos, sin = cos[position].unsqueeze(2), sin[position].unsqueeze(2)     # [B, T, 1, dim]
        else:
            cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        # Rotated while [B, T, heads, dim] is still contiguous (cos, sin broadcast over heads), then transposed.
        q, k = apply_rope(q, cos, sin).transpose(1, 2), apply_rope(k, cos, sin).transpose(1, 2)
        gqa = self.n_kv_heads != self.n_heads
        if document is not None and self.cfg.document_masking:
            y = document_attention(q, k, v, document, gqa)
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, self.n_heads * self.head_dim))


    def _head_norm(self, norm: RMSNorm, x: torch.Tensor) -> torch.Tensor:
        """RMSNorm over each head's dim. The weight is shared by all heads but each tensor-parallel rank holds
        only some heads, so its gradient is summed over the group in backward (copy_to_tp): every rank then
        holds the full gradient of the replicated weight."""
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + norm.eps)
        return copy_to_tp(norm.weight, self.group) * x.to(dtype)


class MLP(nn.Module):
    """SwiGLU: down(silu(gate(x)) * up(x)); the hidden units are split across the group."""

    def __init__(self, cfg: ModelConfig, group=None):
        super().__init__()
        self.group = group
        self.gate_proj = ColumnParallelLinear(cfg.d_model, cfg.ffn_hidden, group)
        self.up_proj = ColumnParallelLinear(cfg.d_model, cfg.ffn_hidden, group)
        self.down_proj = RowParallelLinear(cfg.ffn_hidden, cfg.d_model, group)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = copy_to_tp(x, self.group)
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Embedding(nn.Module):
    """Token ids [B, T] -> hidden states [B, T, d]. The first pipeline layer."""

    def __init__(self, cfg: ModelConfig, group=None):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = VocabParallelEmbedding(cfg.padded_vocab, cfg.d_model, group)
        init_parameters(self, "embed", cfg)

    def forward(self, ids: torch.Tensor):
        x = self.embed_tokens(ids)
        if not self.cfg.packs_documents:
            return x
        return (x, *document_layout(ids, self.cfg.eos_id))


class Block(nn.Module):
    """Pre-norm transformer block; the unit of pipeline partitioning and activation checkpointing."""

    def __init__(self, cfg: ModelConfig, layer_idx: int, group=None):
        super().__init__()
        self.layer_idx = layer_idx
        self.input_layernorm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.self_attn = Attention(cfg, group)
        self.post_attention_layernorm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.mlp = MLP(cfg, group)
        init_parameters(self, f"layers.{layer_idx}", cfg)

    def forward(self, x):
        if isinstance(x, tuple):             # packed documents: (hidden, document, position) in and out
            h, document, position = x
            h = h + self.self_attn(self.input_layernorm(h), document, position)
            return h + self.mlp(self.post_attention_layernorm(h)), document, position
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class Head(nn.Module):
    """Final norm and the (untied) output projection; returns this rank's vocabulary slice of the logits,
    with the padding rows beyond vocab_size at -inf so they take no probability."""

    def __init__(self, cfg: ModelConfig, group=None):
        super().__init__()
        self.group = group
        self.norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.lm_head = ColumnParallelLinear(cfg.d_model, cfg.padded_vocab, group)
        per = cfg.padded_vocab // tp_size(group)
        self.vocab_start = tp_rank(group) * per
        # Local columns [pad_from, per) are padding (ids >= vocab_size).
        self.pad_from = min(per, max(0, cfg.vocab_size - self.vocab_start))
        init_parameters(self, "head", cfg)

    def forward(self, x) -> torch.Tensor:
        if isinstance(x, tuple):
            x = x[0]
        logits = self.lm_head(copy_to_tp(self.norm(x), self.group))
        if self.pad_from < logits.shape[-1]:
            logits[..., self.pad_from:] = float("-inf")
        return logits


class LossFn:
    """Cross entropy (+ optional z-loss) over vocabulary-parallel logits; keeps the last parts for logging."""

    def __init__(self, group=None, vocab_start: int = 0, z_loss: float = 0.0):
        self.group, self.vocab_start, self.z_loss = group, vocab_start, z_loss
        self.last_ce = self.last_z = None

    def __call__(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        loss, self.last_ce, self.last_z = vocab_parallel_cross_entropy(
            logits, labels, self.group, self.vocab_start, self.z_loss)
        return loss


class Llama(nn.Module):
    """The whole model in one process (or one tensor-parallel rank): embed -> blocks -> head."""

    def __init__(self, cfg: ModelConfig, group=None, z_loss: float = 0.0):
        super().__init__()
        self.cfg = cfg
        self.embed = Embedding(cfg, group)
        self.layers = nn.ModuleList(Block(cfg, i, group) for i in range(cfg.n_layers))
        self.head = Head(cfg, group)
        self.loss_fn = LossFn(group, self.head.vocab_start, z_loss)

    def forward(self, ids: torch.Tensor, targets: torch.Tensor | None = None):
        x = self.embed(ids)
        for block in self.layers:
            x = block(x)
        logits = self.head(x)
        loss = None if targets is None else self.loss_fn(logits, targets)
        return logits, loss
