"""The OpenAI-compatible HTTP API over an ``Engine``: /v1/models, /v1/completions, /v1/chat/completions.

Every failure is answered as OpenAI error JSON with its status (400 bad JSON or parameters, 404 unknown
model or path, 405 wrong method, 500 a bug), and the server goes on serving. Streaming sends
``data: {chunk}\\n\\n`` server-sent events in OpenAI's chunk format and ends with ``data: [DONE]``; a client
that disconnects mid-stream stops its generation at the next token.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from train.serving import protocol as P
from train.serving.engine import COMPLETION_DEFAULT_MAX_TOKENS, Engine

log = logging.getLogger("glassbox.serve")


def create_app(engine: Engine, model_name: str) -> FastAPI:
    app = FastAPI(title="Glassbox OpenAI-compatible server", docs_url=None, redoc_url=None, openapi_url=None)
    created = int(time.time())

    @app.exception_handler(P.APIError)
    async def api_error(_: Request, exc: P.APIError):
        return JSONResponse(exc.body(), status_code=exc.status)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code)
        return JSONResponse(P.error_body(str(exc.detail), "invalid_request_error", None, code),
                            status_code=exc.status_code)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError):
        return JSONResponse(P.error_body(str(exc), "invalid_request_error"), status_code=400)

    @app.exception_handler(Exception)
    async def internal_error(_: Request, exc: Exception):
        log.exception("internal error")
        return JSONResponse(P.error_body(f"internal server error: {type(exc).__name__}: {exc}", "server_error"),
                            status_code=500)

    def model_card() -> dict:
        return {"id": model_name, "object": "model", "created": created, "owned_by": "glassbox",
                "max_model_len": engine.max_context}

    @app.get("/health")
    async def health():
        return {"status": "ok"}

    @app.get("/v1/models")
    async def list_models():
        return {"object": "list", "data": [model_card()]}

    @app.get("/v1/models/{name:path}")
    async def get_model(name: str):
        if name != model_name:
            raise unknown_model(name)
        return model_card()

    def unknown_model(name: str) -> P.APIError:
        return P.APIError(404, f"The model '{name}' does not exist. This server serves '{model_name}'.",
                          param="model", code="model_not_found")

    async def handle(request: Request, kind: str):
        body = P.parse_json(await request.body())
        req = P.parse_completion(body) if kind == "completion" else P.parse_chat(body)
        if req.model != model_name:
            raise unknown_model(req.model)
        jobs = plan(req)            # checks every prompt against the context before generating anything
        if req.stream:
            return StreamingResponse(stream(req, jobs), media_type="text/event-stream",
                                     headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        loop = asyncio.get_running_loop()
        choices, prompt_tokens, completion_tokens = [], 0, 0
        for index, (ids, max_new, stops) in enumerate(jobs):
            gen = await asyncio.wrap_future(engine.submit(engine.generate, ids, max_new, req.sampling, stops),
                                            loop=loop)
            choices.append(P.choice(kind, index, gen.text, gen.finish_reason))
            completion_tokens += gen.completion_tokens
            if index % req.n == 0:
                prompt_tokens += gen.prompt_tokens
        return P.response(kind, P.new_id(kind), model_name, choices, P.usage(prompt_tokens, completion_tokens))

    def plan(req: P.Request) -> list[tuple[list[int], int, list[str]]]:
        """(prompt ids, tokens to generate, stop sequences) per choice, prompt-major as OpenAI orders them."""
        jobs = []
        for prompt in req.prompts:
            if req.kind == "chat":
                text, extra = engine.render_chat(prompt)
                ids, param, default = engine.encode(text, "messages"), "messages", None
            else:
                extra, param, default = [], "prompt", COMPLETION_DEFAULT_MAX_TOKENS
                ids = engine.encode(prompt, "prompt")
            max_new = engine.budget(len(ids), req.sampling.max_tokens, default, param)
            jobs += [(ids, max_new, req.sampling.stop + extra)] * req.n
        return jobs

    async def stream(req: P.Request, jobs):
        kind, rid, created_at = req.kind, P.new_id(req.kind), int(time.time())
        loop = asyncio.get_running_loop()
        cancelled = threading.Event()
        prompt_tokens = completion_tokens = 0
        try:
            for index, (ids, max_new, stops) in enumerate(jobs):
                queue: asyncio.Queue = asyncio.Queue()

                def on_text(piece: str, q=queue):
                    loop.call_soon_threadsafe(q.put_nowait, piece)

                fut = engine.submit(engine.generate, ids, max_new, req.sampling, stops, on_text, cancelled)
                fut.add_done_callback(lambda _f, q=queue: loop.call_soon_threadsafe(q.put_nowait, None))
                if kind == "chat":
                    yield P.sse(P.chunk(kind, rid, created_at, model_name, index, text="", role=True))
                while (piece := await queue.get()) is not None:
                    yield P.sse(P.chunk(kind, rid, created_at, model_name, index, text=piece))
                try:
                    gen = fut.result()
                except Exception as e:      # headers are sent: report in the stream, then end it
                    log.exception("generation failed")
                    yield P.sse(P.error_body(f"internal server error: {type(e).__name__}: {e}", "server_error"))
                    break
                completion_tokens += gen.completion_tokens
                if index % req.n == 0:
                    prompt_tokens += gen.prompt_tokens
                yield P.sse(P.chunk(kind, rid, created_at, model_name, index,
                                    text=None if kind == "chat" else "", finish_reason=gen.finish_reason))
            else:
                if req.include_usage:
                    yield P.sse(P.chunk(kind, rid, created_at, model_name, None,
                                        use=P.usage(prompt_tokens, completion_tokens)))
            yield P.sse("[DONE]")
        finally:
            cancelled.set()         # a client that went away frees the model at the next token

    @app.post("/v1/completions")
    async def completions(request: Request):
        return await handle(request, "completion")

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        return await handle(request, "chat")

    return app
