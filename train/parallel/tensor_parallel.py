"""Megatron-style tensor parallelism over a ``torch.distributed`` process group.

A tensor-parallel group of ``tp`` ranks holds one slice of every large matrix:

- ``ColumnParallelLinear``: the weight is split by output rows, each rank computes its slice of the output
  (its attention heads, its share of the MLP's hidden units). The input must be the same on every rank
  and must pass once through ``copy_to_tp`` (identity forward, all-reduce of the gradient backward).
- ``RowParallelLinear``: the weight is split by input columns; each rank multiplies its slice of the
  hidden state and ``reduce_from_tp`` sums the partial outputs (all-reduce forward, identity backward).
- ``VocabParallelEmbedding``: each rank holds a contiguous range of the vocabulary rows; ids outside the
  range give zeros and the all-reduce assembles the embedding.
- the loss over logits that stay split by vocabulary range is in ``cross_entropy.py``.

With ``group=None`` (one rank) every layer is a plain PyTorch layer and no communication happens, so the
single-process model and the sharded one are the same code. Sharded weights carry
``param.model_parallel = True``: DeepSpeed's gradient clipping counts them on every rank and the
replicated ones (norm weights) once.
"""
from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def tp_size(group) -> int:
    return 1 if group is None else dist.get_world_size(group)


def tp_rank(group) -> int:
    return 0 if group is None else dist.get_rank(group)


class _CopyToTP(torch.autograd.Function):
    """Identity forward; the gradient is summed over the group backward (every rank's slice used it)."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous().clone()
        dist.all_reduce(grad, group=ctx.group)
        return grad, None


class _ReduceFromTP(torch.autograd.Function):
    """Sum of the partial results forward; the gradient passes unchanged (the sum is replicated)."""

    @staticmethod
    def forward(ctx, x, group):
        x = x.contiguous().clone()
        dist.all_reduce(x, group=group)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def copy_to_tp(x: torch.Tensor, group) -> torch.Tensor:
    return x if tp_size(group) == 1 else _CopyToTP.apply(x, group)


def reduce_from_tp(x: torch.Tensor, group) -> torch.Tensor:
    return x if tp_size(group) == 1 else _ReduceFromTP.apply(x, group)


def _mark(param: nn.Parameter, group, dim: int | None) -> nn.Parameter:
    """Record how a parameter is split: ``partition_dim`` for checkpoint merging, ``model_parallel``
    for DeepSpeed's gradient norm."""
    param.partition_dim = dim
    if dim is not None and tp_size(group) > 1:
        param.model_parallel = True
    return param


class ColumnParallelLinear(nn.Module):
    """y[..., out/tp] = x @ W[out/tp, in]^T, no bias. Call ``copy_to_tp`` on the input first."""

    def __init__(self, in_features: int, out_features: int, group=None):
        super().__init__()
        world = tp_size(group)
        assert out_features % world == 0, (out_features, world)
        self.in_features, self.out_features, self.group = in_features, out_features, group
        self.weight = _mark(nn.Parameter(torch.empty(out_features // world, in_features)), group, 0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight)

    def extra_repr(self) -> str:
        return f"in={self.in_features}, out={self.out_features}, local_out={self.weight.shape[0]}"


class RowParallelLinear(nn.Module):
    """y[..., out] = sum over ranks of x[..., in/tp] @ W[out, in/tp]^T, no bias."""

    def __init__(self, in_features: int, out_features: int, group=None):
        super().__init__()
        world = tp_size(group)
        assert in_features % world == 0, (in_features, world)
        self.in_features, self.out_features, self.group = in_features, out_features, group
        self.weight = _mark(nn.Parameter(torch.empty(out_features, in_features // world)), group, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return reduce_from_tp(F.linear(x, self.weight), self.group)

    def extra_repr(self) -> str:
        return f"in={self.in_features}, out={self.out_features}, local_in={self.weight.shape[1]}"


class VocabParallelEmbedding(nn.Module):
    """Rows [rank*V/tp, (rank+1)*V/tp) of the embedding on each rank."""

    def __init__(self, num_embeddings: int, dim: int, group=None):
        super().__init__()
        world = tp_size(group)
        assert num_embeddings % world == 0, (num_embeddings, world)
        self.num_embeddings, self.dim, self.group = num_embeddings, dim, group
        per = num_embeddings // world
        self.vocab_start = tp_rank(group) * per
        self.vocab_end = self.vocab_start + per
        self.weight = _mark(nn.Parameter(torch.empty(per, dim)), group, 0)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if tp_size(self.group) == 1:
            return F.embedding(ids, self.weight)
        outside = (ids < self.vocab_start) | (ids >= self.vocab_end)
        local = (ids - self.vocab_start).masked_fill(outside, 0)
        out = F.embedding(local, self.weight).masked_fill(outside.unsqueeze(-1), 0.0)
        return reduce_from_tp(out, self.group)


def shard(full: torch.Tensor, dim: int | None, group) -> torch.Tensor:
    """This rank's slice of a full tensor along ``dim`` (the whole tensor when replicated)."""
    if dim is None or tp_size(group) == 1:
        return full
    return full.chunk(tp_size(group), dim=dim)[tp_rank(group)]
