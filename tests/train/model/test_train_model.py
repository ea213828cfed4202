"""The Llama-style model alone: shapes, causal masking, rotary embeddings, init, Hugging Face parity."""
import math

import pytest
import torch

from train.model.transformer import Llama, ModelConfig, apply_rope, rope_cos_sin

CFG = dict(vocab_size=100, n_layers=2, d_model=32, n_heads=4, n_kv_heads=2, ffn_hidden=64, max_seq_len=16,
           vocab_multiple=64, seed=3)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return Llama(ModelConfig(**CFG)).eval()


def test_shapes_loss_and_padding(model):
    ids = torch.randint(0, 100, (3, 16))
    logits, loss = model(ids, ids)
    assert logits.shape == (3, 16, 128)           # 100 rounded up to a multiple of 64
    assert torch.isinf(logits[..., 100:]).all() and torch.isfinite(logits[..., :100]).all()
    # Loss is the mean cross entropy over the real vocabulary; padding rows take no probability.
    ref = torch.nn.functional.cross_entropy(logits[..., :100].reshape(-1, 100), ids.reshape(-1))
    assert loss.item() == pytest.approx(ref.item(), rel=1e-6)
    assert loss.item() == pytest.approx(math.log(100), rel=0.05)   # near uniform at init


def test_causal_masking(model):
    ids = torch.randint(0, 100, (1, 16))
    changed = ids.clone()
    changed[0, 10] = (ids[0, 10] + 1) % 100
    a, _ = model(ids)
    b, _ = model(changed)
    assert torch.equal(a[0, :10], b[0, :10])            # the past does not see the future
    assert not torch.allclose(a[0, 10:, :100], b[0, 10:, :100])


def test_rope_is_a_rotation_depending_on_relative_position():
    torch.manual_seed(1)
    hd, T = 8, 12
    cos, sin = rope_cos_sin(T, hd, 10000.0, "cpu", torch.float32)
    q, k = torch.randn(hd), torch.randn(hd)
    rq = apply_rope(q.expand(T, hd), cos, sin)
    rk = apply_rope(k.expand(T, hd), cos, sin)
    assert torch.allclose(rq.norm(dim=-1), q.norm().expand(T), atol=1e-5)          # norm preserved
    assert torch.allclose(rq[0], q)                                                  # position 0: identity
    # <R(m) q, R(n) k> depends on m - n only.
    assert torch.dot(rq[5], rk[2]).item() == pytest.approx(torch.dot(rq[9], rk[6]).item(), abs=1e-5)
    assert torch.dot(rq[5], rk[2]).item() != pytest.approx(torch.dot(rq[9], rk[2]).item(), abs=1e-3)


def test_init_is_deterministic_per_seed():
    a, b = Llama(ModelConfig(**CFG)), Llama(ModelConfig(**CFG))
    c = Llama(ModelConfig(**{**CFG, "seed": 4}))
    for (n, pa), pb, pc in zip(a.named_parameters(), b.parameters(), c.parameters()):
        assert torch.equal(pa, pb), n
        if not n.endswith("norm.weight"):
            assert not torch.equal(pa, pc), n
    # Residual-stream projections are scaled down as in GPT-2.
    std = a.layers[0].self_attn.o_proj.weight.std().item()
    assert std == pytest.approx(0.02 / math.sqrt(4), rel=0.2)


def test_matches_hugging_face_llama(model):
    """Same weights under HF names give the same logits in transformers' LlamaForCausalLM."""
    transformers = pytest.importorskip("transformers")
    cfg = model.cfg
    hf_cfg = transformers.LlamaConfig(
        vocab_size=cfg.padded_vocab, hidden_size=cfg.d_model, intermediate_size=cfg.ffn_hidden,
        num_hidden_layers=cfg.n_layers, num_attention_heads=cfg.n_heads, num_key_value_heads=cfg.n_kv_heads,
        max_position_embeddings=cfg.max_seq_len, rms_norm_eps=cfg.norm_eps, rope_theta=cfg.rope_theta,
        tie_word_embeddings=False, attention_bias=False, mlp_bias=False)
    hf = transformers.LlamaForCausalLM(hf_cfg).eval()
    sd = {}
    for name, t in model.state_dict().items():
        name = (name.replace("embed.embed_tokens", "model.embed_tokens").replace("layers.", "model.layers.")
                .replace("head.norm", "model.norm").replace("head.lm_head", "lm_head"))
        sd[name] = t
    missing, unexpected = hf.load_state_dict(sd, strict=False)
    assert not unexpected and all("rotary" in m for m in missing), (missing, unexpected)
    ids = torch.randint(0, 100, (2, 16))
    with torch.no_grad():
        ours, _ = model(ids)
        theirs = hf(ids).logits
    assert torch.allclose(ours[..., :100], theirs[..., :100], atol=1e-5)
