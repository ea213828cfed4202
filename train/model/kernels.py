"""Which kernels the model runs with: regional ``torch.compile`` of the blocks and SDPA's attention backend.

Regional compilation: each transformer ``Block`` is compiled, not the whole model. Every block runs the same
code, so dynamo compiles it once and reuses the graph for the others (parameters are graph inputs), compile
time stays that of one block, and compiled blocks sit inside DeepSpeed's engines, pipeline stages, tensor
parallel layers and activation checkpointing unchanged. Inductor fuses what eager runs as separate kernels:
RMSNorm, rotary embeddings, SwiGLU's activation and product, the residual adds.

Attention: in bf16 on a GPU only SDPA's flash backend is left enabled, so a shape flash cannot run fails
loudly instead of falling back to a slower kernel; the backend is written in run.json.

Document masking (``model.document_masking``): on a GPU, flex attention with a block mask built from each
row's document ids (no T x T tensor; compiled by torch.compile); elsewhere SDPA with a boolean block-diagonal
causal mask. Chosen once at start-up (``document_kernel``), written in run.json and said on the console.
"""
from __future__ import annotations

import torch


def compile_blocks(module: torch.nn.Module) -> int:
    """Compile every ``Block`` of ``module`` in place; returns how many."""
    from train.model.transformer import Block

    blocks = [m for m in module.modules() if isinstance(m, Block)]
    for block in blocks:
        block.compile()
    return len(blocks)


def compile_seconds() -> float:
    """Wall time torch.compile has spent in this process so far (dynamo, AOT autograd, inductor)."""
    from torch._dynamo.utils import calculate_time_spent

    return float(calculate_time_spent().get("total_wall_time", 0.0))


def attention_backend(precision: str) -> str:
    """Fix SDPA's backend for this process and name it."""
    if not torch.cuda.is_available():
        return "cpu"            # SDPA's CPU kernel (flash-style tiling, any dtype)
    if precision == "bf16":
        torch.backends.cuda.enable_math_sdp(False)
        torch.backends.cuda.enable_mem_efficient_sdp(False)
        torch.backends.cuda.enable_cudnn_sdp(False)
        torch.backends.cuda.enable_flash_sdp(True)
        return "flash"
    return "default"            # fp32: flash has no fp32 kernel; SDPA picks memory-efficient or math


def document_kernel(masking: bool) -> str | None:
    """Fix how attention keeps tokens to their documents in this process (train/model/transformer.py's
    DOCUMENT_KERNEL) and name it; None when document masking is off."""
    from train.model import transformer

    if not masking:
        return None
    if torch.cuda.is_available():
        try:
            from torch.nn.attention.flex_attention import create_block_mask, flex_attention  # noqa: F401
        except ImportError:
            pass
        else:
            transformer.DOCUMENT_KERNEL = "flex"
            return "flex attention, block mask from the document ids (no T x T mask)"
    transformer.DOCUMENT_KERNEL = "sdpa_mask"
    return "SDPA with a block-diagonal causal mask"
