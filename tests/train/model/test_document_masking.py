"""Intra-document attention on packed rows (model.document_masking, model.document_positions).

A row packs documents, each ending with the end-of-document id. With the mask on, a document's logits do not
depend on what the document before it holds (bit for bit when that document has the same length, so every
kernel sees the same shapes and offsets), and the loss of a packed row equals the documents' separate losses,
each run alone in a row of its own from position 0. Tolerance of the latter: relative 1e-5 on the logits and
1e-6 on the loss (fp32; the packed and the separate runs differ only in the length of the rows the kernels
reduce over, a few ulps; measured in the test's message when it fails). Without the mask the first check
fails (the control): the document sees the one before.
"""
import pytest
import torch
import torch.nn.functional as F

from train.model.transformer import Llama, ModelConfig, document_layout

EOS = 3


def _cfg(**kw):
    base = dict(vocab_size=97, n_layers=2, d_model=64, n_heads=4, n_kv_heads=2, ffn_hidden=128, max_seq_len=64,
                eos_id=EOS, document_masking=True)
    return ModelConfig(**{**base, **kw})


def _doc(g, n):
    """n tokens ending with eos; no eos inside."""
    ids = torch.randint(4, 97, (n,), generator=g)
    ids[-1] = EOS
    return ids


def test_document_layout_restarts_after_every_eos():
    ids = torch.tensor([[5, 6, EOS, 7, EOS, 8, 9, 10], [EOS, 4, 4, 4, 4, 4, 4, EOS]])
    doc, pos = document_layout(ids, EOS)
    assert doc.tolist() == [[0, 0, 0, 1, 1, 2, 2, 2], [0, 1, 1, 1, 1, 1, 1, 1]]
    assert pos.tolist() == [[0, 1, 2, 0, 1, 0, 1, 2], [0, 0, 1, 2, 3, 4, 5, 6]]


@pytest.mark.parametrize("qk_norm", [False, True])
def test_a_documents_logits_do_not_depend_on_the_document_before_it(qk_norm):
    torch.manual_seed(0)
    model = Llama(_cfg(qk_norm=qk_norm)).eval()
    g = torch.Generator().manual_seed(1)
    x = _doc(g, 21)
    rows = torch.stack([torch.cat([_doc(g, 19), x, _doc(g, 24)]) for _ in range(3)])    # same lengths, other text
    with torch.no_grad():
        logits, _ = model(rows)
    part = logits[:, 19:40]
    assert torch.equal(part[0], part[1]) and torch.equal(part[0], part[2])
    # ... and a previous document of another length: the same numbers up to rounding
    other = torch.cat([_doc(g, 7), x]).unsqueeze(0)
    with torch.no_grad():
        shifted = model(other)[0][0, 7:]
    torch.testing.assert_close(shifted, part[0], rtol=1e-5, atol=1e-5)


def test_without_the_mask_the_document_sees_the_one_before():
    torch.manual_seed(0)
    model = Llama(_cfg(document_masking=False)).eval()
    g = torch.Generator().manual_seed(1)
    x = _doc(g, 21)
    rows = torch.stack([torch.cat([_doc(g, 19), x]) for _ in range(2)])
    with torch.no_grad():
        part = model(rows)[0][:, 19:, :97]
    assert (part[0] - part[1]).abs().max() > 1e-3


def test_a_packed_rows_loss_equals_the_documents_separate_losses():
    torch.manual_seed(0)
    model = Llama(_cfg()).eval()
    g = torch.Generator().manual_seed(2)
    docs = [_doc(g, n) for n in (9, 17, 6, 13)]
    row = torch.cat(docs)                                       # 45 tokens: 44 predictions
    with torch.no_grad():
        packed_logits, packed_loss = model(row[None, :-1], row[None, 1:])
        total, count, start = 0.0, 0, 0
        for d in docs:
            # alone, from position 0: the same predictions as inside the row (the document's last token, the
            # eos, predicts the next document's first token in both)
            n = len(d)
            inputs = row[start:start + n][None]
            targets = row[start + 1:start + n + 1][None]
            logits = model(inputs[:, :targets.shape[1]])[0]
            torch.testing.assert_close(logits[0], packed_logits[0, start:start + targets.shape[1]],
                                       rtol=1e-5, atol=1e-5)
            total += F.cross_entropy(logits[0, :, :97].double(), targets[0], reduction="sum").item()
            count += targets.shape[1]
            start += n
    assert count == 44
    assert packed_loss.item() == pytest.approx(total / count, rel=1e-6)
