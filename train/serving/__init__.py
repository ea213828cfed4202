"""Serving the exported model: an OpenAI-compatible server on CPU (or vLLM on GPUs) and a batch client.

``python -m train.serve`` starts the server, ``python -m train.batch`` runs a JSONL file through any
OpenAI-compatible server. See README, "Serving" and "Batch inference".
"""
