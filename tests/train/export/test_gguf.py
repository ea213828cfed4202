"""llama.cpp GGUF files: ``glassbox export --gguf`` on a real tiny run (files, conversion check, measured loss of each
format), and ``glassbox serve`` on a GGUF file behind the same API and error contract as the torch server.

Needs ``make setup-gguf`` (llama-cpp-python compiled from its sdist, and llama.cpp's converter); skipped otherwise.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from train.export import gguf

if gguf.available():
    pytest.skip(f"GGUF tests need llama.cpp: {gguf.available()}", allow_module_level=True)

from export_fixtures import ENV, tiny_runs  # noqa: E402
from hf_fixtures import REPO, shared_tiny_llama  # noqa: E402
from serving_fixtures import ServerProcess  # noqa: E402

openai = pytest.importorskip("openai")


@pytest.fixture(scope="module")
def exported_with_gguf():
    runs = tiny_runs()
    out = runs["root"] / "exports" / "one-gguf"
    r = subprocess.run([sys.executable, "-m", "train.export.export", str(runs["one"]), "--out", str(out), "--gguf",
                        "f32,q8_0,q4_k_m", "--threads", "1"], cwd=REPO, capture_output=True, text=True,
                       timeout=1200, env=ENV)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return out, r.stdout


def test_export_writes_measured_gguf_files(exported_with_gguf):
    out, stdout = exported_with_gguf
    rec = json.loads((out / "glassbox_export.json").read_text())
    entry = rec["gguf"]
    assert set(entry["formats"]) == {"f32", "q8_0", "q4_k_m"} and "gguf: q8_0" in stdout
    assert entry["conversion_check"]["passed"] and entry["conversion_check"]["rel_diff"] <= gguf.CONVERSION_RTOL
    sizes = {}
    for fmt, r in entry["formats"].items():
        path = out / r["file"]
        assert path.is_file() and r["file"] == f"model-{fmt}.gguf"
        assert rec["files"][r["file"]]["sha256"] == r["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        sizes[fmt] = r["size"]["bytes"]
        assert r["size"]["estimate_precision"] == gguf.FORMATS[fmt][1] and r["size"]["ratio_to_estimate"] > 0
        ppl = r["perplexity"]
        assert set(ppl["per_source"]) == set(entry["reference"]["perplexity"]["per_source"]) and ppl["per_source"]
        for name, v in ppl["per_source"].items():
            ref = entry["reference"]["perplexity"]["per_source"][name]["perplexity"]
            assert v["perplexity_ratio"] == pytest.approx(v["perplexity"] / ref)
        assert r["greedy"]["prompts"] == 32
    assert sizes["q4_k_m"] < sizes["q8_0"] < sizes["f32"]
    f32, q8 = entry["formats"]["f32"], entry["formats"]["q8_0"]
    # fp32 in llama.cpp is the export itself: only summation order separates them
    assert abs(f32["perplexity"]["overall"]["perplexity_ratio"] - 1) < 1e-4
    assert f32["greedy"]["token_agreement"] > 0.9
    assert q8["within_target"] and q8["perplexity"]["overall"]["perplexity_ratio"] <= 1.01
    assert entry["formats"]["q4_k_m"]["perplexity"]["overall"]["perplexity_ratio"] > 0.9   # reported, any value


def test_gguf_for_an_existing_export_and_bad_formats(exported_with_gguf, tmp_path):
    out, _ = exported_with_gguf
    r = subprocess.run([sys.executable, "-m", "train.export.export", str(out), "--gguf", "q9_9"], cwd=REPO,
                       capture_output=True, text=True, timeout=600, env=ENV)
    assert r.returncode == 2 and "unknown format" in r.stderr
    r = subprocess.run([sys.executable, "-m", "train.export.export", str(out), "--gguf", "q4_0", "--threads", "1"], cwd=REPO,
                       capture_output=True, text=True, timeout=1200, env=ENV)
    assert r.returncode == 0, r.stderr[-3000:]
    rec = json.loads((out / "glassbox_export.json").read_text())
    assert set(rec["gguf"]["formats"]) == {"f32", "q8_0", "q4_k_m", "q4_0"} and (out / "model-q4_0.gguf").is_file()
    assert "byte-fallback pieces" in r.stderr                  # the warning: these files will not be served


# --- serving a GGUF file ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gguf_files(tmp_path_factory):
    """The serving tests' tiny model (context 128) as f32 and q8_0 GGUF files."""
    root = tmp_path_factory.mktemp("gguf-serve")
    f32 = root / "tiny-f32.gguf"
    gguf.convert(shared_tiny_llama(), f32)
    q8 = root / "tiny-q8_0.gguf"
    gguf.quantize(f32, q8, "q8_0", threads=1)
    return {"f32": f32, "q8_0": q8}


