"""Batch inference through an OpenAI-compatible server: a JSONL file of requests in, a JSONL file of results out.

    glassbox batch INPUT.jsonl OUTPUT.jsonl --url http://127.0.0.1:8000/v1 [--concurrency 8]

Input, one JSON object a line: ``{"id": ..., "prompt": "..."}`` (``/v1/completions``) or
``{"id": ..., "messages": [...]}`` (``/v1/chat/completions``), plus optional request parameters
(``max_tokens``, ``temperature``, ``top_p``, ``stop``, ``seed``, ``n``, ``model``, ...; anything else goes in
``"params": {...}``). Output, one line per input id::

    {"id": ..., "output": "text", "finish_reason": "length", "usage": {...}, "model": "...", "attempts": 1}
    {"id": ..., "error": {"status": 400, "message": "...", "type": "...", "code": "..."}, "attempts": 1}

(``output`` is a list when ``n`` > 1.) Guarantees:
- Bounded concurrency (``--concurrency`` requests in flight) and a wall-clock limit per request (``--timeout``).
- Connection errors, timeouts, 408/409/429 and 5xx are retried with exponential backoff and jitter (honouring
  ``Retry-After``); other 4xx answers are final and recorded as ``error`` lines.
- Each result is appended and flushed as soon as it arrives, so a crash loses at most the requests in flight.
- A rerun with the same OUTPUT skips every id already there (a torn last line from a crash is cut off first),
  so running until it exits 0 leaves each input id exactly once in the output. ``--retry-errors`` drops the
  recorded ``error`` lines first and tries those ids again.
- ``--api-key-env NAME`` sends ``Authorization: Bearer $NAME`` (a hosted API's key, never on the command line);
  ``--rpm`` spaces the attempts (retries included) to at most that many requests a minute.
- A summary at the end (stderr, and ``--summary FILE`` as JSON); the exit status is 1 when some inputs have no
  result yet (retries exhausted) or some input lines were invalid, else 0.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

PARAMS = ("model", "max_tokens", "max_completion_tokens", "temperature", "top_p", "stop", "seed", "n",
          "presence_penalty", "frequency_penalty", "logit_bias", "user", "response_format")
RETRY_STATUS = {408, 409, 429}


@dataclass
class Settings:
    input: Path
    output: Path
    url: str
    model: str | None = None
    concurrency: int = 8
    timeout: float = 120.0
    retries: int = 8
    backoff: float = 1.0
    max_backoff: float = 30.0
    defaults: dict = field(default_factory=dict)
    retry_errors: bool = False
    progress_every: float = 10.0
    headers: dict = field(default_factory=dict)   # sent with every request (e.g. Authorization)
    rpm: float = 0.0                               # at most this many attempts a minute (0: no limit)


@dataclass
class Summary:
    inputs: int = 0             # valid input records
    already_done: int = 0       # skipped: a result was in OUTPUT before this run
    done: int = 0               # results written by this run
    errors: int = 0             # ... of which final error answers (4xx)
    failed: int = 0             # no result: retries exhausted (rerun to try again)
    invalid: int = 0            # input lines that are not a valid request
    duplicates: int = 0         # input ids seen before in the same file
    retries: int = 0            # retried attempts, all requests together
    torn_lines: int = 0         # unreadable lines found in OUTPUT
    elapsed_s: float = 0.0
    model: str | None = None    # the model asked: --model, or the first the server lists
    problems: list = field(default_factory=list)   # the first invalid lines and exhausted ids, with reasons


class Transient(Exception):
    def __init__(self, why: str, retry_after: float | None = None):
        super().__init__(why)
        self.retry_after = retry_after


def normalize_url(url: str) -> str:
    url = url.rstrip("/")
    return url + "/v1" if urlsplit(url).path in ("", "/") else url


def auth_headers(env_name: str | None, required: bool) -> dict:
    """``Authorization: Bearer <key>`` from the environment variable ``env_name`` (a key never travels on the
    command line, where ``ps`` shows it); an unset variable is an error when it was asked for, else no header."""
    key = os.environ.get(env_name or "", "").strip()
    if key:
        return {"Authorization": f"Bearer {key}"}
    if env_name and required:
        raise ValueError(f"--api-key-env {env_name}: the environment variable {env_name} is not set")
    return {}


def key_of(record_id) -> str:
    return json.dumps(record_id, sort_keys=True)


def load_done(output: Path, retry_errors: bool, summary: Summary) -> set[str]:
    """Ids with a result in ``output``; cuts a torn last line and, with retry_errors, drops error lines."""
    if not output.exists():
        return set()
    data = output.read_bytes()
    keep_end = len(data)
    if data and not data.endswith(b"\n"):             # the process died inside a write
        keep_end = data.rfind(b"\n") + 1
        summary.torn_lines += 1
    done, kept, changed = set(), [], keep_end != len(data)
    for raw in data[:keep_end].splitlines(keepends=True):
        try:
            rec = json.loads(raw)
            ok = isinstance(rec, dict) and "id" in rec and ("output" in rec or "error" in rec)
        except ValueError:
            ok = False
        if not ok:
            summary.torn_lines += 1
            changed = True
            continue
        if retry_errors and "error" in rec:
            changed = True
            continue
        done.add(key_of(rec["id"]))
        kept.append(raw)
    if changed:                                       # rewrite atomically: what remains is whole lines
        tmp = output.with_name(output.name + ".tmp")
        tmp.write_bytes(b"".join(kept))
        os.replace(tmp, output)
    return done


def parse_line(line: str | bytes) -> tuple[dict | None, str | None]:
    """(record, None) or (None, why it is invalid)."""
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as e:
            return None, f"not UTF-8 (byte 0x{line[e.start]:02x} at offset {e.start})"
    try:
        rec = json.loads(line)
    except RecursionError:
        return None, "not JSON (nested too deeply)"
    except ValueError as e:
        return None, f"not JSON ({e})"
    if not isinstance(rec, dict):
        return None, "not a JSON object"
    try:                                  # JSON escapes can carry lone surrogates, which no request can send
        json.dumps(rec, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return None, "holds text that is not valid Unicode (a lone surrogate such as \\ud800)"
    if "id" not in rec or not isinstance(rec["id"], (str, int)) or isinstance(rec["id"], bool):
        return None, "no 'id' (a string or an integer)"
    has_prompt, has_messages = "prompt" in rec, "messages" in rec
    if has_prompt == has_messages:
        return None, "needs exactly one of 'prompt' or 'messages'"
    if has_messages and not isinstance(rec["messages"], list):
        return None, "'messages' must be a list"
    if "params" in rec and not isinstance(rec["params"], dict):
        return None, "'params' must be an object"
    return rec, None


def request_of(rec: dict, settings: Settings, model: str) -> tuple[str, dict]:
    body = {"model": model, **settings.defaults}
    body.update({k: rec[k] for k in PARAMS if k in rec})
    body.update(rec.get("params") or {})
    if "messages" in rec:
        body["messages"] = rec["messages"]
        return "/chat/completions", body
    body["prompt"] = rec["prompt"]
    return "/completions", body


def result_of(rec_id, path: str, answer: dict, attempts: int) -> dict:
    choices = sorted(answer.get("choices") or [], key=lambda c: c.get("index", 0))
    if path == "/chat/completions":
        texts = [(c.get("message") or {}).get("content") for c in choices]
    else:
        texts = [c.get("text") for c in choices]
    reasons = [c.get("finish_reason") for c in choices]
    return {"id": rec_id, "output": texts[0] if len(texts) == 1 else texts,
            "finish_reason": reasons[0] if len(reasons) == 1 else reasons,
            "usage": answer.get("usage"), "model": answer.get("model"), "attempts": attempts}


def _retry_after(headers) -> float | None:
    try:
        return max(0.0, float(headers.get("retry-after")))
    except (TypeError, ValueError):
        return None


class Runner:
    def __init__(self, settings: Settings, summary: Summary):
        self.s, self.summary = settings, summary
        self.next_slot = 0.0          # monotonic time of the next attempt --rpm allows
        self.pace_lock: asyncio.Lock | None = None

    async def pace(self) -> None:
        """With --rpm, wait for this attempt's slot: attempts start at least 60/rpm seconds apart."""
        if self.s.rpm <= 0:
            return
        if self.pace_lock is None:
            self.pace_lock = asyncio.Lock()
        async with self.pace_lock:
            now = time.monotonic()
            slot = max(now, self.next_slot)
            self.next_slot = slot + 60.0 / self.s.rpm
        await asyncio.sleep(slot - now)

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with jitter (half to all of the step), at least the server's Retry-After."""
        step = min(self.s.max_backoff, self.s.backoff * 2 ** attempt)
        return max(random.uniform(step / 2, step), min(retry_after or 0.0, self.s.max_backoff))

    async def call(self, client, method: str, path: str, body: dict | None = None):
        """One attempt: the JSON answer, an (error dict) for a final 4xx, or Transient."""
        import httpx2

        await self.pace()
        try:
            async with asyncio.timeout(self.s.timeout):
                r = await client.request(method, self.s.url + path, json=body)
                content = await r.aread()
        except (TimeoutError, httpx2.TimeoutException):
            raise Transient(f"timed out after {self.s.timeout:g}s") from None
        except httpx2.HTTPError as e:          # refused, reset, closed mid-answer, ...
            raise Transient(f"{type(e).__name__}: {e}") from None
        if r.status_code == 200:
            try:
                return json.loads(content), None
            except ValueError:
                raise Transient("200 with a body that is not JSON") from None
        try:
            err = json.loads(content).get("error") or {}
            err = err if isinstance(err, dict) else {"message": str(err)}
        except (ValueError, AttributeError):
            err = {"message": content[:500].decode("utf-8", "replace")}
        if r.status_code in RETRY_STATUS or r.status_code >= 500:
            raise Transient(f"HTTP {r.status_code}: {err.get('message')}", _retry_after(r.headers))
        return None, {"status": r.status_code, "message": err.get("message"), "type": err.get("type"),
                      "code": err.get("code")}

    async def with_retries(self, client, method: str, path: str, body: dict | None = None):
        """(answer, error, attempts); raises Transient when every attempt failed."""
        for attempt in range(self.s.retries + 1):
            try:
                answer, error = await self.call(client, method, path, body)
                return answer, error, attempt + 1
            except Transient as e:
                if attempt == self.s.retries:
                    raise Transient(f"{e} (gave up after {attempt + 1} attempts)") from None
                self.summary.retries += 1
                await asyncio.sleep(self.delay(attempt, e.retry_after))

    async def discover_model(self, client) -> str:
        answer, error, _ = await self.with_retries(client, "GET", "/models")
        if error or not answer.get("data"):
            raise SystemExit(f"batch: {self.s.url}/models did not name a model ({error}); pass --model")
        return answer["data"][0]["id"]


