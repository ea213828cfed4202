"""Checkpoints of a run: ``<run>/checkpoints/step_<N>/``, complete or ignored.

DeepSpeed writes each rank's files (pipeline layers per tensor rank, ZeRO optimizer partitions); when every
rank has returned from ``save_checkpoint`` a barrier passes and rank 0 writes ``complete.json`` (step,
samples consumed, layout) by an atomic rename. Resuming takes the newest directory with that file, so a run
killed in the middle of saving resumes from the previous checkpoint, never from half of one. Older complete
checkpoints beyond ``keep`` are deleted after a new one is complete.

``load_llama_state_dict`` reads the layer files back into ``train.model.transformer.Llama`` names, merging tensor-parallel
slices, for evaluation and export without DeepSpeed or a process group.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import torch

from train.model.transformer import Llama, ModelConfig

COMPLETE = "complete.json"


def checkpoints_dir(run: Path) -> Path:
    return Path(run) / "checkpoints"


def tag_for(step: int) -> str:
    return f"step_{step:08d}"


def complete_checkpoints(run: Path) -> list[tuple[int, Path]]:
    """(step, directory) of every complete checkpoint, oldest first."""
    out = []
    root = checkpoints_dir(run)
    if not root.is_dir():
        return out
    for d in root.iterdir():
        m = re.fullmatch(r"step_(\d+)", d.name)
        if m and (d / COMPLETE).is_file():
            out.append((int(m.group(1)), d))
    return sorted(out)


def latest_complete(run: Path) -> tuple[int, Path] | None:
    done = complete_checkpoints(run)
    return done[-1] if done else None


def data_shift(ckpt_dir: Path) -> int:
    """Data batches the run's cursor is ahead of the step at a complete checkpoint (rollbacks; 0 without)."""
    try:
        return int(json.loads((Path(ckpt_dir) / COMPLETE).read_text()).get("data_shift", 0))
    except (OSError, ValueError):
        return 0


def save(engine, run: Path, step: int, client_state: dict, keep: int, info: dict) -> Path:
    """Collective: every rank calls it."""
    import deepspeed.comm as dist

    root = checkpoints_dir(run)
    tag = tag_for(step)
    stale = root / tag
    if dist.get_rank() == 0 and stale.exists():           # an incomplete save of this step from a killed run
        (stale / COMPLETE).unlink(missing_ok=True)
        shutil.rmtree(stale, ignore_errors=True)
    dist.barrier()
    engine.save_checkpoint(str(root), tag=tag, client_state=client_state, save_latest=False)
    dist.barrier()
    if dist.get_rank() == 0:
        tmp = root / tag / f".{COMPLETE}.tmp"
        tmp.write_text(json.dumps({"step": step, "time": time.time(), **info}, indent=1))
        os.replace(tmp, root / tag / COMPLETE)
        if keep:
            for _, old in complete_checkpoints(run)[:-keep]:
                (old / COMPLETE).unlink()
                shutil.rmtree(old, ignore_errors=True)
    dist.barrier()
    return root / tag


def load(engine, run: Path, step: int) -> dict:
    path, client_state = engine.load_checkpoint(str(checkpoints_dir(run)), tag=tag_for(step),
                                                load_optimizer_states=True, load_lr_scheduler_states=False)
    if path is None:
        raise RuntimeError(f"could not load checkpoint {checkpoints_dir(run) / tag_for(step)}")
    return client_state or {}


# Which dimension each weight is split along across tensor-parallel ranks (None: replicated).
def _partition_dim(name: str) -> int | None:
    if name.endswith(("o_proj.weight", "down_proj.weight")):
        return 1
    if name.endswith(("norm.weight", "layernorm.weight")):
        return None
    return 0


def load_llama_state_dict(ckpt_dir: str | Path, n_layers: int) -> dict[str, torch.Tensor]:
    """A ``Llama`` state dict (single process, tensor slices merged) from a pipeline checkpoint dir."""
    ckpt_dir = Path(ckpt_dir)
    names = layer_names_for(n_layers)
    out: dict[str, torch.Tensor] = {}
    for idx, prefix in enumerate(names):
        files = sorted(ckpt_dir.glob(f"layer_{idx:02d}-*model_states.pt"))
        if not files:
            raise FileNotFoundError(f"{ckpt_dir}: no files for pipeline layer {idx} ({prefix})")
        parts = [torch.load(f, map_location="cpu", weights_only=True) for f in files]
        for key in parts[0]:
            dim = _partition_dim(key)
            tensors = [p[key] for p in parts]
            out[f"{prefix}.{key}"] = tensors[0] if dim is None or len(tensors) == 1 else torch.cat(tensors, dim)
    return out


def layer_names_for(n_layers: int) -> list[str]:
    return ["embed"] + [f"layers.{i}" for i in range(n_layers)] + ["head"]


# --- the layout of a checkpoint's module weights (read by reshard, export and the trainer itself) ------

LAYER_FILE = re.compile(r"layer_(\d+)(?:-model_(\d+))?-model_states\.pt")  # global layer, tensor rank
VOCAB_ROWS = ("embed.embed_tokens.weight", "head.lm_head.weight")  # padded to a multiple of the split


def layer_files(ckpt_dir: Path) -> dict[int, dict[int, Path]]:
    """{global pipeline layer: {tensor-parallel rank: its model_states file}} of a checkpoint folder."""
    files: dict[int, dict[int, Path]] = {}
    for f in Path(ckpt_dir).iterdir():
        m = LAYER_FILE.fullmatch(f.name)
        if m:
            files.setdefault(int(m.group(1)), {})[int(m.group(2) or 0)] = f
    return files


def meta_model(cfg: ModelConfig) -> Llama:
    """The single-process model without memory or random draws: shapes and partition dims only."""
    with torch.device("meta"):
        return Llama(cfg)


def partition_dims(model: Llama) -> dict[str, int | None]:
    """Full parameter name -> the dim tensor-parallel ranks split it along (None: replicated)."""
    return {name: getattr(p, "partition_dim", None) for name, p in model.named_parameters()}