@pytest.fixture(scope="module")
def server(gguf_files):
    srv = ServerProcess(gguf_files["f32"], name="tiny", log_level="info",
                        args=("--max-body-bytes", "100000", "--max-request-tokens", "600")).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0, timeout=120)


@pytest.fixture(scope="module")
def torch_engine():
    from train.serving.engine import Engine
    return Engine(shared_tiny_llama(), threads=1)


PROMPTS = ["The lobster", "Homarus gammarus is", "In 1923 the company", "", "Rain fell on the city of ꙮ é"]


def test_gguf_server_tokenizes_and_answers_as_the_torch_engine(client, torch_engine):
    from train.serving.protocol import Sampling

    for prompt in PROMPTS:
        out = client.completions.create(model="tiny", prompt=prompt, max_tokens=20, temperature=0)
        ids = torch_engine.encode(prompt)
        assert out.usage.prompt_tokens == len(ids), prompt                    # same tokenizer
        gen = torch_engine.generate(ids, 20, Sampling(max_tokens=20, temperature=0.0), [])
        assert out.choices[0].text == gen.text, prompt                        # same fp32 model, greedy
        assert out.usage.completion_tokens == gen.completion_tokens
    msgs = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "What is a lobster?"}]
    chat = client.chat.completions.create(model="tiny", messages=msgs, max_tokens=5, temperature=0)
    text, stops = torch_engine.render_chat(msgs)                              # the same template, rendered alike
    assert chat.usage.prompt_tokens == len(torch_engine.encode(text)) and stops == ["\nUser:"]


def test_gguf_streaming_stop_chat_and_seeds(client):
    plain = client.completions.create(model="tiny", prompt="Rain fell", max_tokens=25, temperature=0)
    chunks = list(client.completions.create(model="tiny", prompt="Rain fell", max_tokens=25, temperature=0,
                                            stream=True, stream_options={"include_usage": True}))
    assert "".join(c.choices[0].text for c in chunks[:-1]) == plain.choices[0].text
    assert chunks[-1].usage.completion_tokens == plain.usage.completion_tokens
    text = plain.choices[0].text
    start = next(i for i in range(3, len(text) - 2) if "\ufffd" not in text[i:i + 2] and text[i:i + 2].strip())
    stop = text[start:start + 2]
    out = client.completions.create(model="tiny", prompt="Rain fell", max_tokens=25, temperature=0, stop=stop)
    assert out.choices[0].text == text[:text.find(stop)] and out.choices[0].finish_reason == "stop"
    kw = dict(model="tiny", prompt="The lobster", max_tokens=20, temperature=1.0, top_p=0.9)
    a, b, c = (client.completions.create(seed=s, **kw).choices[0].text for s in (7, 7, 8))
    assert a == b and a != c
    big = client.completions.create(seed=2 ** 64 - 1, **kw)
    assert big.usage.completion_tokens >= 1
    msgs = [{"role": "user", "content": "What is a lobster?"}]
    chat = client.chat.completions.create(model="tiny", messages=msgs, max_tokens=10, temperature=0)
    streamed = list(client.chat.completions.create(model="tiny", messages=msgs, max_tokens=10, temperature=0,
                                                   stream=True))
    assert "".join(s.choices[0].delta.content or "" for s in streamed) == chat.choices[0].message.content


