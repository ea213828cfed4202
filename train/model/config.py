"""The shape of the model (no torch): what the trainer builds, the run's config.json records and the readers
(report, export, estimate) compute parameter counts and FLOPs from."""
from __future__ import annotations

from dataclasses import dataclass

from glassbox.contracts import llama_param_count, padded_vocab


@dataclass
class ModelConfig:
    vocab_size: int
    n_layers: int = 4
    d_model: int = 128
    n_heads: int = 4
    n_kv_heads: int = 4
    ffn_hidden: int = 384
    max_seq_len: int = 256
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    init_std: float = 0.02
    vocab_multiple: int = 64
    seed: int = 1234
    # Packed rows hold several documents, each ending with eos_id. document_masking: a token attends only to
    # earlier tokens of its own document; document_positions: rotary positions restart at 0 at each document
    # (None: the same as document_masking). Both off: the row is one causal sequence.
    document_masking: bool = False
    document_positions: bool | None = None
    eos_id: int = 3
    qk_norm: bool = False            # RMSNorm over each head's query and key before the rotary embedding

    @property
    def restart_positions(self) -> bool:
        return self.document_masking if self.document_positions is None else self.document_positions

    @property
    def packs_documents(self) -> bool:
        """Whether the layers pass (hidden, document index, position) instead of the hidden states alone."""
        return self.document_masking or self.restart_positions

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def padded_vocab(self) -> int:
        """Embedding and head rows: vocab_size rounded up so the rows split evenly across ranks."""
        return padded_vocab(self.vocab_size, self.vocab_multiple)

    def num_params(self, embeddings: bool = True) -> int:
        return llama_param_count(d_model=self.d_model, n_layers=self.n_layers, n_heads=self.n_heads,
                                 n_kv_heads=self.n_kv_heads, ffn_hidden=self.ffn_hidden, vocab_size=self.vocab_size,
                                 vocab_multiple=self.vocab_multiple, embeddings=embeddings)

    def flops_per_token(self, seq_len: int) -> float:
        """Training FLOPs per token for MFU, PaLM's convention: 6 x (parameters in matmuls, the head
        included, the input embedding not) + 12 n_layers d_model seq_len for attention."""
        return 6 * self.num_params(embeddings=False) + 12 * self.n_layers * self.d_model * seq_len
