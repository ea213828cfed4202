"""The OpenAI wire format: request checking, error bodies, response and stream-chunk shapes.

Requests are checked field by field here (not by a schema library) so that every mistake becomes an
OpenAI-style error with the right status and the name of the offending field::

    {"error": {"message": "...", "type": "invalid_request_error", "param": "temperature", "code": null}}

Parameters a client may send but this server cannot honour (logprobs, penalties, logit_bias, tools, ...)
are refused with 400 when set to anything but their neutral value, rather than silently ignored. Unknown
fields are ignored, as OpenAI-compatible servers commonly do.

Every value that passes these checks runs: numbers must be finite (JSON's NaN and Infinity are refused), a
temperature below ``GREEDY_BELOW`` is greedy decoding (dividing logits by 1e-300 overflows to inf/nan),
seeds fit in 64 bits, and every string in the body must be encodable as UTF-8 (JSON escapes can carry lone
surrogates such as "\\ud800", which no tokenizer can take).
"""
from __future__ import annotations

import json
import math
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

MAX_N = 8          # choices per prompt
MAX_STOP = 4       # stop sequences, as OpenAI allows
GREEDY_BELOW = 1e-5   # temperatures below this decode greedily: logits / 1e-5 stay finite in fp32
SEED_MIN, SEED_MAX = -2 ** 63, 2 ** 64 - 1    # what a 64-bit generator seed can hold (torch.manual_seed's range)


class APIError(Exception):
    """An error answered as OpenAI error JSON."""

    def __init__(self, status: int, message: str, *, param: str | None = None, code: str | None = None,
                 type: str | None = None):
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code
        self.type = type or ("invalid_request_error" if status < 500 else "server_error")

    def body(self) -> dict:
        return error_body(self.message, self.type, self.param, self.code)


def error_body(message: str, type: str = "invalid_request_error", param: str | None = None,
               code: str | None = None) -> dict:
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def bad(param: str, message: str, code: str | None = None) -> APIError:
    return APIError(400, message, param=param, code=code)


def unknown_model(name: str, served: str) -> APIError:
    return APIError(404, f"The model '{name}' does not exist. This server serves '{served}'.", param="model",
                    code="model_not_found")


@dataclass
class Sampling:
    """What one generation needs, checked."""
    max_tokens: int | None          # None: the endpoint's default (completions 16, chat the rest of the context)
    temperature: float = 1.0
    top_p: float = 1.0
    stop: list[str] = field(default_factory=list)
    seed: int | None = None

    @property
    def greedy(self) -> bool:
        return self.temperature < GREEDY_BELOW


@dataclass
class Request:
    kind: str                       # "completion" | "chat"
    model: str
    prompts: list[Any]              # completions: str or list[int] each; chat: one list of messages
    sampling: Sampling
    n: int = 1
    stream: bool = False
    include_usage: bool = False


def parse_json(raw: bytes) -> dict:
    try:
        body = json.loads(raw)
    except RecursionError:
        raise APIError(400, "The JSON body of your request is nested too deeply.", code="invalid_json") from None
    except ValueError as e:     # JSONDecodeError, UnicodeDecodeError, an integer past Python's digit limit
        raise APIError(400, f"We could not parse the JSON body of your request ({e}). The body must be a JSON "
                            "object.", code="invalid_json") from None
    if not isinstance(body, dict):
        raise APIError(400, f"The request body must be a JSON object, got {type(body).__name__}.",
                       code="invalid_json")
    check_text(body)
    return body


def check_text(body: dict) -> None:
    """Refuse strings that cannot be UTF-8 (lone surrogates from JSON escapes), naming where they are."""
    stack: list[tuple[Any, str]] = [(body, "")]
    while stack:
        v, where = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError as e:
                raise bad(where or None, f"'{where}' is not valid Unicode text (a lone surrogate "
                                         f"{json.dumps(v[e.start])} at character {e.start}); send UTF-8 text.",
                          "invalid_text") from None
        elif isinstance(v, dict):
            for k, x in v.items():
                try:
                    k.encode("utf-8")
                except UnicodeEncodeError:
                    raise bad(where or None, f"a key in '{where or 'the body'}' is not valid Unicode text (a "
                                             "lone surrogate); send UTF-8 text.", "invalid_text") from None
                stack.append((x, f"{where}.{k}" if where else k))
        elif isinstance(v, list):
            stack.extend((x, f"{where}[{i}]") for i, x in enumerate(v))


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _number(body: dict, key: str, default: float, lo: float, hi: float, lo_open: bool = False) -> float:
    v = body.get(key)
    if v is None:
        return default
    if not _is_num(v):
        raise bad(key, f"'{key}' must be a number, got {json.dumps(v)}.", "invalid_type")
    if isinstance(v, float) and not math.isfinite(v):
        raise bad(key, f"'{key}' must be a finite number, got {v}.", "invalid_value")
    if v < lo or (lo_open and v == lo) or v > hi:
        left = "(" if lo_open else "["
        raise bad(key, f"'{key}' must be in {left}{lo:g}, {hi:g}], got {v}.", "invalid_value")
    return float(v)


