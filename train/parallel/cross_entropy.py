"""The training loss: cross entropy (+ z-loss) over vocabulary-parallel logits, a chunk of rows at a time.

In fp32 the logits are a step's largest activation (64 x 2,048 tokens over a 32k vocabulary: 16 GiB), and
the textbook loss keeps two such tensors (the upcast logits and their exponentials) for backward. Here the
rows (tokens) are cut into chunks of ``CHUNK_ROWS``; each chunk is upcast, reduced to two sums, and its
fp32 intermediates are recomputed in backward (activation checkpointing per chunk), so fp32 over the
vocabulary exists for one chunk at a time and the logits stay in the compute dtype. A batch of at most one
chunk (every CPU run of the tests) is computed directly, with nothing recomputed.

With one tensor-parallel rank and no z-loss a chunk is torch's fused ``cross_entropy``. With ``tp`` ranks each
rank holds a contiguous vocabulary range of the logits: only the per-token max, sum of exponentials and
target logit cross the group, never the logits.
"""
from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from train.parallel.tensor_parallel import reduce_from_tp, tp_size

CHUNK_ROWS = 4096       # 4,096 x 32k vocabulary x 4 bytes: 0.5 GiB of fp32 at a time


def _chunk_sums(logits: torch.Tensor, labels: torch.Tensor, group, vocab_start: int, with_z: bool):
    """(sum of cross entropy, sum of logsumexp^2, or 0 without z-loss) over rows [n, V/tp] of logits."""
    logits = logits.float()
    if tp_size(group) == 1 and not with_z:
        return F.cross_entropy(logits, labels, reduction="sum"), logits.new_zeros(())
    # The max only shifts the exponentials for stability; no gradient flows through it.
    with torch.no_grad():
        m = logits.max(dim=-1).values
        if tp_size(group) > 1:
            dist.all_reduce(m, op=dist.ReduceOp.MAX, group=group)
    sum_exp = reduce_from_tp(torch.exp(logits - m.unsqueeze(-1)).sum(dim=-1), group)
    lse = torch.log(sum_exp) + m
    local = labels - vocab_start
    outside = (local < 0) | (local >= logits.shape[-1])
    target = logits.gather(-1, local.clamp(0, logits.shape[-1] - 1).unsqueeze(-1)).squeeze(-1)
    target = reduce_from_tp(target.masked_fill(outside, 0.0), group)
    return (lse - target).sum(), (lse.square().sum() if with_z else logits.new_zeros(()))


def vocab_parallel_cross_entropy(logits: torch.Tensor, labels: torch.Tensor, group=None, vocab_start: int = 0,
                                 z_loss: float = 0.0, chunk_rows: int = CHUNK_ROWS):
    """Mean cross entropy (and mean logsumexp^2 z-loss) over logits split by vocabulary range.

    ``logits``: [..., V/tp] this rank's columns, ``vocab_start`` the first id they cover; ``labels``: [...]
    global ids. Computed in fp32, ``chunk_rows`` rows at a time. Returns (loss to optimize, cross entropy,
    z-loss term), all scalars.
    """
    flat, flat_labels = logits.reshape(-1, logits.shape[-1]), labels.reshape(-1)
    n, with_z = flat_labels.numel(), bool(z_loss)
    if n <= chunk_rows:
        ce_sum, z_sum = _chunk_sums(flat, flat_labels, group, vocab_start, with_z)
    else:
        ce_sum = z_sum = 0
        for i in range(0, n, chunk_rows):
            c, z = checkpoint(_chunk_sums, flat[i:i + chunk_rows], flat_labels[i:i + chunk_rows], group,
                              vocab_start, with_z, use_reentrant=False)
            ce_sum, z_sum = ce_sum + c, z_sum + z
    ce = ce_sum / n
    if with_z:
        z = z_loss * z_sum / n
        return ce + z, ce.detach(), z.detach()
    return ce, ce.detach(), torch.zeros((), device=ce.device)
