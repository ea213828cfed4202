"""The server's edge: request ids, the optional API key, the request-body limit, and what a 500 may say.

``Guard`` is a plain ASGI middleware wrapped around the whole app, so it sees every request before routing:

- every request gets an id (``X-Request-Id`` on the answer); a failure nobody anticipated is answered 500
  with that id and a generic message, and the traceback goes to the server log under the same id, never to
  the client (exception text can hold paths, prompt fragments, library internals);
- with an API key set, every path but ``/health`` needs ``Authorization: Bearer <key>`` (what the OpenAI client
  sends); the key is compared in constant time (``hmac.compare_digest``) and a wrong or missing one is
  answered 401 in OpenAI's error shape.

``read_body`` reads a request body up to a byte limit: a declared ``Content-Length`` over it is refused with 413
before one byte is read, and a chunked body is counted as it arrives and refused once it passes the limit.
The server reads and discards the rest of a refused body at the socket, so the client still gets its 413 and
the event loop stays free for everyone else.
"""
from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import uuid

from train.serving.protocol import APIError, error_body

log = logging.getLogger("glassbox.serve")

DEFAULT_MAX_BODY_BYTES = 4 * 2 ** 20      # 4 MiB: a full context of text many times over
OPEN_PATHS = ("/health",)                 # answered without a key, for load balancers and probes


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server on this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:                    # a host name: it may resolve anywhere
        return False


def exposure_warning(host: str, api_key: str | None) -> str | None:
    if api_key or is_loopback(host):
        return None
    return (f"serve: WARNING: listening on {host}, beyond this machine, without an API key: anyone who can reach "
            "the port can use the model. Set GLASSBOX_API_KEY (make serve ... API_KEY=...) or bind 127.0.0.1.")


def _json_response(status: int, body: dict, request_id: str, extra: list | None = None) -> list[dict]:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
               (b"x-request-id", request_id.encode())] + (extra or [])
    return [{"type": "http.response.start", "status": status, "headers": headers},
            {"type": "http.response.body", "body": data}]


def _bearer(scope) -> bytes | None:
    for name, value in scope.get("headers") or []:
        if name == b"authorization":
            scheme, _, token = value.partition(b" ")
            return token.strip() if scheme.lower() == b"bearer" else b""
    return None


class Guard:
    def __init__(self, app, api_key: str | None = None):
        self.app = app
        self.key = api_key.encode() if api_key else None

    def authorized(self, scope) -> tuple[bool, str]:
        token = _bearer(scope)
        if token is None:
            return False, ("You didn't provide an API key. Send it in an Authorization header: "
                           "'Authorization: Bearer YOUR_KEY'.")
        if not hmac.compare_digest(token, self.key):
            return False, "Incorrect API key provided."
        return True, ""

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        rid = "req-" + uuid.uuid4().hex[:20]
        scope.setdefault("state", {})["request_id"] = rid
        started = False

        async def send_with_id(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message = {**message, "headers": list(message.get("headers") or []) + [(b"x-request-id", rid.encode())]}
            await send(message)

        if self.key is not None and scope["path"] not in OPEN_PATHS:
            ok, why = self.authorized(scope)
            if not ok:
                for m in _json_response(401, error_body(why, "invalid_request_error", None, "invalid_api_key"), rid,
                                        [(b"www-authenticate", b"Bearer")]):
                    await send(m)
                return
        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            log.exception("internal error in request %s (%s %s)", rid, scope.get("method"), scope.get("path"))
            if not started:
                for m in _json_response(500, internal_error_body(rid), rid):
                    await send(m)


def internal_error_body(request_id: str) -> dict:
    return error_body(f"The server had an error while processing your request (request id {request_id}); the "
                      "server log has the details under that id.", "server_error")


def request_id(request) -> str:
    return getattr(request.state, "request_id", "unknown")


async def read_body(request, max_bytes: int) -> bytes:
    def too_large(size: str) -> APIError:
        return APIError(413, f"The request body is {size} bytes; this server takes at most {max_bytes:,} "
                             "(--max-body-bytes).", code="request_too_large")

    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise too_large(f"{int(declared):,}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise too_large(f"more than {max_bytes:,}")
        chunks.append(chunk)
    return b"".join(chunks)