def test_gguf_server_keeps_the_error_contract(client, server):
    import http.client

    def post(raw: bytes):
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        conn.request("POST", "/v1/completions", body=raw, headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        body = json.loads(r.read())
        conn.close()
        return r.status, body

    assert post(b'{"model": "tiny", "prompt": "' + b"a" * 200_000 + b'"}')[0] == 413
    status, body = post(json.dumps({"model": "tiny", "prompt": ["a"] * 10, "n": 8, "max_tokens": 100}).encode())
    assert status == 400 and body["error"]["code"] == "request_too_large"
    for raw, param in [(b'{"model": "tiny", "prompt": "x", "temperature": NaN}', "temperature"),
                       (b'{"model": "tiny", "prompt": "\\ud800"}', "prompt"),
                       (b'{"model": "tiny", "prompt": "x", "seed": 100000000000000000000000}', "seed")]:
        status, body = post(raw)
        assert status == 400 and body["error"]["param"] == param
    status, body = post(json.dumps({"model": "tiny", "prompt": "lobster " * 100, "max_tokens": 2}).encode())
    assert status == 400 and body["error"]["code"] == "context_length_exceeded"
    greedy = client.completions.create(model="tiny", prompt="The", max_tokens=8, temperature=0)
    assert client.completions.create(model="tiny", prompt="The", max_tokens=8,
                                     temperature=1e-300).choices[0].text == greedy.choices[0].text
    # a client that leaves mid-stream stops generation
    stream = client.completions.create(model="tiny", prompt=["The", "A"], n=3, max_tokens=100, temperature=1,
                                       stream=True)
    next(iter(stream))
    stream.close()
    m = server.wait_for_log(r"client went away; generation stopped after (\d+) generated tokens of up to 600")
    assert int(m.group(1)) < 600


def test_gguf_concurrent_clients_get_what_they_get_alone(client, server):
    alone = {p: client.completions.create(model="tiny", prompt=p, max_tokens=15, temperature=0).choices[0].text
             for p in PROMPTS}
    barrier = threading.Barrier(8)

    def ask(p):
        c = openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0, timeout=120)
        barrier.wait(timeout=60)
        return c.completions.create(model="tiny", prompt=p, max_tokens=15, temperature=0).choices[0].text

    jobs = (PROMPTS * 2)[:8]
    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(ask, jobs)) == [alone[p] for p in jobs]


def test_q8_0_serves(gguf_files):
    srv = ServerProcess(gguf_files["q8_0"], name="tiny").start()
    try:
        c = openai.OpenAI(base_url=srv.url, api_key="unused", max_retries=0, timeout=120)
        out = c.completions.create(model="tiny", prompt="The lobster", max_tokens=10, temperature=0)
        assert out.usage.completion_tokens >= 1 and out.model == "tiny"
        assert any("llama.cpp" in ln for ln in srv.lines)
    finally:
        srv.stop()


def test_a_vocabulary_without_byte_pieces_is_not_served(exported_with_gguf):
    """The trainer-test tokenizer has no byte fallback: llama.cpp would abort the whole server on a character
    outside its vocabulary (std::out_of_range), so glassbox serve refuses the file and says why."""
    out, _ = exported_with_gguf
    assert json.loads((out / "glassbox_export.json").read_text())["gguf"]["byte_fallback_pieces"] == 0
    r = subprocess.run([sys.executable, "-m", "train.serving.serve", "--model", str(out / "model-q8_0.gguf"), "--port", "0"],
                       cwd=REPO, capture_output=True, text=True, timeout=300, env=ENV)
    assert r.returncode != 0 and "byte-fallback" in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]
