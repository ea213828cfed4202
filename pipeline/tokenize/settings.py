"""What decontamination and tokenization can be told, checked as a config is read."""
from __future__ import annotations

from dataclasses import dataclass, field

from glassbox.schema import setting


# --- decontaminate -------------------------------------------------------------------------------------------

@dataclass
class Benchmark:
    name: str
    paths: list[str]                 # as written in the config
    files: list[str]                 # what they matched, sorted, absolute
    fields: list[str] = field(default_factory=lambda: ["text"])
    id_field: str | None = None      # None: items are named by line number


@dataclass
class DecontamConfig:
    benchmarks: list[Benchmark] = field(default_factory=list)   # built by pipeline/config.py (paths)
    ngram: int = setting(13, ge=1)
    remove: bool = True              # false: report (column `contamination`, stats) but keep
    min_words: int = setting(8, ge=1)  # shorter field texts are skipped, not matched whole


# --- tokenize ------------------------------------------------------------------------------------------------

MODEL_TYPES = ("bpe", "unigram")
RESERVED_PIECES = ("<unk>", "<s>", "<pad>")


def _piece_problem(tok: str) -> str | None:
    return None if tok and not any(c.isspace() for c in tok) else \
        f"a token must be a non-empty string without whitespace, got {tok!r}"


def _pieces_problem(toks: list) -> str | None:
    return next((p for p in map(_piece_problem, toks) if p), None) or \
        (f"listed twice: {toks}" if len(set(toks)) != len(toks) else None)


@dataclass
class TokenizeConfig:
    vocab_size: int = setting(32000, ge=1)
    model_type: str = setting("bpe", choices=MODEL_TYPES)
    byte_fallback: bool = True
    character_coverage: float = setting(0.9995, gt=0, le=1)
    split_digits: bool = True
    eod_token: str = setting("<eod>", check=_piece_problem)
    special_tokens: list[str] = setting(default_factory=lambda: ["<eod>"], check=_pieces_problem)  # never split
    sample_docs: int = setting(200_000, ge=1)          # tokenizer-training sample, spread across sources
    sample_chars: int = setting(100_000_000, ge=1)
    tokenizer: str | None = ""           # an existing sentencepiece model to reuse; "" or null trains one
    shards_per_source: int = setting(4, ge=1)
    seed: int = setting(42, ge=0)
    threads: int = setting(4, ge=1)      # recorded in the model: fixed, so reruns match

    def user_symbols(self) -> list[str]:
        """Special tokens besides the end-of-document one, which is the eos piece already."""
        return [t for t in self.special_tokens if t != self.eod_token]

    def check(self) -> str | None:
        reserved = set(RESERVED_PIECES) & ({self.eod_token} | set(self.special_tokens))
        if reserved:
            return f"special_tokens: {sorted(reserved)} are sentencepiece's own pieces; choose other names"
        floor = len(self.user_symbols()) + 4 + (256 if self.byte_fallback else 0)
        if self.vocab_size <= floor:
            return (f"vocab_size: must exceed {floor} (4 control pieces, the special tokens"
                    f"{', 256 byte pieces' if self.byte_fallback else ''}), got {self.vocab_size}")
        return None
