"""A sentencepiece ``.model`` file read without sentencepiece or protobuf: the pieces with their scores and
types, the model type and the normalizer settings (what the Hugging Face export and the import need)."""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from train.tokenizer.protowire import WireFormatError, fields

# sentencepiece_model.proto: SentencePiece.Type and TrainerSpec.ModelType.
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
UNIGRAM, BPE = 1, 2


class SentencePieceFormatError(ValueError):
    """The file is not a sentencepiece model this converter supports."""


@dataclass
class SpModel:
    pieces: list[tuple[str, float, int]] = field(default_factory=list)   # (piece, score, type)
    model_type: int = UNIGRAM
    byte_fallback: bool = False
    treat_whitespace_as_suffix: bool = False
    normalizer_name: str = ""
    precompiled_charsmap: bytes = b""
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    escape_whitespaces: bool = True

    def ids_of(self, kind: int) -> list[int]:
        return [i for i, (_, _, t) in enumerate(self.pieces) if t == kind]


def read_sp_model(path: str | Path) -> SpModel:
    """Decode the parts of a sentencepiece ``.model`` file the converter needs."""
    try:
        return _checked(_decode(Path(path).read_bytes()), path)
    except WireFormatError as e:
        raise SentencePieceFormatError(f"{path}: {e}; not a sentencepiece model") from None


def _decode(data: bytes) -> SpModel:
    m = SpModel()
    for num, wt, value in fields(data):
        if num == 1 and wt == 2:                      # repeated SentencePiece pieces
            piece, score, kind = "", 0.0, NORMAL
            for n, w, v in fields(value):
                if n == 1 and w == 2:
                    piece = v.decode("utf-8")
                elif n == 2 and w == 5:
                    score = struct.unpack("<f", v)[0]
                elif n == 3 and w == 0:
                    kind = v
            m.pieces.append((piece, score, kind))
        elif num == 2 and wt == 2:                    # TrainerSpec
            for n, w, v in fields(value):
                if n == 3 and w == 0:
                    m.model_type = v
                elif n == 35 and w == 0:
                    m.byte_fallback = bool(v)
                elif n == 24 and w == 0:
                    m.treat_whitespace_as_suffix = bool(v)
        elif num == 3 and wt == 2:                    # NormalizerSpec
            for n, w, v in fields(value):
                if n == 1 and w == 2:
                    m.normalizer_name = v.decode("utf-8")
                elif n == 2 and w == 2:
                    m.precompiled_charsmap = bytes(v)
                elif n == 3 and w == 0:
                    m.add_dummy_prefix = bool(v)
                elif n == 4 and w == 0:
                    m.remove_extra_whitespaces = bool(v)
                elif n == 5 and w == 0:
                    m.escape_whitespaces = bool(v)
    return m


def _checked(m: SpModel, path) -> SpModel:
    if not m.pieces:
        raise SentencePieceFormatError(f"{path}: no pieces; not a sentencepiece model")
    if m.model_type not in (UNIGRAM, BPE):
        raise SentencePieceFormatError(f"{path}: model type {m.model_type} (word/char) is not supported; "
                                       "train a bpe or unigram model")
    if m.treat_whitespace_as_suffix or not m.escape_whitespaces:
        raise SentencePieceFormatError(f"{path}: treat_whitespace_as_suffix / escape_whitespaces=false "
                                       "are not supported")
    return m