def note(summary: Summary, what: str) -> None:
    if len(summary.problems) < 20:
        summary.problems.append(what)


async def run(settings: Settings) -> Summary:
    import httpx2

    summary = Summary()
    t0 = time.monotonic()
    done = load_done(settings.output, settings.retry_errors, summary)
    runner = Runner(settings, summary)
    limits = httpx2.Limits(max_connections=settings.concurrency, max_keepalive_connections=settings.concurrency)
    async with httpx2.AsyncClient(limits=limits, timeout=None, headers=settings.headers) as client:
        queue: asyncio.Queue = asyncio.Queue(maxsize=2 * settings.concurrency)
        model: str | None = settings.model
        out = open(settings.output, "a", encoding="utf-8")
        last_progress = time.monotonic()

        def write(result: dict) -> None:
            nonlocal last_progress
            out.write(json.dumps(result, ensure_ascii=False) + "\n")
            out.flush()
            summary.done += 1
            if time.monotonic() - last_progress >= settings.progress_every:
                last_progress = time.monotonic()
                print(f"batch: {summary.done} done this run, {summary.already_done} already done, "
                      f"{summary.retries} retries", file=sys.stderr, flush=True)

        async def worker():
            while (item := await queue.get()) is not None:
                rec = item
                path, body = request_of(rec, settings, model)
                try:
                    answer, error, attempts = await runner.with_retries(client, "POST", path, body)
                    if error is not None:
                        summary.errors += 1
                        write({"id": rec["id"], "error": error, "attempts": attempts})
                    else:
                        write(result_of(rec["id"], path, answer, attempts))
                except Transient as e:
                    summary.failed += 1
                    note(summary, f"id {json.dumps(rec['id'])}: {e}")
                except Exception as e:            # an answer we cannot read: no result, rerun to retry
                    summary.failed += 1
                    note(summary, f"id {json.dumps(rec['id'])}: {type(e).__name__}: {e}")

        try:
            if model is None:
                model = await runner.discover_model(client)
            summary.model = model
            workers = [asyncio.create_task(worker()) for _ in range(settings.concurrency)]
            seen: set[str] = set()
            with open(settings.input, "rb") as f:     # decoded line by line: one bad line is one invalid line
                for n, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    rec, why = parse_line(line)
                    if rec is None:
                        summary.invalid += 1
                        note(summary, f"{settings.input}:{n}: {why}")
                        continue
                    summary.inputs += 1
                    k = key_of(rec["id"])
                    if k in seen:
                        summary.duplicates += 1
                        note(summary, f"{settings.input}:{n}: id {json.dumps(rec['id'])} repeats an earlier line")
                        continue
                    seen.add(k)
                    if k in done:
                        summary.already_done += 1
                        continue
                    await queue.put(rec)
            for _ in workers:
                await queue.put(None)
            await asyncio.gather(*workers)
        except Transient as e:
            raise SystemExit(f"batch: the server at {settings.url} did not answer: {e}") from None
        finally:
            out.close()
    summary.elapsed_s = round(time.monotonic() - t0, 3)
    return summary


