"""OpenAI-compatible server for an exported model: ``python -m train.serve --model DIR`` (``make serve MODEL=DIR``).

With ``--backend auto`` (the default) it starts vLLM's OpenAI server when vLLM is installed and a CUDA GPU
is present (``--tp`` becomes ``--tensor-parallel-size``), and otherwise this project's CPU server
(train/serving/). ``--port 0`` picks a free port; the chosen address is printed as ``listening on URL``.
"""
from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import socket
import sys


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
    p = argparse.ArgumentParser(prog="python -m train.serve", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="exported Hugging Face model directory")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel size (vLLM only)")
    p.add_argument("--served-model-name", default=None,
                   help="the model id clients send (default: --model as given, as vLLM does)")
    p.add_argument("--backend", choices=("auto", "cpu", "vllm"), default="auto")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"))
    args = p.parse_args(argv)
    if args.tp < 1:
        p.error("--tp must be >= 1")
    if not os.path.isdir(args.model) or not os.path.isfile(os.path.join(args.model, "config.json")):
        p.error(f"--model {args.model}: not a model directory (no config.json); export a run first")
    return args


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
    backend = choose_backend(args.backend, vllm_available())
    if backend == "vllm":
        cmd = vllm_command(args)
        print("serve: vLLM and a GPU found, starting:", " ".join(cmd), flush=True)
        os.execv(cmd[0], cmd)

    import uvicorn

    from train.serving.app import create_app
    from train.serving.engine import Engine

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.tp != 1:
        print(f"serve: --tp {args.tp} ignored: the CPU server runs one model copy", file=sys.stderr)
    engine = Engine(args.model, threads=args.threads)
    name = args.served_model_name or args.model
    sock = bind(args.host, args.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"serve: {name} ({engine.n_params / 1e6:.2f}M parameters, context {engine.max_context}) on CPU; "
          f"listening on http://{shown}:{port}/v1", flush=True)
    config = uvicorn.Config(create_app(engine, name), log_level=args.log_level, timeout_graceful_shutdown=5)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