def _int(body: dict, key: str, lo: int | None = None, hi: int | None = None) -> int | None:
    v = body.get(key)
    if v is None:
        return None
    if not _is_int(v):
        raise bad(key, f"'{key}' must be an integer, got {json.dumps(v)}.", "invalid_type")
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"between {lo} and {hi}"
        raise bad(key, f"'{key}' must be {rng}, got {v}.", "invalid_value")
    return v


def _bool(body: dict, key: str) -> bool:
    v = body.get(key, False)
    if v is None:
        return False
    if not isinstance(v, bool):
        raise bad(key, f"'{key}' must be a boolean, got {json.dumps(v)}.", "invalid_type")
    return v


def _unsupported(body: dict, key: str, neutral=(None,)) -> None:
    v = body.get(key)
    if v is not None and v not in neutral:
        raise bad(key, f"'{key}' = {json.dumps(v)} is not supported by this server.", "unsupported_parameter")


def _stop(body: dict) -> list[str]:
    v = body.get("stop")
    if v is None:
        return []
    stops = [v] if isinstance(v, str) else v
    if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
        raise bad("stop", "'stop' must be a string or a list of strings.", "invalid_type")
    if len(stops) > MAX_STOP:
        raise bad("stop", f"'stop' takes at most {MAX_STOP} sequences, got {len(stops)}.", "invalid_value")
    if any(s == "" for s in stops):
        raise bad("stop", "'stop' sequences must not be empty.", "invalid_value")
    return stops


def _common(body: dict, kind: str) -> tuple[str, Sampling, int, bool, bool]:
    model = body.get("model")
    if model is None:
        raise bad("model", "you must provide a model parameter", "missing_required_parameter")
    if not isinstance(model, str):
        raise bad("model", f"'model' must be a string, got {json.dumps(model)}.", "invalid_type")
    max_tokens = _int(body, "max_tokens", lo=1)
    if kind == "chat" and body.get("max_completion_tokens") is not None:
        max_tokens = _int(body, "max_completion_tokens", lo=1)
    sampling = Sampling(max_tokens=max_tokens,
                        temperature=_number(body, "temperature", 1.0, 0.0, 2.0),
                        top_p=_number(body, "top_p", 1.0, 0.0, 1.0, lo_open=True),
                        stop=_stop(body),
                        seed=_int(body, "seed", lo=SEED_MIN, hi=SEED_MAX))
    n = _int(body, "n", lo=1, hi=MAX_N) or 1
    stream = _bool(body, "stream")
    opts = body.get("stream_options")
    if opts is not None and not isinstance(opts, dict):
        raise bad("stream_options", "'stream_options' must be an object.", "invalid_type")
    if opts and not stream:
        raise bad("stream_options", "'stream_options' is only allowed when 'stream' is true.", "invalid_value")
    include_usage = bool(_bool(opts, "include_usage")) if opts else False
    for key in ("presence_penalty", "frequency_penalty"):
        v = _number(body, key, 0.0, -2.0, 2.0)
        if v != 0.0:
            raise bad(key, f"'{key}' other than 0 is not supported by this server.", "unsupported_parameter")
    _unsupported(body, "logit_bias", (None, {}))
    return model, sampling, n, stream, include_usage