def parse_args(argv=None) -> tuple[Settings, str | None]:
    p = argparse.ArgumentParser(prog="glassbox batch", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", type=Path)
    p.add_argument("output", type=Path)
    p.add_argument("--url", required=True, help="the server's OpenAI base URL, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--model", default=None, help="default: the first model the server lists")
    p.add_argument("--concurrency", type=int, default=8, help="requests in flight (default 8)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per request attempt (default 120)")
    p.add_argument("--retries", type=int, default=8, help="retries per request after the first try (default 8)")
    p.add_argument("--backoff", type=float, default=1.0, help="first retry delay in seconds, doubling (default 1)")
    p.add_argument("--max-backoff", type=float, default=30.0, help="longest retry delay (default 30)")
    p.add_argument("--max-tokens", type=int, default=None, help="default max_tokens for lines without one")
    p.add_argument("--temperature", type=float, default=None, help="default temperature for lines without one")
    p.add_argument("--api-key-env", default=None, metavar="NAME",
                   help="send 'Authorization: Bearer' with the key in this environment variable")
    p.add_argument("--rpm", type=float, default=0.0, help="at most this many requests a minute (default: no limit)")
    p.add_argument("--retry-errors", action="store_true", help="drop recorded error lines and try those ids again")
    p.add_argument("--summary", default=None, help="also write the summary to this JSON file")
    a = p.parse_args(argv)
    for name in ("concurrency",):
        if getattr(a, name) < 1:
            p.error(f"--{name} must be >= 1")
    if a.retries < 0 or a.timeout <= 0 or a.backoff < 0 or a.max_backoff < 0 or a.rpm < 0:
        p.error("--retries, --backoff, --max-backoff and --rpm must be >= 0 and --timeout > 0")
    if not a.input.is_file():
        p.error(f"{a.input}: no such file")
    if a.input.resolve() == a.output.resolve():
        p.error("OUTPUT must differ from INPUT")
    defaults = {k: v for k, v in (("max_tokens", a.max_tokens), ("temperature", a.temperature)) if v is not None}
    try:
        headers = auth_headers(a.api_key_env, required=True)
    except ValueError as e:
        p.error(str(e))
    return Settings(a.input, a.output, normalize_url(a.url), a.model, a.concurrency, a.timeout, a.retries,
                    a.backoff, a.max_backoff, defaults, a.retry_errors, headers=headers, rpm=a.rpm), a.summary


def main(argv=None) -> int:
    settings, summary_path = parse_args(argv)
    summary = asyncio.run(run(settings))
    report = asdict(summary)
    print("batch: " + ", ".join(f"{k} {v}" for k, v in report.items() if k != "problems"), file=sys.stderr)
    for what in summary.problems:
        print(f"batch:   {what}", file=sys.stderr)
    if summary_path:
        Path(summary_path).write_text(json.dumps(report, indent=2) + "\n")
    return 1 if summary.failed or summary.invalid else 0


if __name__ == "__main__":
    sys.exit(main())
