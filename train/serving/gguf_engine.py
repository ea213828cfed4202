"""Generation from a llama.cpp GGUF file (``glassbox export --gguf``) through llama-cpp-python, behind the same API.

The same contract as the torch engine (train/serving/engine.py): one worker thread runs the model, text streams
through the same ``TextTracker`` (stop sequences, no half characters), a client that goes away stops generation
at the next token. Tokenization is llama.cpp's own, from the vocabulary the converter wrote into the file
(sentencepiece pieces, scores and types, special ids, no BOS added: the export's tokenizer settings), so a GGUF
server and an export server give the same prompt ids; ctypes releases the GIL while llama.cpp tokenizes.

Chat uses the file's ``tokenizer.chat_template`` when it has one (an export made with ``--chat-template``),
rendered by jinja2 in a sandbox as transformers renders templates, else ``SIMPLE_CHAT_TEMPLATE`` with the
``"\\nUser:"`` stop. Sampling is llama.cpp's: temperature, top-p, greedy below ``GREEDY_BELOW``. Its
generator takes a 32-bit seed: a 64-bit ``seed`` is mixed into 32 bits (``seed32``), so equal seeds give equal
answers.
"""
from __future__ import annotations

import atexit
import ctypes
import random
import re
import threading
from pathlib import Path
from typing import Callable

from train.export.hf_tokenizer import SIMPLE_CHAT_TEMPLATE
from train.serving.engine import SIMPLE_TEMPLATE_STOP, EngineBase, Generation, TextTracker
from train.serving.protocol import Sampling

LLAMA_DEFAULT_SEED = 0xFFFFFFFF        # llama.cpp reads this seed as "pick one at random"
GGML_TYPE_F32 = 0


