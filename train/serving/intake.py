"""From a request body to the generations it asks for: parse, check, tokenize, and hold it to a work budget.

Runs on the engine's preparation threads, never on the event loop (a multi-megabyte prompt takes seconds to
parse and tokenize). The work budget bounds what one request may make the model do: the tokens it may generate,
summed over every prompt and every one of its ``n`` choices (prompts x n x max_tokens), at most
``max_request_tokens`` (default ``MAX_N`` x the context: eight full-length answers). A request over it is refused
with 400 before anything is generated; when ``max_tokens`` is given the check comes before tokenization too.
"""
from __future__ import annotations

from dataclasses import dataclass

from train.serving import protocol as P
from train.serving.engine import COMPLETION_DEFAULT_MAX_TOKENS, EngineBase


@dataclass
class Job:
    ids: list[int]          # prompt token ids
    max_new: int            # tokens to generate at most
    stops: list[str]        # stop sequences


def default_budget(engine: EngineBase) -> int:
    return P.MAX_N * engine.max_context


def over_budget(tokens: int, req: P.Request, budget: int, how: str) -> P.APIError:
    return P.APIError(400, f"This request asks for up to {tokens:,} generated tokens ({how}); this server allows at "
                           f"most {budget:,} per request (--max-request-tokens). Send fewer prompts, a smaller 'n' "
                           "or a smaller 'max_tokens', or split the work over several requests.",
                      param="max_tokens", code="request_too_large")


def prepare(engine: EngineBase, model_name: str, raw: bytes, kind: str, budget: int) -> tuple[P.Request, list[Job]]:
    """The checked request and its jobs, one per choice, prompt-major as OpenAI orders them."""
    body = P.parse_json(raw)
    req = P.parse_completion(body) if kind == "completion" else P.parse_chat(body)
    if req.model != model_name:
        raise P.unknown_model(req.model, model_name)
    least = req.sampling.max_tokens or (COMPLETION_DEFAULT_MAX_TOKENS if kind == "completion" else 1)
    if len(req.prompts) * req.n * least > budget:       # a lower bound of the work: refuse before tokenizing
        raise over_budget(len(req.prompts) * req.n * least, req, budget,
                          f"{len(req.prompts)} prompt(s) x n {req.n} x {least} tokens")
    jobs = []
    for prompt in req.prompts:
        if kind == "chat":
            chars = sum(len(m["content"]) for m in prompt)
            if chars > engine.max_prompt_chars:         # the rendered chat is longer still
                raise engine.too_long(f"at least {chars // (engine.max_piece_chars * engine.CHARS_PER_PIECE_SLACK):,}",
                                      None, "messages")
            text, extra = engine.render_chat(prompt)
            ids, param, default = engine.encode(text, "messages"), "messages", None
        else:
            extra, param, default = [], "prompt", COMPLETION_DEFAULT_MAX_TOKENS
            ids = engine.encode(prompt, "prompt")
        max_new = engine.budget(len(ids), req.sampling.max_tokens, default, param)
        jobs += [Job(ids, max_new, req.sampling.stop + extra) for _ in range(req.n)]
    total = sum(j.max_new for j in jobs)
    if total > budget:
        raise over_budget(total, req, budget, f"{len(req.prompts)} prompt(s) x n {req.n}, up to the context")
    return req, jobs
