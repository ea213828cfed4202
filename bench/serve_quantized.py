"""Serving speed of one export in full precision (the torch CPU server) and as llama.cpp GGUF files, in one run.

    python bench/serve_quantized.py --export runs/x/export [--formats q8_0,q4_k_m] [--requests 32]
                                    [--max-tokens 64] [--threads 2] [--out build/bench/serve_quantized.json]

The export needs its GGUF files first (``glassbox export runs/x/export --gguf q8_0,q4_k_m``). For each
model, a real ``glassbox serve`` on 127.0.0.1 gets the same greedy completions of train/evaluation/prompts.jsonl
(``--max-tokens`` each) from 1 client, then from 8 concurrent clients (``--requests`` in all, after two warm-up
requests): generated tokens per second over the wall time, and the p50 / p99 of the request latency. The servers
run one after another with the same ``--threads``, so the rows compare the backends and formats on one machine at
one time; the quality side of each format (perplexity ratio, greedy agreement) is in the export's
glassbox_export.json.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

LISTENING = re.compile(r"listening on (http://[\d.]+:\d+/v1)")


def start(model: Path, threads: int, timeout: float = 600) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "train.serving.serve", "--model", str(model), "--port", "0", "--served-model-name", "m",
           "--threads", str(threads), "--log-level", "warning"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false"})
    found: dict = {}
    proc.lines = []

    def drain():
        for line in proc.stdout:
            proc.lines.append(line)
            m = LISTENING.search(line)
            if m:
                found["url"] = m.group(1)

    threading.Thread(target=drain, daemon=True).start()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if "url" in found:
            try:
                with urllib.request.urlopen(found["url"].removesuffix("/v1") + "/health", timeout=5):
                    return proc, found["url"]
            except OSError:
                pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"bench: the server for {model} did not start")


def complete(url: str, prompt: str, max_tokens: int) -> tuple[float, int]:
    body = json.dumps({"model": "m", "prompt": prompt, "max_tokens": max_tokens, "temperature": 0}).encode()
    req = urllib.request.Request(url + "/completions", data=body, headers={"Content-Type": "application/json"})
    t = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as r:
        answer = json.loads(r.read())
    return time.perf_counter() - t, answer["usage"]["completion_tokens"]


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


def measure(url: str, prompts: list[str], clients: int, max_tokens: int) -> dict:
    t = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(lambda p: complete(url, p, max_tokens), prompts))
    wall = time.perf_counter() - t
    latencies = [r[0] for r in results]
    tokens = sum(r[1] for r in results)
    return {"clients": clients, "requests": len(prompts), "tokens": tokens, "wall_s": round(wall, 3),
            "tokens_per_s": round(tokens / wall, 1), "p50_ms": round(percentile(latencies, 0.5) * 1000, 1),
            "p99_ms": round(percentile(latencies, 0.99) * 1000, 1)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--export", required=True, type=Path, help="an export directory with model-<format>.gguf files")
    p.add_argument("--formats", default="q8_0,q4_k_m")
    p.add_argument("--requests", type=int, default=32)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", type=Path, default=REPO / "build" / "bench" / "serve_quantized.json")
    a = p.parse_args(argv)
    from train.evaluation.compare import read_prompts

    models = [("full precision (torch)", a.export)]
    for fmt in [f.strip() for f in a.formats.split(",") if f.strip()]:
        path = a.export / f"model-{fmt}.gguf"
        if not path.is_file():
            raise SystemExit(f"bench: {path} is missing; run glassbox export {a.export} --gguf {a.formats}")
        models.append((f"{fmt} (llama.cpp)", path))
    texts = [r["prompt"] for r in read_prompts()]
    prompts = [texts[i % len(texts)] for i in range(a.requests)]
    rows = []
    for name, model in models:
        proc, url = start(model, a.threads)
        try:
            for prompt in prompts[:2]:
                complete(url, prompt, a.max_tokens)                 # warm-up
            for clients in (1, 8):
                row = {"model": name, **measure(url, prompts, clients, a.max_tokens)}
                rows.append(row)
                print(f"{name:<26} {clients} client(s): {row['tokens_per_s']:>8.1f} tokens/s  p50 "
                      f"{row['p50_ms']:>8.1f} ms  p99 {row['p99_ms']:>8.1f} ms", flush=True)
        except Exception:
            print(f"bench: {name} failed; the server said:\n" + "".join(proc.lines[-30:]), file=sys.stderr)
            raise
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    record = {"export": str(a.export), "requests": a.requests, "max_tokens": a.max_tokens, "threads": a.threads,
              "cpus": os.cpu_count(), "load_average": os.getloadavg(), "rows": rows, "time": time.time()}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"bench: written to {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
