"""A sentencepiece model as Hugging Face tokenizer files that ``AutoTokenizer.from_pretrained(dir)`` loads.

``save_hf_tokenizer(sp_model, out_dir)`` writes ``tokenizer.json`` (a ``tokenizers`` pipeline that segments
text the way sentencepiece does), ``tokenizer_config.json``, ``special_tokens_map.json`` and a copy of
``tokenizer.model``. It needs neither protobuf nor network: the few fields of the model file it reads
(pieces with scores and types, model type, normalizer settings) are decoded here from the protobuf wire format.

How the sentencepiece model maps onto ``tokenizers``:
- BPE models become a ``BPE`` model whose merges are ranked by the score of the merged piece (sentencepiece
  merges the adjacent pair whose concatenation is the best-scored piece); unigram models become ``Unigram``
  with the same scores. Byte fallback (``<0x41>`` pieces) carries over.
- Whitespace: ``Metaspace`` (spaces become ``▁``, one ``▁`` prepended to the text when the model adds a
  dummy prefix) without splitting, so whitespace-only pieces still match. The decoder undoes it and drops
  that one leading space, like ``sentencepiece.decode``.
- A model trained with ``normalization_rule_name=identity`` (the project's tokenizer, pipeline/tokenize/tokenizer.py)
  needs no normalizer; other models carry their precompiled normalisation map over as ``Precompiled``.
- Control pieces (unk, bos, eos, pad) are special tokens; user-defined pieces are added tokens (never split).
  Two differences from sentencepiece: the text of a special token inside the input (``<eod>``) maps to that
  token, where sentencepiece would spell it out; and an unknown piece decodes as ``<unk>``, not `` ⁇ ``
  (models with byte fallback, like the project's, have no unknown pieces).

The tokenizer class is ``PreTrainedTokenizerFast``, which loads ``tokenizer.json`` as written (transformers'
``LlamaTokenizer`` rebuilds a BPE pipeline of its own and cannot hold a unigram model). ``add_bos``/``add_eos``
say what ``encode`` adds; the defaults add nothing, as the project's token shards have no BOS and end each
document with the end-of-document (eos) token that the model learned.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from train.tokenizer.sp_model import (BPE, BYTE, CONTROL, NORMAL, UNIGRAM, UNKNOWN, UNUSED, USER_DEFINED,  # noqa: F401
                            SentencePieceFormatError, SpModel, read_sp_model)

# A plain transcript for chat with a base model (no chat-tuned template yet). The server uses it when the
# tokenizer has no chat_template, and the export may record it as the tokenizer's template so that other
# servers (vLLM) render conversations the same way:
#   {system}\n\nUser: {message}\n\nAssistant: {reply}\n\nUser: {message}\n\nAssistant:
SIMPLE_CHAT_TEMPLATE = (
    "{%- for m in messages -%}"
    "{%- if m['role'] == 'system' -%}{{ m['content'] + '\\n\\n' }}"
    "{%- elif m['role'] == 'user' -%}{{ 'User: ' + m['content'] + '\\n\\n' }}"
    "{%- elif m['role'] == 'assistant' -%}{{ 'Assistant: ' + m['content'] + '\\n\\n' }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ 'Assistant:' }}{%- endif -%}"
)


# --- the tokenizers pipeline ---------------------------------------------------------------------------

def _bpe_merges(sp: SpModel, vocab: dict[str, int]) -> list[tuple[str, str]]:
    """Every split of every mergeable piece into two pieces of the vocabulary, best-scored piece first."""
    ranked = []
    for i, (piece, score, kind) in enumerate(sp.pieces):
        if kind != NORMAL or len(piece) < 2:
            continue
        for k in range(1, len(piece)):
            left, right = piece[:k], piece[k:]
            li, ri = vocab.get(left), vocab.get(right)
            if li is not None and ri is not None:
                ranked.append((-score, i, li, ri, left, right))
    ranked.sort()
    return [(left, right) for *_, left, right in ranked]


def build_tokenizer(sp: SpModel):
    """The ``tokenizers.Tokenizer`` that segments like the sentencepiece model."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers
    from tokenizers.models import BPE as BPEModel
    from tokenizers.models import Unigram

    unk = sp.ids_of(UNKNOWN)
    unk_id = unk[0] if unk else None
    if sp.model_type == BPE:
        vocab = {piece: i for i, (piece, _, _) in enumerate(sp.pieces)}
        model = BPEModel(vocab=vocab, merges=_bpe_merges(sp, vocab), unk_token=sp.pieces[unk_id][0] if unk else None,
                         fuse_unk=True, byte_fallback=sp.byte_fallback)
    else:
        model = Unigram([(piece, score) for piece, score, _ in sp.pieces], unk_id=unk_id,
                        byte_fallback=sp.byte_fallback)
    tok = Tokenizer(model)

    steps = []
    if sp.precompiled_charsmap and sp.normalizer_name != "identity":
        steps.append(normalizers.Precompiled(sp.precompiled_charsmap))
    if sp.remove_extra_whitespaces:
        steps += [normalizers.Strip(left=True, right=True), normalizers.Replace(Regex(" {2,}"), " ")]
    if sp.add_dummy_prefix:
        steps.append(normalizers.Prepend("▁"))
    steps.append(normalizers.Replace(" ", "▁"))
    tok.normalizer = normalizers.Sequence(steps)
    dec = [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
    if sp.add_dummy_prefix:
        dec.append(decoders.Strip(content=" ", left=1, right=0))
    tok.decoder = decoders.Sequence(dec)

    specials = [AddedToken(sp.pieces[i][0], special=True, normalized=False)
                for i in sorted(sp.ids_of(CONTROL) + sp.ids_of(UNKNOWN))]
    user = [AddedToken(sp.pieces[i][0], special=False, normalized=False) for i in sp.ids_of(USER_DEFINED)]
    tok.add_special_tokens(specials)
    if user:
        tok.add_tokens(user)
    return tok


def _piece(sp: SpModel, token_id: int | None, what: str) -> str | None:
    if token_id is None or token_id < 0:
        return None
    if token_id >= len(sp.pieces):
        raise ValueError(f"{what} id {token_id} is outside the vocabulary (size {len(sp.pieces)})")
    return sp.pieces[token_id][0]


def save_hf_tokenizer(sp_model_path: str | Path, out_dir: str | Path, *, eos_id: int | None = None,
                      bos_id: int | None = None, pad_id: int | None = None, add_bos: bool = False,
                      add_eos: bool = False, model_max_length: int | None = None,
                      chat_template: str | None = None) -> Path:
    """Write HF tokenizer files for a sentencepiece model into ``out_dir`` (created); returns ``out_dir``.

    ``eos_id``/``bos_id``/``pad_id`` default to the model's own pieces (sentencepiece's eos is the project's
    end-of-document token); pass -1 for "none". ``model_max_length`` is the context length to record;
    ``chat_template`` an optional Jinja chat template.
    """
    import sentencepiece as spm

    sp_model_path, out = Path(sp_model_path), Path(out_dir)
    sp = read_sp_model(sp_model_path)
    proc = spm.SentencePieceProcessor(model_file=str(sp_model_path))
    if proc.get_piece_size() != len(sp.pieces):
        raise SentencePieceFormatError(f"{sp_model_path}: read {len(sp.pieces)} pieces, sentencepiece says "
                                       f"{proc.get_piece_size()}")
    eos_id = proc.eos_id() if eos_id is None else eos_id
    bos_id = proc.bos_id() if bos_id is None else bos_id
    pad_id = proc.pad_id() if pad_id is None else pad_id
    unk_id = proc.unk_id()
    eos, bos, pad, unk = (_piece(sp, eos_id, "eos"), _piece(sp, bos_id, "bos"), _piece(sp, pad_id, "pad"),
                          _piece(sp, unk_id, "unk"))
    if add_bos and bos is None:
        raise ValueError("add_bos needs a bos token")
    if add_eos and eos is None:
        raise ValueError("add_eos needs an eos token")

    tok = build_tokenizer(sp)
    if add_bos or add_eos:
        from tokenizers.processors import TemplateProcessing

        single = ([f"{bos}:0"] if add_bos else []) + ["$A:0"] + ([f"{eos}:0"] if add_eos else [])
        pair = single + ([f"{bos}:1"] if add_bos else []) + ["$B:1"] + ([f"{eos}:1"] if add_eos else [])
        ids = ([(bos, bos_id)] if add_bos else []) + ([(eos, eos_id)] if add_eos and eos != bos else [])
        tok.post_processor = TemplateProcessing(single=" ".join(single), pair=" ".join(pair), special_tokens=ids)

    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"))
    shutil.copyfile(sp_model_path, out / "tokenizer.model")
    special = {k: v for k, v in (("bos_token", bos), ("eos_token", eos), ("unk_token", unk),
                                 ("pad_token", pad)) if v is not None}
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        **special,
        "add_bos_token": add_bos,
        "add_eos_token": add_eos,
        "clean_up_tokenization_spaces": False,
    }
    if model_max_length:
        config["model_max_length"] = model_max_length
    if chat_template:
        config["chat_template"] = chat_template
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    (out / "special_tokens_map.json").write_text(json.dumps(special, indent=2, ensure_ascii=False) + "\n")
    return out
