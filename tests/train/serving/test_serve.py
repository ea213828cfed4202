"""The OpenAI-compatible server, driven by the official ``openai`` client against a real process on 127.0.0.1."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from hf_fixtures import REPO, shared_tiny_llama
from serving_fixtures import ServerProcess

openai = pytest.importorskip("openai")

PROMPTS = ["The lobster", "Homarus gammarus is", "In 1923 the company", "", "Rain fell on the city of"]


@pytest.fixture(scope="module")
def model_dir():
    return shared_tiny_llama()


@pytest.fixture(scope="module")
def tokenizer(model_dir):
    from transformers import AutoTokenizer
    return AutoTokenizer.from_pretrained(model_dir)


@pytest.fixture(scope="module")
def server(model_dir):
    srv = ServerProcess(model_dir, name="tiny").start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0, timeout=60)


def post_raw(server, path: str, body: bytes, method: str = "POST") -> tuple[int, dict]:
    req = urllib.request.Request(server.url + path, data=body if method == "POST" else None, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def still_serving(client) -> None:
    assert [m.id for m in client.models.list().data] == ["tiny"]
    out = client.completions.create(model="tiny", prompt="The", max_tokens=2, temperature=0)
    assert out.usage.completion_tokens >= 1


def test_models(client):
    models = client.models.list().data
    assert [m.id for m in models] == ["tiny"]
    assert models[0].model_extra["max_model_len"] == 128
    assert client.models.retrieve("tiny").id == "tiny"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("other")


def test_completion_usage_and_length(client, tokenizer):
    out = client.completions.create(model="tiny", prompt="The lobster", max_tokens=12, temperature=0)
    assert out.object == "text_completion" and out.model == "tiny"
    (ch,) = out.choices
    assert ch.finish_reason == "length" and isinstance(ch.text, str) and ch.text
    assert out.usage.prompt_tokens == len(tokenizer("The lobster")["input_ids"])
    assert out.usage.completion_tokens == 12
    assert out.usage.total_tokens == out.usage.prompt_tokens + 12
    again = client.completions.create(model="tiny", prompt="The lobster", max_tokens=12, temperature=0)
    assert again.choices[0].text == ch.text                       # greedy is deterministic
    default = client.completions.create(model="tiny", prompt="The lobster", temperature=0)
    assert default.usage.completion_tokens == 16                  # OpenAI's default max_tokens


def test_sampling_seed_top_p_and_n(client):
    kw = dict(model="tiny", prompt="The lobster", max_tokens=20, temperature=1.0, top_p=0.9)
    a = client.completions.create(seed=7, **kw).choices[0].text
    b = client.completions.create(seed=7, **kw).choices[0].text
    c = client.completions.create(seed=8, **kw).choices[0].text
    assert a == b and a != c
    many = client.completions.create(n=3, seed=1, prompt=["a", "b"], **{k: v for k, v in kw.items()
                                                                         if k != "prompt"})
    assert [ch.index for ch in many.choices] == list(range(6))
    assert len({ch.text for ch in many.choices}) > 1


def test_stop_sequence(client):
    base = client.completions.create(model="tiny", prompt="Homarus gammarus is", max_tokens=40, temperature=0)
    text = base.choices[0].text
    # a stop sequence that first occurs some way into the text, without replacement characters
    start = next(i for i in range(3, len(text) - 2) if "\ufffd" not in text[i:i + 2] and text[i:i + 2].strip())
    stop = text[start:start + 2]
    expected = text[:text.find(stop)]
    out = client.completions.create(model="tiny", prompt="Homarus gammarus is", max_tokens=40, temperature=0,
                                    stop=[stop, "never-generated-zzz"])
    assert out.choices[0].text == expected
    assert out.choices[0].finish_reason == "stop"
    streamed = client.completions.create(model="tiny", prompt="Homarus gammarus is", max_tokens=40,
                                         temperature=0, stop=stop, stream=True)
    chunks = list(streamed)
    assert "".join(c.choices[0].text for c in chunks) == expected
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_streaming_matches_non_streaming(client):
    plain = client.completions.create(model="tiny", prompt="Rain fell", max_tokens=25, temperature=0)
    chunks = list(client.completions.create(model="tiny", prompt="Rain fell", max_tokens=25, temperature=0,
                                            stream=True, stream_options={"include_usage": True}))
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 25
    assert chunks[-1].usage.prompt_tokens == plain.usage.prompt_tokens
    body = chunks[:-1]
    assert len(body) > 2                                          # text arrived in pieces
    assert "".join(c.choices[0].text for c in body) == plain.choices[0].text
    assert body[-1].choices[0].finish_reason == "length"
    assert all(c.choices[0].finish_reason is None for c in body[:-1])


def test_chat(client, tokenizer):
    from train.export.hf_tokenizer import SIMPLE_CHAT_TEMPLATE

    messages = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "What is a lobster?"}]
    out = client.chat.completions.create(model="tiny", messages=messages, max_tokens=10, temperature=0)
    assert out.object == "chat.completion"
    msg = out.choices[0].message
    assert msg.role == "assistant" and isinstance(msg.content, str)
    rendered = tokenizer.apply_chat_template(messages, chat_template=SIMPLE_CHAT_TEMPLATE, tokenize=False,
                                             add_generation_prompt=True)
    assert rendered == "Answer briefly.\n\nUser: What is a lobster?\n\nAssistant:"
    assert out.usage.prompt_tokens == len(tokenizer(rendered)["input_ids"])
    assert out.choices[0].finish_reason in ("stop", "length")
    stream = list(client.chat.completions.create(model="tiny", messages=messages, max_tokens=10, temperature=0,
                                                 stream=True))
    assert stream[0].object == "chat.completion.chunk" and stream[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in stream) == msg.content
    assert stream[-1].choices[0].finish_reason == out.choices[0].finish_reason
    # no max_tokens: chat may use the rest of the context
    full = client.chat.completions.create(model="tiny", messages=messages, temperature=0)
    assert full.usage.total_tokens <= 128 and full.choices[0].finish_reason in ("stop", "length")


def test_errors_are_openai_json_and_server_keeps_serving(client, server):
    status, body = post_raw(server, "/completions", b'{"model": "tiny", "prompt": ')
    assert status == 400 and body["error"]["code"] == "invalid_json"
    assert set(body["error"]) == {"message", "type", "param", "code"}
    still_serving(client)

    status, body = post_raw(server, "/completions", b'["not", "an", "object"]')
    assert status == 400 and body["error"]["type"] == "invalid_request_error"

    with pytest.raises(openai.NotFoundError) as e:
        client.completions.create(model="gpt-4", prompt="hi", max_tokens=2)
    assert e.value.status_code == 404 and e.value.body["code"] == "model_not_found"
    assert e.value.body["param"] == "model"
    still_serving(client)

    too_long = "lobster " * 200
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="tiny", prompt=too_long, max_tokens=2)
    assert e.value.body["code"] == "context_length_exceeded" and "128" in e.value.body["message"]
    with pytest.raises(openai.BadRequestError) as e:            # prompt fits, prompt + max_tokens does not
        client.completions.create(model="tiny", prompt="The lobster", max_tokens=125)
    assert e.value.body["code"] == "context_length_exceeded"
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": too_long}])
    assert e.value.body["code"] == "context_length_exceeded" and e.value.body["param"] == "messages"
    still_serving(client)

    for kwargs, param in [({"temperature": -0.5}, "temperature"), ({"temperature": 3}, "temperature"),
                          ({"max_tokens": 0}, "max_tokens"), ({"top_p": 0}, "top_p"), ({"n": 100}, "n"),
                          ({"stop": ["a", "b", "c", "d", "e"]}, "stop"), ({"logprobs": 3}, "logprobs"),
                          ({"presence_penalty": 1.0}, "presence_penalty"),
                          ({"extra_body": {"seed": "x"}}, "seed")]:
        with pytest.raises(openai.BadRequestError) as e:
            client.completions.create(model="tiny", prompt="The", **{"max_tokens": 2, **kwargs})
        assert e.value.status_code == 400 and e.value.body["param"] == param, (kwargs, e.value.body)
    status, body = post_raw(server, "/completions", json.dumps({"model": "tiny", "prompt": 5}).encode())
    assert status == 400 and body["error"]["param"] == "prompt"
    status, body = post_raw(server, "/completions", json.dumps({"prompt": "x"}).encode())
    assert status == 400 and body["error"]["param"] == "model"
    status, body = post_raw(server, "/chat/completions", json.dumps(
        {"model": "tiny", "messages": [{"role": "wizard", "content": "x"}]}).encode())
    assert status == 400 and body["error"]["param"] == "messages[0].role"
    status, body = post_raw(server, "/completions", json.dumps(
        {"model": "tiny", "prompt": [1, 2, 999999]}).encode())
    assert status == 400 and "vocabulary" in body["error"]["message"]
    status, body = post_raw(server, "/nowhere", b"{}")
    assert status == 404 and "error" in body
    status, body = post_raw(server, "/completions", b"", method="GET")
    assert status == 405 and "error" in body
    still_serving(client)


def test_concurrent_requests_match_sequential(client, server):
    """Eight threads at once, streaming and not: each answer equals the one the prompt gets alone."""
    jobs = [(p, stream) for p in PROMPTS for stream in (False, True)][:8]

    def ask(job, c=None):
        prompt, stream = job
        c = c or openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0, timeout=120)
        if stream:
            return "".join(ch.choices[0].text for ch in c.completions.create(
                model="tiny", prompt=prompt, max_tokens=20, temperature=0, stream=True))
        return c.completions.create(model="tiny", prompt=prompt, max_tokens=20, temperature=0).choices[0].text

    expected = {p: ask((p, False), client) for p in {p for p, _ in jobs}}
    barrier = threading.Barrier(len(jobs))

    def together(job):
        barrier.wait(timeout=60)
        return ask(job)

    with ThreadPoolExecutor(len(jobs)) as pool:
        got = list(pool.map(together, jobs))
    assert got == [expected[p] for p, _ in jobs]

    # seeded sampling under concurrency: the seed is honoured because model calls never interleave
    def sampled(seed):
        c = openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0, timeout=120)
        return c.completions.create(model="tiny", prompt="The", max_tokens=15, temperature=1, seed=seed).choices[0].text

    alone = [sampled(s) for s in (1, 2, 3)]
    with ThreadPoolExecutor(6) as pool:
        assert list(pool.map(sampled, [1, 2, 3, 1, 2, 3])) == alone * 2


def test_client_disconnect_mid_stream(client, server):
    c = openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0, timeout=60)
    stream = c.completions.create(model="tiny", prompt="The", max_tokens=100, temperature=1, stream=True)
    next(iter(stream))
    stream.close()
    still_serving(client)


class FakeTokenizer:
    """Token i decodes to PIECES[i]; 9 is half of a multi-byte character until 10 completes it."""
    PIECES = ["Hel", "lo", " wo", "rld", "\n", "Us", "er", ":", " end", "", "é"]

    def decode(self, ids, **kw):
        text = "".join(self.PIECES[i] for i in ids)
        return text + "\ufffd" if ids and ids[-1] == 9 else text


def stream_pieces(ids, stops):
    from train.serving.engine import TextTracker

    tr = TextTracker(FakeTokenizer(), stops)
    pieces = [tr.update(ids[:k]) for k in range(1, len(ids) + 1)]
    return pieces, tr.finish(ids), tr.stopped_at


def test_text_tracker_holds_back_partial_stops_and_characters():
    ids = [0, 1, 2, 3, 4, 5, 6, 7, 8]                       # "Hello world\nUser: end"
    pieces, rest, at = stream_pieces(ids, ["\nUser:"])
    assert "".join(pieces) + rest == "Hello world" and at == len("Hello world")
    assert pieces[4] == ""                                   # "\n" might start the stop: held back
    pieces, rest, at = stream_pieces([0, 1, 4, 5, 8], ["\nUser:"])   # "\nUs" then " end": released
    assert "".join(pieces) + rest == "Hello\nUs end" and at is None
    assert pieces[3] == ""                                   # "\nUs" still a possible stop
    pieces, rest, _ = stream_pieces([0, 9, 10], [])
    assert pieces[1] == "" and pieces[2] == "é"              # no half character is ever shown
    pieces, rest, at = stream_pieces([0, 1, 2, 3], ["lo w"])  # a stop across token boundaries
    assert "".join(pieces) + rest == "Hel" and at == 3


def test_completion_text_keeps_its_leading_space(tokenizer):
    """Generated text continues the prompt: ' is blue.' after 'The lobster', not 'is blue.'."""
    from train.serving.engine import TextTracker

    prompt, full = tokenizer.encode("The lobster"), tokenizer.encode("The lobster is blue, ꙮ.")
    assert full[:len(prompt)] == prompt
    gen = full[len(prompt):]
    tr = TextTracker(tokenizer, [], prompt)
    pieces = [tr.update(gen[:k]) for k in range(1, len(gen) + 1)]
    assert "".join(pieces) + tr.finish(gen) == " is blue, ꙮ." == tr.result()
    assert all("\ufffd" not in p for p in pieces)               # byte pieces are joined before showing
    doc = TextTracker(tokenizer, [], [tokenizer.eos_token_id])    # an empty prompt starts a new document
    assert doc.finish(tokenizer.encode("The lobster")) == "The lobster"


def test_backend_choice_and_vllm_command():
    from train.serving import serve

    assert serve.choose_backend("auto", True) == "vllm"
    assert serve.choose_backend("auto", False) == "cpu"
    assert serve.choose_backend("cpu", True) == "cpu"
    with pytest.raises(SystemExit):
        serve.choose_backend("vllm", False)
    cmd = serve.vllm_command(argparse.Namespace(model="/m", tp=4, host="127.0.0.1", port=9000,
                                                served_model_name=None))
    assert cmd[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    assert cmd[cmd.index("--tensor-parallel-size") + 1] == "4" and cmd[cmd.index("--model") + 1] == "/m"
    dry = subprocess.run(["make", "-n", "--no-print-directory", "serve", "MODEL=/some/model", "TP=2", "PORT=8123"],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    line = [ln for ln in dry.stdout.splitlines() if "glassbox serve" in ln]
    assert line, dry.stdout + dry.stderr
    assert "--model /some/model" in line[0] and "--tp 2" in line[0] and "--port 8123" in line[0]
    missing = subprocess.run(["make", "-n", "--no-print-directory", "serve"], cwd=REPO, capture_output=True,
                             text=True, timeout=60)
    assert missing.returncode != 0 and "MODEL" in missing.stderr
    bad = subprocess.run([sys.executable, "-m", "train.serving.serve", "--model", "/nonexistent"], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "config.json" in bad.stderr