def seed32(seed: int) -> int:
    """A 64-bit seed (negative ones as two's complement) mixed into llama.cpp's 32 bits: splitmix64 (a bijection
    of 64-bit values), then its high half, so nearby seeds land far apart; never llama.cpp's 'random' value."""
    mask = 2 ** 64 - 1
    z = (seed + 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    s = (z ^ (z >> 31)) >> 32
    return s if s != LLAMA_DEFAULT_SEED else LLAMA_DEFAULT_SEED - 1


class Detokenizer:
    """``decode(ids)`` for TextTracker, as transformers' tokenizers decode: every piece's bytes read once (control
    tokens such as the end-of-document one decode to nothing, as with ``skip_special_tokens``), and a run of
    byte-fallback tokens that is not valid UTF-8 becomes one U+FFFD per byte, as the ByteFallback decoder of
    the export's tokenizer.json does (Python's ``errors="replace"`` would merge some)."""

    def __init__(self, llm):
        import llama_cpp

        vocab, self.pieces = llm._model.vocab, []
        self.is_byte = [re.fullmatch(r"<0x[0-9A-Fa-f]{2}>", llm._model.token_get_text(i)) is not None
                        for i in range(llm.n_vocab())]
        for token in range(llm.n_vocab()):
            buf = ctypes.create_string_buffer(64)
            n = llama_cpp.llama_token_to_piece(vocab, token, buf, 64, 0, False)
            if n < 0:                             # longer than the buffer: llama.cpp says how long
                buf = ctypes.create_string_buffer(-n)
                n = llama_cpp.llama_token_to_piece(vocab, token, buf, -n, 0, False)
            self.pieces.append(buf.raw[:n])

    def decode(self, ids, **_) -> str:
        out, run = [], []

        def flush():
            if run:
                try:
                    out.append(b"".join(run).decode("utf-8"))
                except UnicodeDecodeError:
                    out.append("\ufffd" * len(run))
                run.clear()

        for i in ids:
            if self.is_byte[i]:
                run.append(self.pieces[i])
            else:
                flush()
                out.append(self.pieces[i].decode("utf-8", errors="replace"))
        flush()
        return "".join(out)


def render_template(template: str, messages: list[dict], bos: str = "", eos: str = "") -> str:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise ValueError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    return env.from_string(template).render(messages=messages, add_generation_prompt=True, bos_token=bos,
                                            eos_token=eos)


class GGUFEngine(EngineBase):
    backend = "llama.cpp"

    def __init__(self, path: str | Path, threads: int | None = None):
        from llama_cpp import Llama

        self.path = str(path)
        probe = Llama(model_path=self.path, vocab_only=True, verbose=False)   # reads the metadata only
        meta = probe.metadata
        ctx = int(meta[f"{meta['general.architecture']}.context_length"])
        probe.close()
        # The KV cache in fp32 as the torch server keeps it (llama.cpp's default is fp16): the file's weights are
        # then the only difference between the two.
        self.llm = Llama(model_path=self.path, n_ctx=ctx, n_batch=min(ctx, 512), n_threads=threads,
                         n_threads_batch=threads, type_k=GGML_TYPE_F32, type_v=GGML_TYPE_F32, verbose=False)
        atexit.register(self.llm.close)        # freed before interpreter teardown unloads what freeing needs
        self.max_context = int(ctx)
        meta = self.llm.metadata
        self.eos_ids = sorted({int(meta[k]) for k in ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id")
                               if k in meta})
        self.chat_template = meta.get("tokenizer.chat_template")
        self.n_params = int(self.llm._model.n_params())
        self.n_vocab = self.llm.n_vocab()
        self.detok = Detokenizer(self.llm)
        if sum(self.detok.is_byte) < 256:
            # llama.cpp aborts the whole process (std::out_of_range in llama_vocab::byte_to_token) on a character
            # its vocabulary cannot spell without byte pieces: one hostile prompt would take the server down.
            raise SystemExit(f"serve: {self.path}: the vocabulary has {sum(self.detok.is_byte)} of the 256 byte-"
                             "fallback pieces, and llama.cpp aborts on any character outside it. Serve the export "
                             "directory instead, or train the tokenizer with tokenize.byte_fallback: true.")
        # decoded bytes, or the piece's own text for control tokens (a prompt may spell out "<eod>")
        self.max_piece_chars = max(max(len(p) for p in self.detok.pieces),
                                   max(len(self.llm._model.token_get_text(i)) for i in range(self.n_vocab)))
        self._start_threads()

    def vocab_size(self) -> int:
        return self.n_vocab

    def encode_text(self, text: str) -> list[int]:
        # add_bos=True means "add what the vocabulary says" (llama.cpp's add_special): none for our exports
        return self.llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)

    def render_chat(self, messages: list[dict]) -> tuple[str, list[str]]:
        if self.chat_template:
            return render_template(self.chat_template, messages), []
        return render_template(SIMPLE_CHAT_TEMPLATE, messages), [SIMPLE_TEMPLATE_STOP]

    def generate(self, ids: list[int], max_new: int, sampling: Sampling, stops: list[str],
                 on_text: Callable[[str], None] | None = None,
                 cancelled: threading.Event | None = None) -> Generation:
        prompt_len = len(ids)
        if cancelled is not None and cancelled.is_set():
            return Generation("", "stop", prompt_len, 0)
        tracker = TextTracker(self.detok, stops, ids)
        self.llm.set_seed(seed32(sampling.seed) if sampling.seed is not None else random.getrandbits(31))
        greedy = sampling.greedy
        new, ended_on_eos = [], False
        for tok in self.llm.generate(ids, top_k=0, top_p=1.0 if greedy else sampling.top_p, min_p=0.0,
                                     typical_p=1.0, temp=0.0 if greedy else sampling.temperature,
                                     repeat_penalty=1.0, reset=True):
            if tok in self.eos_ids:
                ended_on_eos = True
                break
            new.append(tok)
            piece = tracker.update(new)
            if piece and on_text:
                on_text(piece)
            if (tracker.stopped_at is not None or len(new) >= max_new
                    or (cancelled is not None and cancelled.is_set())):
                break
        rest = tracker.finish(new)
        if rest and on_text:
            on_text(rest)
        reason = "stop" if tracker.stopped_at is not None or ended_on_eos else "length"
        return Generation(tracker.result(), reason, prompt_len, len(new) + int(ended_on_eos))

