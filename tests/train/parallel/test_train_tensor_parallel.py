"""Tensor-parallel layers against the single-process model, in two gloo processes.

Each rank builds the full model (no group) and its tensor-parallel slice (group of 2) from the same seed,
then checks: the slices are the full weights' slices, the forward loss is the same, and after backward every
sharded gradient is the slice of the full gradient (replicated ones, the norms, equal in full). Also the
vocabulary-parallel cross entropy with z-loss against a direct computation.
"""
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from train.model.transformer import Llama, ModelConfig
from train.parallel.cross_entropy import vocab_parallel_cross_entropy
from train.parallel.tensor_parallel import shard

CFG = dict(vocab_size=90, n_layers=2, d_model=32, n_heads=4, n_kv_heads=2, ffn_hidden=64, max_seq_len=12,
           vocab_multiple=32, seed=11)
ATOL = 1e-5      # fp32; only the summation order differs (partial sums + all-reduce)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        group = dist.new_group(list(range(world)))
        cfg = ModelConfig(**CFG)
        full = Llama(cfg, z_loss=1e-3)
        part = Llama(cfg, group=group, z_loss=1e-3)
        torch.manual_seed(5)                               # same batch on both ranks
        ids = torch.randint(0, cfg.vocab_size, (2, 12))
        targets = torch.randint(0, cfg.vocab_size, (2, 12))
        fulls = dict(full.named_parameters())
        for name, p in part.named_parameters():
            assert torch.equal(p, shard(fulls[name].detach(), getattr(p, "partition_dim", None), group)), name
            sharded = getattr(p, "partition_dim", None) is not None
            assert getattr(p, "model_parallel", False) == sharded, name
        _, loss_full = full(ids, targets)
        _, loss_part = part(ids, targets)
        assert abs(loss_full.item() - loss_part.item()) < ATOL, (loss_full.item(), loss_part.item())
        loss_full.backward()
        loss_part.backward()
        for name, p in part.named_parameters():
            expect = shard(fulls[name].grad, getattr(p, "partition_dim", None), group)
            assert torch.allclose(p.grad, expect, atol=ATOL), (name, (p.grad - expect).abs().max().item())

        # Vocabulary-parallel cross entropy + z-loss on raw logits.
        logits = torch.randn(3, 5, 64, requires_grad=True)
        labels = torch.randint(0, 64, (3, 5))
        lse = torch.logsumexp(logits, -1)
        ref = torch.nn.functional.cross_entropy(logits.reshape(-1, 64), labels.reshape(-1)) + 0.01 * (lse ** 2).mean()
        ref.backward()
        local = logits.detach()[..., rank * 32:(rank + 1) * 32].clone().requires_grad_(True)
        loss, ce, z = vocab_parallel_cross_entropy(local, labels, group, vocab_start=rank * 32, z_loss=0.01)
        assert abs(loss.item() - ref.item()) < ATOL and abs((ce + z).item() - ref.item()) < ATOL
        loss.backward()
        assert torch.allclose(local.grad, logits.grad[..., rank * 32:(rank + 1) * 32], atol=1e-6)
    finally:
        dist.destroy_process_group()


def test_tensor_parallel_matches_single_process():
    mp.spawn(_worker, args=(2, _port()), nprocs=2, join=True)


def test_single_process_layers_are_plain():
    """Without a group the parallel layers are plain layers: no communication, full shapes."""
    m = Llama(ModelConfig(**CFG))
    assert m.layers[0].self_attn.q_proj.weight.shape == (32, 32)
    assert m.layers[0].self_attn.k_proj.weight.shape == (16, 32)
    assert m.layers[0].mlp.down_proj.weight.shape == (32, 64)
    assert m.embed.embed_tokens.weight.shape == (96, 32)
    assert not any(getattr(p, "model_parallel", False) for p in m.parameters())
