"""Checkpoints of a run: ``<run>/checkpoints/step_<N>/``, complete or ignored.

DeepSpeed writes each rank's files (pipeline layers per tensor rank, ZeRO optimizer partitions) through a
``HashingWriter`` (train/checkpoint/writer.py: each file written whole under a temporary name, its size and
sha256 taken from the bytes written); when every rank's files are on disk, rank 0 writes ``complete.json``, the
checkpoint's manifest (step, samples consumed, layout, and ``files``: every file's size and sha256), last, by an
atomic rename. Resuming takes the newest checkpoint that is *whole*: its manifest present and every file in it
with the recorded size and sha256 (``verify``); one that is not is named with the file that differs, and the
run falls back to the checkpoint before it (``latest_whole``). A run killed in the middle of saving therefore
resumes from the previous checkpoint, never from half of one, and so does a run whose newest checkpoint was
damaged on disk afterwards. Older complete checkpoints beyond ``keep`` are deleted after a new one is complete.

``Saver`` (collective) saves: with ``checkpoint.async`` the state is copied at the step and written by a
background thread on each rank while training goes on; the manifest follows once every rank is done, and a
new checkpoint first waits for the one in flight (at most one write in flight).

``load_llama_state_dict`` reads the layer files back into ``train.model.transformer.Llama`` names, merging tensor-parallel
slices, for evaluation and export without DeepSpeed or a process group.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from pathlib import Path
from typing import Callable

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


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify(ckpt_dir: Path) -> str | None:
    """Why checkpoint ``ckpt_dir`` is not whole (a file of its manifest missing, or of another size or sha256,
    named), or None when it is. A checkpoint written before manifests held files (no ``files`` key) cannot be
    checked and counts as whole."""
    ckpt_dir = Path(ckpt_dir)
    try:
        manifest = json.loads((ckpt_dir / COMPLETE).read_text())
    except (OSError, ValueError) as e:
        return f"checkpoint {ckpt_dir.name}: its manifest {COMPLETE} is unreadable ({e})"
    files = manifest.get("files")
    if files is None:
        return None
    for name, want in sorted(files.items()):
        f = ckpt_dir / name
        if not f.is_file():
            return f"checkpoint {ckpt_dir.name}: {name} is missing (listed in its {COMPLETE})"
        size = f.stat().st_size
        if size != want["size"]:
            return (f"checkpoint {ckpt_dir.name}: {name} has {size:,} bytes, its {COMPLETE} says "
                    f"{want['size']:,}")
        sha = sha256_of(f)
        if sha != want["sha256"]:
            return (f"checkpoint {ckpt_dir.name}: {name} changed on disk (sha256 {sha[:12]}..., its {COMPLETE} "
                    f"says {want['sha256'][:12]}...)")
    return None


def latest_whole(run: Path, say: Callable[[str], None] = print) -> tuple[int, Path] | None:
    """(step, directory) of the newest checkpoint that is whole (``verify``); every newer one that is not is
    named through ``say``."""
    for step, d in reversed(complete_checkpoints(run)):
        problem = verify(d)
        if problem is None:
            return step, d
        say(f"warning: {problem}: not resuming from it; trying the checkpoint before it")
    return None


class Saver:
    """Collective, every rank: checkpoints of one engine, each completed by its manifest; with ``async_write``
    the files are written in the background while training goes on (``poll`` between steps completes the
    checkpoint once every rank's writer is done; ``finish`` waits for it)."""

    def __init__(self, engine, run: Path, keep: int, async_write: bool):
        from train.checkpoint.writer import install

        self.engine, self.run, self.keep, self.async_write = engine, Path(run), keep, async_write
        self.writer = install(engine, async_write)
        self.pending: tuple[int, dict] | None = None       # (step, info) of the checkpoint being written

    def save(self, step: int, client_state: dict, info: dict) -> Path:
        import deepspeed.comm as dist

        self.finish()                                       # at most one write in flight
        root, tag = checkpoints_dir(self.run), tag_for(step)
        stale = root / tag
        if dist.get_rank() == 0 and stale.exists():         # an incomplete save of this step from a killed run
            (stale / COMPLETE).unlink(missing_ok=True)
            shutil.rmtree(stale, ignore_errors=True)
        dist.barrier()
        self.engine.save_checkpoint(str(root), tag=tag, client_state=client_state, save_latest=False)
        self.pending = (step, info)
        if not self.async_write:
            self.finish()
        return root / tag

    def poll(self) -> None:
        """Collective: complete the checkpoint in flight if every rank has written its files (no wait)."""
        if self.pending is None:
            return
        import deepspeed.comm as dist

        flag = torch.tensor([1 if self.writer.done() else 0], dtype=torch.int32)
        dist.all_reduce(flag, op=dist.ReduceOp.MIN)
        if int(flag.item()):
            self.finish()

    def finish(self) -> None:
        """Collective: wait for the checkpoint in flight, then rank 0 writes its manifest (every rank's files
        with size and sha256, and any file DeepSpeed copied in itself) and deletes what ``keep`` lets go."""
        if self.pending is None:
            return
        import deepspeed.comm as dist

        step, info = self.pending
        self.pending = None
        err = None
        try:
            self.writer.wait()
        except RuntimeError as e:
            err = str(e)
        parts: list = [None] * dist.get_world_size()
        dist.all_gather_object(parts, (err, self.writer.take_written()))
        errors = [e for e, _ in parts if e]
        if errors:
            raise RuntimeError(f"checkpoint {tag_for(step)}: {errors[0]}")
        folder = checkpoints_dir(self.run) / tag_for(step)
        if dist.get_rank() == 0:
            files = {}
            for _, written in parts:
                for path, (size, sha) in written.items():
                    files[Path(path).resolve().relative_to(folder.resolve()).as_posix()] = {"size": size,
                                                                                          "sha256": sha}
            for f in sorted(folder.rglob("*")):             # files DeepSpeed wrote itself (zero_to_fp32.py)
                name = f.relative_to(folder).as_posix()
                if f.is_file() and name not in files and not f.name.startswith("."):
                    files[name] = {"size": f.stat().st_size, "sha256": sha256_of(f)}
            tmp = folder / f".{COMPLETE}.tmp"
            tmp.write_text(json.dumps({"step": step, "time": time.time(), **info, "files": dict(sorted(files.items()))},
                                      indent=1))
            os.replace(tmp, folder / COMPLETE)
            if self.keep:
                for _, old in complete_checkpoints(self.run)[:-self.keep]:
                    (old / COMPLETE).unlink()
                    shutil.rmtree(old, ignore_errors=True)
        dist.barrier()


def save(engine, run: Path, step: int, client_state: dict, keep: int, info: dict) -> Path:
    """Collective: one checkpoint written now, with its manifest (``Saver`` without a write in the background)."""
    return Saver(engine, run, keep, async_write=False).save(step, client_state, info)


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
