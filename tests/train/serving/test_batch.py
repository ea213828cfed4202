"""python -m train.serving.batch against a real server that is killed mid-run: every input id ends up exactly once."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from hf_fixtures import REPO, shared_tiny_llama
from serving_fixtures import ServerProcess

N = 18


def write_inputs(path: Path, n: int = N, extra: list[str] = ()) -> list:
    ids = []
    with open(path, "w") as f:
        for i in range(n):
            if i % 3 == 2:
                rec = {"id": f"chat-{i}", "messages": [{"role": "user", "content": f"Tell me about lobster {i}."}]}
            else:
                rec = {"id": i, "prompt": f"Homarus gammarus number {i} is", "seed": i}
            ids.append(rec["id"])
            f.write(json.dumps(rec) + "\n")
        for line in extra:
            f.write(line + "\n")
    return ids


def read_output(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def start_batch(inp: Path, out: Path, url: str, summary: Path, *extra: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "train.serving.batch", str(inp), str(out), "--url", url, "--concurrency", "3",
           "--max-tokens", "40", "--temperature", "1", "--timeout", "60", "--retries", "60", "--backoff", "0.2",
           "--max-backoff", "1.5", "--summary", str(summary), *extra]
    return subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def lines_in(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def wait_for_lines(path: Path, k: int, proc: subprocess.Popen, timeout: float = 120) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        n = lines_in(path)
        if n >= k:
            return n
        if proc.poll() is not None:
            pytest.fail("batch ended early:\n" + proc.stdout.read())
        time.sleep(0.05)
    pytest.fail(f"fewer than {k} results after {timeout}s")


def assert_each_once(out: Path, ids: list) -> list[dict]:
    records = read_output(out)
    counts = Counter(json.dumps(r["id"]) for r in records)
    assert sorted(counts) == sorted(json.dumps(i) for i in ids), "ids missing or unexpected"
    assert set(counts.values()) == {1}, f"duplicates: {[k for k, v in counts.items() if v > 1]}"
    return records


@pytest.fixture(scope="module")
def server():
    """One server for the module; the tests kill it and bring it back on the same port."""
    srv = ServerProcess(shared_tiny_llama()).start()
    yield srv
    srv.stop()


def test_server_killed_mid_run_batch_retries_through(server, tmp_path):
    if not server.alive():
        server.start()
    inp, out, summary = tmp_path / "in.jsonl", tmp_path / "out.jsonl", tmp_path / "summary.json"
    ids = write_inputs(inp, extra=[json.dumps({"id": "bad-temp", "prompt": "x", "temperature": 5})])
    batch = start_batch(inp, out, server.url, summary)
    at_kill = wait_for_lines(out, 3, batch)
    server.kill()
    assert at_kill < N + 1, "the batch finished before the server was killed; the test proves nothing"
    time.sleep(1.0)
    assert batch.poll() is None, "the batch gave up instead of retrying"
    server.start()                                      # same port
    log, _ = batch.communicate(timeout=240)
    assert batch.returncode == 0, log
    records = assert_each_once(out, ids + ["bad-temp"])
    by_id = {json.dumps(r["id"]): r for r in records}
    err = by_id['"bad-temp"']["error"]                  # a 400 is final, recorded, not retried
    assert err["status"] == 400 and "temperature" in err["message"] and by_id['"bad-temp"']["attempts"] == 1
    good = [r for r in records if r["id"] != "bad-temp"]
    assert all(isinstance(r["output"], str) and r["finish_reason"] in ("stop", "length") for r in good)
    assert all(r["usage"]["completion_tokens"] <= 40 for r in good)
    s = json.loads(summary.read_text())
    assert s["retries"] > 0 and s["failed"] == 0 and s["done"] == N + 1 and s["errors"] == 1
    assert any(r["attempts"] > 1 for r in good)         # some requests were in flight at the kill


def test_both_killed_restart_skips_done_ids(server, tmp_path):
    if not server.alive():
        server.start()
    inp, out, summary = tmp_path / "in.jsonl", tmp_path / "out.jsonl", tmp_path / "summary.json"
    ids = write_inputs(inp, extra=["{not json", json.dumps({"prompt": "no id"}),
                                   json.dumps({"id": 0, "prompt": "a repeated id"})])
    batch = start_batch(inp, out, server.url, summary)
    wait_for_lines(out, 4, batch)
    batch.kill()
    server.kill()
    batch.wait(timeout=30)
    first = read_output(out)
    assert 4 <= len(first) < N, "the batch finished before it was killed; the test proves nothing"
    with open(out, "a") as f:                           # a crash inside a write leaves a torn line
        f.write('{"id": 999, "outp')
    server.start()
    batch = start_batch(inp, out, server.url, summary)
    log, _ = batch.communicate(timeout=240)
    s = json.loads(summary.read_text())
    assert batch.returncode == 1 and s["invalid"] == 2 and s["failed"] == 0, log   # the two bad lines
    assert s["already_done"] == len(first) and s["done"] == N - len(first) and s["torn_lines"] == 1
    assert s["duplicates"] == 1
    records = assert_each_once(out, ids)
    assert records[:len(first)] == first                # earlier results kept as they were
    assert all("output" in r for r in records)
    # a third run has nothing left to do
    again = start_batch(inp, out, server.url, summary)
    again.communicate(timeout=120)
    s = json.loads(summary.read_text())
    assert s["done"] == 0 and s["already_done"] == N
    assert len(read_output(out)) == N


def test_torn_and_error_lines_in_output(tmp_path):
    from train.serving.batch import Summary, load_done

    out = tmp_path / "out.jsonl"
    out.write_text('{"id": 1, "output": "a"}\n{"id": "2", "error": {"status": 400}}\ngarbage\n{"id": 3, "out')
    summary = Summary()
    assert load_done(out, False, summary) == {"1", '"2"'}
    assert summary.torn_lines == 2
    assert out.read_text() == '{"id": 1, "output": "a"}\n{"id": "2", "error": {"status": 400}}\n'
    assert load_done(out, True, Summary()) == {"1"}         # --retry-errors drops the error line
    assert out.read_text() == '{"id": 1, "output": "a"}\n'


def test_backoff_grows_with_jitter_and_cap(tmp_path):
    from train.serving.batch import Runner, Settings, Summary, normalize_url, parse_line

    r = Runner(Settings(tmp_path, tmp_path, "u", backoff=1.0, max_backoff=8.0), Summary())
    for attempt, step in [(0, 1), (1, 2), (2, 4), (3, 8), (6, 8)]:
        delays = [r.delay(attempt, None) for _ in range(200)]
        assert step / 2 <= min(delays) and max(delays) <= step and len(set(delays)) > 100
    assert r.delay(0, 5.0) >= 5.0                             # Retry-After is honoured (up to the cap)
    assert normalize_url("http://127.0.0.1:8000") == "http://127.0.0.1:8000/v1"
    assert normalize_url("http://h:1/v1/") == "http://h:1/v1"
    assert parse_line('{"id": 1, "prompt": "x", "max_tokens": 3}') == ({"id": 1, "prompt": "x", "max_tokens": 3}, None)
    assert parse_line(b'{"id": "a", "messages": [{"role": "user", "content": "hi"}]}')[0]["id"] == "a"
    for bad, why in [('[1]', "not a JSON object"), ('{"prompt": "x"}', "no 'id'"),
                     ('{"id": true, "prompt": "x"}', "no 'id'"), ('{"id": 1}', "exactly one of"),
                     ('{"id": 1, "prompt": "x", "messages": []}', "exactly one of"),
                     ('{"id": 1, "messages": "hi"}', "must be a list"), ('{"id": 1, "prompt": ', "not JSON"),
                     (b'{"id": 1, "prompt": "caf\xe9"}', "not UTF-8")]:
        record, problem = parse_line(bad)
        assert record is None and why in problem, (bad, problem)


def test_undecodable_and_unencodable_lines_are_invalid_lines_the_rest_runs(server, tmp_path):
    if not server.alive():
        server.start()
    inp, out, summary = tmp_path / "in.jsonl", tmp_path / "out.jsonl", tmp_path / "summary.json"
    good = [json.dumps({"id": i, "prompt": f"Lobster {i}", "max_tokens": 3}).encode() for i in range(4)]
    lines = [good[0], b'{"id": "latin1", "prompt": "caf\xe9"}', good[1],
             json.dumps({"id": "surrogate", "prompt": "\ud800"}).encode(), good[2], good[3]]
    inp.write_bytes(b"\n".join(lines) + b"\n")
    batch = start_batch(inp, out, server.url, summary)
    log, _ = batch.communicate(timeout=240)
    s = json.loads(summary.read_text())
    assert batch.returncode == 1 and s["invalid"] == 2 and s["done"] == 4 and s["failed"] == 0, log
    assert any(f"{inp}:2: not UTF-8 (byte 0xe9" in p for p in s["problems"]), s["problems"]
    assert any(f"{inp}:4: " in p and "lone surrogate" in p for p in s["problems"]), s["problems"]
    assert_each_once(out, [0, 1, 2, 3])


def test_api_key_header_and_requests_per_minute(tmp_path, monkeypatch):
    """--api-key-env sends the key as a Bearer token (to /models too); --rpm spaces the attempts, retries
    included, 60/rpm seconds apart, whatever the concurrency."""
    import asyncio

    from serving_fixtures import FakeOpenAI
    from train.serving.batch import Settings, auth_headers, parse_args, run

    fake = FakeOpenAI(lambda body, n: (429, "slow down", {"Retry-After": "0"}) if n == 2 else (200, "ok", {}))
    try:
        inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
        inp.write_text("".join(json.dumps({"id": i, "messages": [{"role": "user", "content": "hi"}]}) + "\n"
                               for i in range(5)))
        monkeypatch.setenv("GLASSBOX_TEST_KEY", "sk-test-123")
        settings, _ = parse_args([str(inp), str(out), "--url", fake.url, "--api-key-env", "GLASSBOX_TEST_KEY",
                                  "--rpm", "600", "--concurrency", "4", "--backoff", "0"])
        assert settings.headers == {"Authorization": "Bearer sk-test-123"} and settings.rpm == 600
        summary = asyncio.run(run(settings))
        assert summary.done == 5 and summary.retries == 1
        times = [t for *_, t in fake.requests]
        gaps = [b - a for a, b in zip(times, times[1:])]          # 0.1 s apart, give or take the loopback's jitter
        assert len(times) == 6 and min(gaps) > 0.07 and times[-1] - times[0] >= 0.48, gaps
        assert all(h.get("Authorization") == "Bearer sk-test-123" for _, h, _, _ in fake.requests)
        assert_each_once(out, list(range(5)))
        # no limit: the same five go out together
        fake.requests.clear()
        asyncio.run(run(Settings(inp, tmp_path / "fast.jsonl", fake.url, concurrency=5, backoff=0)))
        times = sorted(t for *_, t in fake.requests)
        assert "Authorization" not in fake.requests[0][1] and times[-1] - times[0] < 0.4
    finally:
        fake.close()
    monkeypatch.delenv("GLASSBOX_TEST_KEY")
    with pytest.raises(ValueError, match="GLASSBOX_TEST_KEY is not set"):
        auth_headers("GLASSBOX_TEST_KEY", required=True)
    assert auth_headers("GLASSBOX_TEST_KEY", required=False) == {} and auth_headers(None, required=True) == {}
