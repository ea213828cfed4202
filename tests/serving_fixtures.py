"""A real ``python -m train.serving.serve`` process on 127.0.0.1 for the serving and batch tests."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LISTENING = re.compile(r"listening on (http://[\d.]+:(\d+)/v1)")


class ServerProcess:
    """Start with ``port=0`` for a free port; ``restart()`` comes back on the same port."""

    def __init__(self, model_dir: Path, name: str = "tiny", port: int = 0, startup_timeout: float = 180.0,
                 args: tuple[str, ...] = (), env: dict | None = None, log_level: str = "warning",
                 command: list[str] | None = None):
        self.model_dir, self.name, self.port, self.timeout = Path(model_dir), name, port, startup_timeout
        self.args, self.extra_env, self.log_level, self.command = tuple(args), env or {}, log_level, command
        self.proc: subprocess.Popen | None = None
        self.lines: list[str] = []
        self.url = ""

    def start(self) -> "ServerProcess":
        cmd = self.command or [sys.executable, "-m", "train.serving.serve", "--model", str(self.model_dir), "--port",
                               str(self.port), "--served-model-name", self.name, "--threads", "1", "--log-level",
                               self.log_level, *self.args]
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false", **self.extra_env}
        self.proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)
        seen = threading.Event()

        def drain(proc=self.proc):
            for line in proc.stdout:
                self.lines.append(line)
                m = LISTENING.search(line)
                if m:
                    self.url, self.port = m.group(1), int(m.group(2))
                    seen.set()

        threading.Thread(target=drain, daemon=True).start()
        deadline = time.monotonic() + self.timeout
        while not seen.wait(0.2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("server did not start:\n" + "".join(self.lines[-40:]))
        while time.monotonic() < deadline:        # the socket is bound; wait until uvicorn answers
            try:
                with urllib.request.urlopen(self.url.removesuffix("/v1") + "/health", timeout=5) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("server never answered /health:\n" + "".join(self.lines[-40:]))

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def restart(self) -> "ServerProcess":
        self.kill()
        return self.start()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()

    def alive(self) -> bool:
        return bool(self.proc) and self.proc.poll() is None

    def wait_for_log(self, pattern: str, timeout: float = 120.0) -> re.Match:
        """The first server output line matching ``pattern`` (a bounded wait)."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                m = rx.search(line)
                if m:
                    return m
            time.sleep(0.05)
        raise AssertionError(f"no server output matching {pattern!r} within {timeout}s:\n" + "".join(self.lines[-40:]))


class FakeOpenAI:
    """A scripted OpenAI-compatible endpoint in a thread, for the answers a real server will not give on demand
    (429 with Retry-After, 5xx, a hang, a refusal, a reply that holds no grade). ``answer(body, n)`` gets the
    request's JSON and its 1-based number and returns ``(status, reply text or error message, headers)``, or
    ``None`` to hang past the client's timeout. Every request is recorded: ``(path, headers, body, time)``."""

    def __init__(self, answer, model: str = "fake-grader", hang_s: float = 5.0):
        import json
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.answer, self.model, self.requests, self.lock = answer, model, [], threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, obj: dict, headers: dict | None = None) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._send(200, {"object": "list", "data": [{"id": fake.model, "object": "model"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with fake.lock:
                    fake.requests.append((self.path, dict(self.headers), body, time.monotonic()))
                    n = len(fake.requests)
                got = fake.answer(body, n)
                if got is None:
                    time.sleep(hang_s)
                    return
                status, text, headers = got
                if status != 200:
                    self._send(status, {"error": {"message": text, "type": "invalid_request_error"}}, headers)
                    return
                self._send(200, {"id": f"c{n}", "object": "chat.completion", "model": fake.model,
                                 "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                              "finish_reason": "stop"}],
                                 "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}, headers)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
