"""OpenAI-compatible server for an exported model: ``glassbox serve --model DIR`` (``make serve MODEL=DIR``).

With ``--backend auto`` (the default) it starts vLLM's OpenAI server when vLLM is installed and a CUDA GPU
is present (``--tp`` becomes ``--tensor-parallel-size``), and otherwise this project's CPU server
(train/serving/). A ``--model`` that is a ``.gguf`` file (``glassbox export --gguf``) is served by llama.cpp
(llama-cpp-python) behind the same API. ``--port 0`` picks a free port; the chosen address is printed as
``listening on URL``.

``--api-key`` (better: the environment variable ``GLASSBOX_API_KEY``, which ``ps`` does not show) makes every
endpoint but ``/health`` require ``Authorization: Bearer KEY``; binding beyond loopback without one prints a
warning.
"""
from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import socket
import sys

from train.serving.guard import DEFAULT_MAX_BODY_BYTES, exposure_warning


def vllm_available() -> bool:
    if importlib.util.find_spec("vllm") is None:
        return False
    try:
        import torch
        return bool(torch.cuda.is_available())
    except Exception:
        return False


def choose_backend(requested: str, has_vllm_and_gpu: bool) -> str:
    if requested == "auto":
        return "vllm" if has_vllm_and_gpu else "cpu"
    if requested == "vllm" and not has_vllm_and_gpu:
        raise SystemExit("serve: --backend vllm needs the vllm package and a CUDA GPU; use --backend cpu")
    return requested


def vllm_command(args) -> list[str]:
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", args.model,
           "--tensor-parallel-size", str(args.tp), "--host", args.host, "--port", str(args.port)]
    if args.served_model_name:
        cmd += ["--served-model-name", args.served_model_name]
    return cmd


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="glassbox serve", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="exported Hugging Face model directory, or a .gguf file")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel size (vLLM only)")
    p.add_argument("--served-model-name", default=None,
                   help="the model id clients send (default: --model as given, as vLLM does)")
    p.add_argument("--backend", choices=("auto", "cpu", "vllm"), default="auto")
    p.add_argument("--threads", type=int, default=None,
                   help="CPU threads of torch or llama.cpp (default: the library's choice)")
    p.add_argument("--api-key", default=os.environ.get("GLASSBOX_API_KEY") or None,
                   help="require 'Authorization: Bearer KEY' (default: $GLASSBOX_API_KEY; none: no key)")
    p.add_argument("--max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES,
                   help=f"larger request bodies are refused with 413 (default {DEFAULT_MAX_BODY_BYTES:,})")
    p.add_argument("--max-request-tokens", type=int, default=None,
                   help="most tokens one request may generate, prompts x n x max_tokens (default 8 x the context)")
    p.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"))
    args = p.parse_args(argv)
    if args.tp < 1:
        p.error("--tp must be >= 1")
    if args.max_body_bytes < 1 or (args.max_request_tokens is not None and args.max_request_tokens < 1):
        p.error("--max-body-bytes and --max-request-tokens must be >= 1")
    if is_gguf(args.model):
        if not os.path.isfile(args.model):
            p.error(f"--model {args.model}: no such file; glassbox export RUN --gguf q8_0 writes one")
    elif not os.path.isdir(args.model) or not os.path.isfile(os.path.join(args.model, "config.json")):
        p.error(f"--model {args.model}: not a model directory (no config.json) nor a .gguf file; export a run first")
    return args


def is_gguf(model: str) -> bool:
    return model.lower().endswith(".gguf")


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def main(argv=None) -> None:
    args = parse_args(argv)
    warning = exposure_warning(args.host, args.api_key)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    backend = "cpu" if is_gguf(args.model) else choose_backend(args.backend, vllm_available())
    if backend == "vllm":
        cmd = vllm_command(args)
        print("serve: vLLM and a GPU found, starting:", " ".join(cmd), flush=True)
        env = {**os.environ, **({"VLLM_API_KEY": args.api_key} if args.api_key else {})}
        os.execve(cmd[0], cmd, env)

    import uvicorn

    from train.serving.app import create_app

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.tp != 1:
        print(f"serve: --tp {args.tp} ignored: the CPU server runs one model copy", file=sys.stderr)
    if is_gguf(args.model):
        from train.serving.gguf_engine import GGUFEngine
        engine = GGUFEngine(args.model, threads=args.threads)
    else:
        from train.serving.engine import Engine
        engine = Engine(args.model, threads=args.threads)
    name = args.served_model_name or args.model
    app = create_app(engine, name, api_key=args.api_key, max_body_bytes=args.max_body_bytes,
                     max_request_tokens=args.max_request_tokens)
    sock = bind(args.host, args.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"serve: {name} ({engine.n_params / 1e6:.2f}M parameters, context {engine.max_context}) on CPU with "
          f"{engine.backend}{', API key required' if args.api_key else ''}; listening on http://{shown}:{port}/v1",
          flush=True)
    config = uvicorn.Config(app, log_level=args.log_level, timeout_graceful_shutdown=5)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
