"""Serving the exported model: an OpenAI-compatible server on CPU (or vLLM on GPUs) and a batch client.

``glassbox serve`` starts the server, ``glassbox batch`` runs a JSONL file through any
OpenAI-compatible server. See docs/export-and-serving.md, "Serving" and "Batch inference".
"""
