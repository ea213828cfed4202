"""The weight files of a Hugging Face model folder (read by the import and by the export's checks)."""
from __future__ import annotations

import json
from pathlib import Path


def safetensors_files(model_dir: str | Path) -> list[Path]:
    """The safetensors files of a folder: those its index names, else model.safetensors; a missing one is a
    FileNotFoundError naming it."""
    model_dir = Path(model_dir)
    index = model_dir / "model.safetensors.index.json"
    names = sorted(set(json.loads(index.read_text())["weight_map"].values())) if index.is_file() else \
        ["model.safetensors"]
    for f in names:
        if not (model_dir / f).is_file():
            raise FileNotFoundError(f"{model_dir / f}: missing weight file")
    return [model_dir / f for f in names]
