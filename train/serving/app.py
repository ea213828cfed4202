"""The OpenAI-compatible HTTP API over an engine: /v1/models, /v1/completions, /v1/chat/completions.

Every failure is answered as OpenAI error JSON with its status (400 bad JSON or parameters, 401 a missing or
wrong API key, 404 unknown model or path, 405 wrong method, 413 a body over the limit, 500 a bug: a generic
message with the request id, the detail in the server log), and the server goes on serving. Streaming sends
``data: {chunk}\\n\\n`` server-sent events in OpenAI's chunk format and ends with ``data: [DONE]``.

The event loop only moves bytes: the body is read up to ``max_body_bytes``, parsed, checked and tokenized on the
engine's preparation threads (train/serving/intake.py, which also holds the request to its work budget), and the
model runs on the engine's one worker thread. A client that goes away, streaming or not, stops its generation
at the next token, and its queued choices never start.
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
from train.serving.engine import EngineBase
from train.serving.guard import DEFAULT_MAX_BODY_BYTES, Guard, internal_error_body, read_body, request_id
from train.serving.intake import default_budget, prepare

log = logging.getLogger("glassbox.serve")


def create_app(engine: EngineBase, model_name: str, *, api_key: str | None = None,
               max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, max_request_tokens: int | None = None):
    """The ASGI app: FastAPI's routes inside ``Guard`` (request ids, API key, the 500 contract)."""
    app = FastAPI(title="Glassbox OpenAI-compatible server", docs_url=None, redoc_url=None, openapi_url=None)
    created = int(time.time())
    budget = max_request_tokens or default_budget(engine)
    app.state.limits = {"max_body_bytes": max_body_bytes, "max_request_tokens": budget}

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
    async def internal_error(request: Request, _: Exception):
        # Starlette answers with this, then re-raises to Guard, which logs the traceback under the same id.
        return JSONResponse(internal_error_body(request_id(request)), status_code=500)

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
            raise P.unknown_model(name, model_name)
        return model_card()

    async def handle(request: Request, kind: str):
        raw = await read_body(request, max_body_bytes)
        loop = asyncio.get_running_loop()
        req, jobs = await asyncio.wrap_future(engine.prep(prepare, engine, model_name, raw, kind, budget), loop=loop)
        del raw
        if req.stream:
            return StreamingResponse(stream(req, jobs, request_id(request)), media_type="text/event-stream",
                                     headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        cancelled = threading.Event()
        watcher = asyncio.create_task(watch_disconnect(request, cancelled))
        try:
            choices, prompt_tokens, completion_tokens = [], 0, 0
            for index, job in enumerate(jobs):
                gen = await asyncio.wrap_future(engine.submit(engine.generate, job.ids, job.max_new, req.sampling,
                                                              job.stops, None, cancelled), loop=loop)
                completion_tokens += gen.completion_tokens
                if cancelled.is_set():
                    gone(request_id(request), completion_tokens, jobs, index)
                    return JSONResponse(P.error_body("client disconnected", "invalid_request_error"), 499)
                choices.append(P.choice(kind, index, gen.text, gen.finish_reason))
                if index % req.n == 0:
                    prompt_tokens += gen.prompt_tokens
        finally:
            cancelled.set()         # nothing of this request runs after it returned or failed
            watcher.cancel()
        return P.response(kind, P.new_id(kind), model_name, choices, P.usage(prompt_tokens, completion_tokens))

    def gone(rid: str, generated: int, jobs, index: int) -> None:
        log.info("request %s: the client went away; generation stopped after %d generated tokens of up to %d "
                 "(choice %d of %d)", rid, generated, sum(j.max_new for j in jobs), index + 1, len(jobs))

    async def watch_disconnect(request: Request, cancelled: threading.Event) -> None:
        """Sets ``cancelled`` when the client closes the connection (the body is read: the next message the
        server gets for this request is the disconnect)."""
        while (await request.receive())["type"] != "http.disconnect":
            pass
        cancelled.set()

    async def stream(req: P.Request, jobs, rid: str):
        kind, sid, created_at = req.kind, P.new_id(req.kind), int(time.time())
        loop = asyncio.get_running_loop()
        cancelled = threading.Event()
        prompt_tokens = completion_tokens = index = 0
        finished, fut = False, None
        try:
            for index, job in enumerate(jobs):
                queue: asyncio.Queue = asyncio.Queue()

                def on_text(piece: str, q=queue):
                    loop.call_soon_threadsafe(q.put_nowait, piece)

                fut = engine.submit(engine.generate, job.ids, job.max_new, req.sampling, job.stops, on_text, cancelled)
                fut.add_done_callback(lambda _f, q=queue: loop.call_soon_threadsafe(q.put_nowait, None))
                if kind == "chat":
                    yield P.sse(P.chunk(kind, sid, created_at, model_name, index, text="", role=True))
                while (piece := await queue.get()) is not None:
                    yield P.sse(P.chunk(kind, sid, created_at, model_name, index, text=piece))
                try:
                    gen = fut.result()
                except Exception:      # headers are sent: report in the stream, then end it
                    log.exception("internal error in request %s (generation)", rid)
                    yield P.sse(internal_error_body(rid))
                    break
                fut = None
                completion_tokens += gen.completion_tokens
                if index % req.n == 0:
                    prompt_tokens += gen.prompt_tokens
                yield P.sse(P.chunk(kind, sid, created_at, model_name, index,
                                    text=None if kind == "chat" else "", finish_reason=gen.finish_reason))
            else:
                if req.include_usage:
                    yield P.sse(P.chunk(kind, sid, created_at, model_name, None,
                                        use=P.usage(prompt_tokens, completion_tokens)))
            yield P.sse("[DONE]")
            finished = True
        finally:
            cancelled.set()         # a client that went away frees the model at the next token
            if not finished and fut is not None:      # say what ran, once the stopped choice returned
                fut.add_done_callback(lambda f, at=index, before=completion_tokens: gone(
                    rid, before + (0 if f.exception() else f.result().completion_tokens), jobs, at))
            elif not finished:
                gone(rid, completion_tokens, jobs, index)

    @app.post("/v1/completions")
    async def completions(request: Request):
        return await handle(request, "completion")

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        return await handle(request, "chat")

    return Guard(app, api_key)
