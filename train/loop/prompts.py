"""The bundled prompt set (train/evaluation/prompts.jsonl: one {"id", "category", "prompt"} a line): the
blind comparison of two models answers it (train/evaluation/compare.py), a GGUF file's generations are
checked on it (train/export/gguf.py)."""
from __future__ import annotations

import json
from pathlib import Path

PROMPTS = Path(__file__).resolve().parents[1] / "evaluation" / "prompts.jsonl"


def read_prompts(path: str | Path = PROMPTS) -> list[dict]:
    rows = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if not isinstance(row, dict) or not isinstance(row.get("prompt"), str):
            raise ValueError(f"{path}:{n}: expected an object with a string 'prompt'")
        row.setdefault("id", f"p{n:02d}")
        row.setdefault("category", "")
        rows.append(row)
    ids = [r["id"] for r in rows]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: duplicate prompt ids")
    if not rows:
        raise ValueError(f"{path}: no prompts")
    return rows
