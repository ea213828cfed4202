"""Generation on CPU with an exported Hugging Face causal LM: prompts, chat rendering, stop sequences.

One worker thread runs every model call, in arrival order, so concurrent requests never share the model
(or the global random generator that ``seed`` sets) mid-generation. Text streams out while it is generated:
a stopping criterion inside ``generate`` decodes the new tokens after each step, holds back text that could
still turn into a stop sequence (or an incomplete UTF-8 character from byte-fallback pieces), hands the
rest to the caller, and ends generation when a stop sequence appears or the client went away.

Chat without a template in the tokenizer uses ``SIMPLE_CHAT_TEMPLATE`` (``train.export.hf_tokenizer``): a plain
transcript a base model can continue::

    {system prompt}\\n\\nUser: {message}\\n\\nAssistant: {reply}\\n\\nUser: {message}\\n\\nAssistant:

and ``"\\nUser:"`` is added to the stop sequences, so the model's reply ends where it would start writing
the user's next turn.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from train.export.hf_tokenizer import SIMPLE_CHAT_TEMPLATE
from train.serving.protocol import APIError, Sampling

COMPLETION_DEFAULT_MAX_TOKENS = 16     # OpenAI's default for /v1/completions
SIMPLE_TEMPLATE_STOP = "\nUser:"


@dataclass
class Generation:
    text: str
    finish_reason: str          # "stop" (end of text or a stop sequence) | "length"
    prompt_tokens: int
    completion_tokens: int


class TextTracker:
    """Incremental detokenization with stop sequences: what may be shown so far, and whether to stop.

    Text is committed append-only: each step decodes a short window (the last committed tokens plus the
    new ones) and appends what the new tokens added, so a streamed answer and the same answer returned
    whole are always identical. The window starts inside the prompt, so the first generated word keeps its
    leading space. A step whose text ends in an unfinished UTF-8 character (byte-fallback pieces) waits.
    """

    CONTEXT = 6        # prompt tokens decoded before the first generated one

    def __init__(self, tokenizer, stops: list[str], prompt_ids: list[int] = ()):
        self.tokenizer, self.stops = tokenizer, [s for s in stops if s]
        self.longest = max((len(s) for s in self.stops), default=0)
        self.context = list(prompt_ids)[-self.CONTEXT:]
        self.prefix, self.read = 0, len(self.context)     # token offsets into context + generated ids
        self.text = ""              # committed text of the generated tokens
        self.emitted = 0            # characters of it handed out
        self.stopped_at: int | None = None

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)

    def _advance(self, generated: list[int], final: bool) -> None:
        ids = self.context + list(generated)
        if len(ids) <= self.read:
            return
        before = self._decode(ids[self.prefix:self.read])
        after = self._decode(ids[self.prefix:])
        if after.endswith("\ufffd") and not final:
            return
        self.text += after[len(before):]
        self.prefix, self.read = self.read, len(ids)

    def _find_stop(self) -> int | None:
        start = max(0, self.emitted - self.longest)
        hits = [i for i in (self.text.find(s, start) for s in self.stops) if i >= 0]
        return min(hits) if hits else None

    def update(self, generated: list[int]) -> str:
        """New text that is safe to show after these generated ids ('' if none)."""
        if self.stopped_at is not None:
            return ""
        self._advance(generated, final=False)
        at = self._find_stop()
        if at is not None:
            self.stopped_at = at
            return self._take(at)
        safe = len(self.text)
        for k in range(min(self.longest - 1, safe - self.emitted), 0, -1):   # a stop sequence may be starting
            if any(s.startswith(self.text[safe - k:]) for s in self.stops):
                safe -= k
                break
        return self._take(safe)

    def finish(self, generated: list[int]) -> str:
        """The rest of the text once generation ended."""
        if self.stopped_at is not None:
            return ""
        self._advance(generated, final=True)
        self.stopped_at = self._find_stop()
        return self._take(len(self.text) if self.stopped_at is None else self.stopped_at)

    def result(self) -> str:
        return self.text if self.stopped_at is None else self.text[:self.stopped_at]

    def _take(self, end: int) -> str:
        piece = self.text[self.emitted:end] if end > self.emitted else ""
        self.emitted = max(self.emitted, end)
        return piece


class EngineBase:
    """What every backend shares: the context check, the request-size bound on text, and the two thread pools.

    Requests are prepared (JSON parsed, checked, tokenized) on ``prep`` threads, off the server's event loop, and
    generated on the one ``submit`` thread. A backend sets ``max_context``, ``eos_ids``, ``max_piece_chars`` and
    ``n_params`` and implements ``encode_text``, ``vocab_size``, ``render_chat`` and ``generate``.
    """

    PREP_THREADS = 2
    # Input characters per token at most, over the longest vocabulary piece: normalisation may fold a few
    # characters into one (a letter and its combining accent), so allow four times the longest piece.
    CHARS_PER_PIECE_SLACK = 4

    max_context: int
    eos_ids: list[int]
    max_piece_chars: int
    n_params: int
    backend = "?"

    def _start_threads(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="generate")
        self._prep = ThreadPoolExecutor(max_workers=self.PREP_THREADS, thread_name_prefix="prepare")

    @property
    def max_prompt_chars(self) -> int:
        """A text longer than this has more tokens than the context holds (refused without tokenizing it)."""
        return self.max_context * max(1, self.max_piece_chars) * self.CHARS_PER_PIECE_SLACK

    # --- prompts (run on a prep thread) -----------------------------------------------------------

    def encode(self, prompt: str | list[int], param: str = "prompt") -> list[int]:
        if isinstance(prompt, str):
            if len(prompt) > self.max_prompt_chars:
                raise self.too_long(f"at least {len(prompt) // (self.max_piece_chars * self.CHARS_PER_PIECE_SLACK):,}",
                                    None, param)
            ids = self.encode_text(prompt)
        else:
            if len(prompt) > self.max_context:
                raise self.too_long(f"{len(prompt):,}", None, param)
            vocab = self.vocab_size()
            bad = [t for t in prompt if not 0 <= t < vocab]
            if bad:
                raise APIError(400, f"token id {bad[0]} is outside the vocabulary (0..{vocab - 1}).",
                               param=param, code="invalid_value")
            ids = list(prompt)
        if not ids:     # an empty prompt starts a new document: the end-of-document token precedes every one
            if not self.eos_ids:
                raise APIError(400, "the prompt is empty.", param=param, code="invalid_value")
            ids = [self.eos_ids[0]]
        return ids

    def too_long(self, prompt_tokens: str, asked: int | None, param: str) -> APIError:
        asked_s = f"{asked} for the completion" if asked is not None else "and at least 1 for the completion"
        return APIError(400, f"This model's maximum context length is {self.max_context} tokens. However, your "
                             f"{param} has {prompt_tokens} tokens ({asked_s}). Please reduce the length of the "
                             f"{param} or the completion.", param=param, code="context_length_exceeded")

    def budget(self, prompt_len: int, max_tokens: int | None, default: int | None, param: str) -> int:
        """The number of tokens to generate, or a context_length_exceeded error."""
        room = self.max_context - prompt_len
        if room < 1 or (max_tokens is not None and max_tokens > room):
            asked = max_tokens if max_tokens is not None else 1
            raise APIError(400, f"This model's maximum context length is {self.max_context} tokens. However, "
                                f"you requested {prompt_len + asked} tokens ({prompt_len} in the {param}, "
                                f"{asked} for the completion). Please reduce the length of the {param} or the "
                                "completion.", param=param, code="context_length_exceeded")
        if max_tokens is not None:
            return max_tokens
        return min(default, room) if default else room

    def prep(self, fn: Callable, *args):
        return self._prep.submit(fn, *args)

    # --- generation (runs on the worker thread) ---------------------------------------------------

    def submit(self, fn: Callable, *args):
        return self._executor.submit(fn, *args)


class Engine(EngineBase):
    """An exported Hugging Face model on CPU with torch: the model, its tokenizer, and the threads that run them."""

    backend = "torch"

    def __init__(self, model_dir: str | Path, threads: int | None = None):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if threads:
            torch.set_num_threads(threads)
        self.model_dir = str(model_dir)
        self.tokenizer = AutoTokenizer.from_pretrained(self.model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(self.model_dir, dtype=torch.float32).eval()
        cfg = self.model.config
        ctx = getattr(cfg, "max_position_embeddings", None) or 2048
        tok_max = getattr(self.tokenizer, "model_max_length", None)
        if isinstance(tok_max, int) and 0 < tok_max < ctx:
            ctx = tok_max
        self.max_context = int(ctx)
        eos = self.model.generation_config.eos_token_id
        eos = eos if isinstance(eos, list) else [eos] if eos is not None else []
        if self.tokenizer.eos_token_id is not None and self.tokenizer.eos_token_id not in eos:
            eos.append(self.tokenizer.eos_token_id)
        self.eos_ids = eos
        pad = self.tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else (eos[0] if eos else 0)
        self.n_params = sum(p.numel() for p in self.model.parameters())
        self.max_piece_chars = max(len(piece) for piece in self.tokenizer.get_vocab())
        self._start_threads()

    def vocab_size(self) -> int:
        return len(self.tokenizer)

    def encode_text(self, text: str) -> list[int]:
        # The batch call of a fast tokenizer releases the GIL (the single-text call holds it), so a long
        # prompt being tokenized never stalls the event loop.
        if getattr(self.tokenizer, "is_fast", False):
            return self.tokenizer.backend_tokenizer.encode_batch([text], add_special_tokens=True)[0].ids
        return self.tokenizer(text, add_special_tokens=True)["input_ids"]

    def render_chat(self, messages: list[dict]) -> tuple[str, list[str]]:
        """(prompt text, extra stop sequences) for a conversation."""
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True), []
        text = self.tokenizer.apply_chat_template(messages, chat_template=SIMPLE_CHAT_TEMPLATE, tokenize=False,
                                                  add_generation_prompt=True)
        return text, [SIMPLE_TEMPLATE_STOP]

    def generate(self, ids: list[int], max_new: int, sampling: Sampling, stops: list[str],
                 on_text: Callable[[str], None] | None = None,
                 cancelled: threading.Event | None = None) -> Generation:
        import torch
        from transformers import GenerationConfig, StoppingCriteria, StoppingCriteriaList

        prompt_len = len(ids)
        tracker = TextTracker(self.tokenizer, stops, ids)
        engine = self

        class Watch(StoppingCriteria):
            def __call__(self, input_ids, scores, **kwargs):
                new = input_ids[0, prompt_len:].tolist()
                if new and new[-1] in engine.eos_ids:
                    new = new[:-1]
                piece = tracker.update(new)
                if piece and on_text:
                    on_text(piece)
                stop = tracker.stopped_at is not None or (cancelled is not None and cancelled.is_set())
                return torch.full((input_ids.shape[0],), stop, dtype=torch.bool, device=input_ids.device)

        if cancelled is not None and cancelled.is_set():
            return Generation("", "stop", prompt_len, 0)
        greedy = sampling.greedy
        config = GenerationConfig(max_new_tokens=max_new, do_sample=not greedy,
                                  temperature=None if greedy else sampling.temperature,
                                  top_p=None if greedy else sampling.top_p, top_k=None if greedy else 0,
                                  eos_token_id=self.eos_ids or None, pad_token_id=self.pad_id)
        if sampling.seed is not None:
            torch.manual_seed(sampling.seed)
        inputs = torch.tensor([ids], dtype=torch.long)
        with torch.inference_mode():
            out = self.model.generate(inputs, attention_mask=torch.ones_like(inputs), generation_config=config,
                                      stopping_criteria=StoppingCriteriaList([Watch()]))
        new = out[0, prompt_len:].tolist()
        ended_on_eos = bool(new) and new[-1] in self.eos_ids
        if ended_on_eos:
            new = new[:-1]
        rest = tracker.finish(new)
        if rest and on_text:
            on_text(rest)
        reason = "stop" if tracker.stopped_at is not None or ended_on_eos else "length"
        return Generation(tracker.result(), reason, prompt_len, len(out[0]) - prompt_len)