def parse_completion(body: dict) -> Request:
    model, sampling, n, stream, include_usage = _common(body, "completion")
    prompt = body.get("prompt")
    if prompt is None:
        raise bad("prompt", "you must provide a prompt parameter", "missing_required_parameter")
    if isinstance(prompt, str) or (isinstance(prompt, list) and prompt and all(_is_int(t) for t in prompt)):
        prompts = [prompt]
    elif isinstance(prompt, list) and prompt and all(
            isinstance(p, str) or (isinstance(p, list) and p and all(_is_int(t) for t in p)) for p in prompt):
        prompts = list(prompt)
    else:
        raise bad("prompt", "'prompt' must be a string, a list of strings, a list of token ids or a list of "
                            "lists of token ids (non-empty).", "invalid_type")
    _unsupported(body, "logprobs", (None, 0))
    _unsupported(body, "echo", (None, False))
    _unsupported(body, "suffix", (None, ""))
    best_of = _int(body, "best_of", lo=1)
    if best_of is not None and best_of != n:
        raise bad("best_of", "'best_of' other than n is not supported by this server.", "unsupported_parameter")
    return Request("completion", model, prompts, sampling, n, stream, include_usage)


CHAT_ROLES = ("system", "developer", "user", "assistant")


def parse_chat(body: dict) -> Request:
    model, sampling, n, stream, include_usage = _common(body, "chat")
    messages = body.get("messages")
    if messages is None:
        raise bad("messages", "you must provide a messages parameter", "missing_required_parameter")
    if not isinstance(messages, list) or not messages:
        raise bad("messages", "'messages' must be a non-empty list.", "invalid_type")
    out = []
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(m, dict):
            raise bad(where, f"'{where}' must be an object with 'role' and 'content'.", "invalid_type")
        role, content = m.get("role"), m.get("content")
        if role not in CHAT_ROLES:
            raise bad(f"{where}.role", f"'{where}.role' must be one of {', '.join(CHAT_ROLES)}; got "
                                       f"{json.dumps(role)}.", "invalid_value")
        if isinstance(content, list):       # content parts: only text
            texts = []
            for j, part in enumerate(content):
                if not (isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)):
                    raise bad(f"{where}.content[{j}]", "only text content parts are supported.", "invalid_value")
                texts.append(part["text"])
            content = "".join(texts)
        if content is None and role == "assistant":
            content = ""
        if not isinstance(content, str):
            raise bad(f"{where}.content", f"'{where}.content' must be a string or a list of text parts.",
                      "invalid_type")
        out.append({"role": "system" if role == "developer" else role, "content": content})
    _unsupported(body, "logprobs", (None, False))
    _unsupported(body, "top_logprobs", (None, 0))
    _unsupported(body, "tools", (None, []))
    _unsupported(body, "tool_choice", (None, "none"))
    rf = body.get("response_format")
    if rf is not None and rf != {"type": "text"}:
        raise bad("response_format", "only response_format {\"type\": \"text\"} is supported by this server.",
                  "unsupported_parameter")
    return Request("chat", model, [out], sampling, n, stream, include_usage)


# --- responses ---------------------------------------------------------------------------------------

def new_id(kind: str) -> str:
    return ("chatcmpl-" if kind == "chat" else "cmpl-") + uuid.uuid4().hex


def usage(prompt_tokens: int, completion_tokens: int) -> dict:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}


def choice(kind: str, index: int, text: str, finish_reason: str | None) -> dict:
    if kind == "chat":
        return {"index": index, "message": {"role": "assistant", "content": text}, "logprobs": None,
                "finish_reason": finish_reason}
    return {"index": index, "text": text, "logprobs": None, "finish_reason": finish_reason}


def response(kind: str, rid: str, model: str, choices: list[dict], use: dict) -> dict:
    return {"id": rid, "object": "chat.completion" if kind == "chat" else "text_completion",
            "created": int(time.time()), "model": model, "choices": choices, "usage": use}


def chunk(kind: str, rid: str, created: int, model: str, index: int | None, *, text: str | None = None,
          role: bool = False, finish_reason: str | None = None, use: dict | None = None) -> dict:
    """One streamed chunk; ``index=None`` makes the final usage-only chunk (``choices: []``)."""
    obj = "chat.completion.chunk" if kind == "chat" else "text_completion"
    out: dict[str, Any] = {"id": rid, "object": obj, "created": created, "model": model}
    if index is None:
        out["choices"] = []
    elif kind == "chat":
        delta: dict[str, Any] = {}
        if role:
            delta["role"] = "assistant"
        if text is not None:
            delta["content"] = text
        out["choices"] = [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]
    else:
        out["choices"] = [{"index": index, "text": text or "", "logprobs": None, "finish_reason": finish_reason}]
    if use is not None:
        out["usage"] = use
    return out


def sse(obj: dict | str) -> bytes:
    data = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
    return f"data: {data}\n\n".encode()
