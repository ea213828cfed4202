"""train.export.hf_tokenizer: a sentencepiece model as HF tokenizer files that segment text exactly as sentencepiece does."""
from __future__ import annotations

import json

import pytest

from hf_fixtures import text_lines, train_sp_model

EXTRA = ["  two leading spaces", "tabs\tand\nnewlines\n", "emoji 😀, ünïcödé, 中文字符 ", "",
         "code:\n    if x:\n        return {'a': 1}", " ", "x  y   z   ", "123456789 and 3.14159"]


def check_round_trip(sp_path, out_dir):
    import sentencepiece as spm
    from transformers import AutoTokenizer

    from train.export.hf_tokenizer import save_hf_tokenizer

    save_hf_tokenizer(sp_path, out_dir, model_max_length=128)
    sp = spm.SentencePieceProcessor(model_file=str(sp_path))
    tok = AutoTokenizer.from_pretrained(out_dir)
    assert len(tok) == sp.get_piece_size()
    # the special tokens' text in the input (WikiText's "<unk>") is the one documented difference
    texts = [t for t in text_lines() if "<unk>" not in t][:1500] + EXTRA
    mismatched = [t for t in texts if tok.encode(t) != sp.encode(t)]
    assert not mismatched, f"{len(mismatched)} of {len(texts)} differ, e.g. {mismatched[:2]}"
    for t in texts:
        ids = tok.encode(t)
        assert tok.decode(ids) == sp.decode(ids) == t          # lossless, like the project's tokenizer
    return sp, tok


def test_bpe_tokenizer_matches_sentencepiece(tmp_path):
    sp, tok = check_round_trip(train_sp_model(tmp_path / "sp.model", 800), tmp_path / "hf")
    # the project's ids: unk 0, bos 1, eos = end of document <eod> 2, pad 3; nothing added on encode
    assert (tok.unk_token_id, tok.bos_token_id, tok.eos_token_id, tok.pad_token_id) == (0, 1, 2, 3)
    assert tok.eos_token == "<eod>" == sp.id_to_piece(sp.eos_id())
    assert tok.encode("The lobster")[0] != tok.bos_token_id and tok.encode("The lobster")[-1] != tok.eos_token_id
    assert tok.model_max_length == 128
    files = {p.name for p in (tmp_path / "hf").iterdir()}
    assert {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.model"} <= files
    # byte fallback: a character never seen in training comes back through byte pieces
    ids = tok.encode("ꙮ")
    assert all(tok.convert_ids_to_tokens(i).startswith("<0x") or tok.convert_ids_to_tokens(i) == "▁"
               for i in ids) and tok.decode(ids) == "ꙮ"


def test_unigram_tokenizer_matches_sentencepiece(tmp_path):
    check_round_trip(train_sp_model(tmp_path / "sp.model", 600, model_type="unigram", n_lines=600),
                     tmp_path / "hf")


def test_bos_eos_options_and_chat_template(tmp_path):
    from transformers import AutoTokenizer

    from train.export.hf_tokenizer import SIMPLE_CHAT_TEMPLATE, save_hf_tokenizer

    sp_path = train_sp_model(tmp_path / "sp.model", 800, n_lines=500)
    save_hf_tokenizer(sp_path, tmp_path / "hf", add_bos=True, add_eos=True, chat_template=SIMPLE_CHAT_TEMPLATE)
    tok = AutoTokenizer.from_pretrained(tmp_path / "hf")
    ids = tok.encode("The lobster")
    assert ids[0] == 1 and ids[-1] == 2
    assert tok.decode(ids, skip_special_tokens=True) == "The lobster"
    text = tok.apply_chat_template([{"role": "user", "content": "Hi"}], tokenize=False, add_generation_prompt=True)
    assert text == "User: Hi\n\nAssistant:"
    cfg = json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text())
    assert cfg["add_bos_token"] is True and cfg["eos_token"] == "<eod>"


def test_not_a_sentencepiece_model(tmp_path):
    from train.export.hf_tokenizer import SentencePieceFormatError, read_sp_model

    bad = tmp_path / "x.model"
    bad.write_bytes(b"\x12\x00")              # a valid message (an empty trainer spec) without pieces
    with pytest.raises(SentencePieceFormatError):
        read_sp_model(bad)
    bad.write_bytes(b"\xff\xff\xff")
    with pytest.raises(SentencePieceFormatError):
        read_sp_model(bad)
