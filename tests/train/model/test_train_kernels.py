"""The step's kernels against their plain versions: the chunked loss, the fused optimizer, compiled blocks.

Each is compared with the reference it replaces on the same model, data and seed, in fp32 on the CPU:
equal within 1e-5 relative over 20 optimizer steps (the bound of the issue; measured much closer).
"""
import pytest
import torch
import torch.nn.functional as F

from train.model.kernels import compile_blocks, compile_seconds
from train.model.transformer import Llama, ModelConfig
from train.parallel.cross_entropy import vocab_parallel_cross_entropy

CFG = dict(vocab_size=61, n_layers=2, d_model=32, n_heads=4, n_kv_heads=2, ffn_hidden=64, max_seq_len=16,
           vocab_multiple=32)


def _reference(logits, labels, z_loss):
    lse = torch.logsumexp(logits.float(), -1)
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), labels.reshape(-1)) + z_loss * lse.square().mean()


@pytest.mark.parametrize("z_loss", [0.0, 1e-2])
def test_chunked_cross_entropy_equals_the_whole_and_holds_one_chunk_in_fp32(z_loss):
    torch.manual_seed(0)
    V, rows, chunk = 50, 6 * 7, 8
    base = torch.randn(6, 7, V)
    labels = torch.randint(0, V, (6, 7))
    ref_logits = base.clone().requires_grad_(True)
    ref = _reference(ref_logits, labels, z_loss)
    ref.backward()
    saved = []

    def keep(t):
        saved.append((t.dtype, t.numel()))
        return t
    for chunk_rows in (rows, chunk):            # one chunk (no recompute), then 6 chunks
        logits = base.clone().requires_grad_(True)
        saved.clear()
        with torch.autograd.graph.saved_tensors_hooks(keep, lambda t: t):
            loss, ce, z = vocab_parallel_cross_entropy(logits, labels, z_loss=z_loss, chunk_rows=chunk_rows)
        loss.backward()
        assert loss.item() == pytest.approx(ref.item(), rel=1e-6)
        assert (ce + z).item() == pytest.approx(ref.item(), rel=1e-6)
        assert torch.allclose(logits.grad, ref_logits.grad, atol=1e-7, rtol=1e-5)
        largest = max((n for dtype, n in saved if dtype == torch.float32), default=0)
        # Whole: backward keeps rows x V floats; chunked: only the chunks' inputs (views) and sums.
        assert largest == (rows * V if chunk_rows == rows else chunk * V), (chunk_rows, saved)


def _train(model, optimizer, steps=20, eos_every=0):
    ids = torch.randint(1, CFG["vocab_size"], (4, 17), generator=torch.Generator().manual_seed(3))
    if eos_every:
        ids[:, eos_every - 1::eos_every] = 0
    losses = []
    for _ in range(steps):          # the same batch each step: it is memorised, so the loss moves a lot
        _, loss = model(ids[:, :-1], ids[:, 1:])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses


def _adamw(model, **kw):
    return torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1, **kw)


def test_fused_adamw_trains_as_the_loop():
    loop, fused = Llama(ModelConfig(**CFG)), Llama(ModelConfig(**CFG))
    a = _train(loop, _adamw(loop, foreach=False))
    b = _train(fused, _adamw(fused, fused=True))
    assert a[-1] < a[0] - 0.3                   # it learns, so the comparison means something
    assert b == pytest.approx(a, rel=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("documents", [False, True], ids=["causal", "document-masking"])
def test_compiled_blocks_train_as_eager(documents):
    """Also with document masking: rows of several documents (an end-of-document id every 5 tokens), the mask
    and restarted positions passed through the compiled blocks."""
    cfg = {**CFG, "document_masking": documents, "eos_id": 0}
    eager, compiled = Llama(ModelConfig(**cfg)), Llama(ModelConfig(**cfg))
    assert compile_blocks(compiled) == CFG["n_layers"]
    a = _train(eager, _adamw(eager, foreach=False), eos_every=5 if documents else 0)
    b = _train(compiled, _adamw(compiled, foreach=False), eos_every=5 if documents else 0)
    assert b == pytest.approx(a, rel=1e-5)
    assert compile_seconds() > 0


def test_the_estimator_counts_the_loss_chunk_the_trainer_uses():
    from train import estimate
    from train.parallel import cross_entropy

    assert estimate.LOSS_CHUNK_ROWS == cross_entropy.CHUNK_ROWS
