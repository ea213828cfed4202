"""How a rank's checkpoint files reach the disk: each one hashed as it is written, synchronously or in the background.

DeepSpeed writes every checkpoint file through its engine's ``checkpoint_engine`` (``save(state_dict, path)``:
the layer files, ``mp_rank_*_model_states.pt``, the ZeRO partitions). ``HashingWriter`` takes its place on every
rank: it serialises a state into memory, takes its sha256 and size from those very bytes, and writes them to a
temporary name renamed into place, so a file on disk is either whole or absent. The (name, size, sha256) of every
file a rank wrote go into the checkpoint's manifest (``complete.json``, train/checkpoint/store.py), written last.

``async_write``: ``save`` takes a copy of the state (every tensor cloned to CPU memory, at the step, so training may
change the weights at once) and hands it to one background thread, which serialises and writes while training
goes on. The trainer completes the checkpoint (manifest) once every rank's thread is done, and waits for that
before it starts the next checkpoint: at most one write is in flight.
"""
from __future__ import annotations

import hashlib
import io
import os
import queue
import threading
from pathlib import Path

import torch
from deepspeed.runtime.checkpoint_engine.checkpoint_engine import CheckpointEngine


def cpu_copy(obj):
    """The same nested state with every tensor copied into CPU memory of its own (views become whole tensors,
    as torch.save would store them)."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().to("cpu", copy=True)
    if isinstance(obj, dict):
        return type(obj)((k, cpu_copy(v)) for k, v in obj.items()) if type(obj) is not dict else {
            k: cpu_copy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [cpu_copy(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(cpu_copy(v) for v in obj)
    return obj


def write_file(state, path: str | Path) -> tuple[int, str]:
    """Serialise ``state`` (torch.save), write it atomically; (size, sha256) of the bytes written."""
    buf = io.BytesIO()
    torch.save(state, buf)
    data = buf.getbuffer()
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return len(data), hashlib.sha256(data).hexdigest()


class HashingWriter(CheckpointEngine):
    """DeepSpeed's checkpoint engine on one rank: files written whole, hashed as written; in the background when
    ``async_write``. ``written`` maps each path this rank wrote since ``take_written`` to (size, sha256)."""

    def __init__(self, async_write: bool = False):
        super().__init__()
        self.name = "GlassboxHashingWriter"
        self.async_write = async_write
        self.written: dict[str, tuple[int, str]] = {}
        self.before_write = None               # tests: a fault hook called with each path (train/loop/fault_hooks.py)
        self._lock = threading.Lock()
        self._queue: queue.Queue = queue.Queue()
        self._pending = 0
        self._error: BaseException | None = None
        self._thread = None
        if async_write:
            self._thread = threading.Thread(target=self._work, name="checkpoint-writer", daemon=True)
            self._thread.start()

    # -- DeepSpeed's interface
    def create(self, info):
        pass

    def save(self, state_dict, path: str):
        if not self.async_write:
            if self.before_write:
                self.before_write(path)
            self._record(path, write_file(state_dict, path))
            return
        copy = cpu_copy(state_dict)            # the state at this step; training may go on changing the original
        with self._lock:
            self._pending += 1
        self._queue.put((copy, path))

    def load(self, path: str, map_location=None):
        return torch.load(path, map_location=map_location, weights_only=False)

    def commit(self, info):
        return True

    def preserves_storage_sharing(self):
        return True

    # -- ours
    def _record(self, path: str, size_sha: tuple[int, str]) -> None:
        with self._lock:
            self.written[str(path)] = size_sha

    def _work(self) -> None:
        while True:
            state, path = self._queue.get()
            try:
                if self._error is None:
                    if self.before_write:
                        self.before_write(path)
                    self._record(path, write_file(state, path))
            except BaseException as e:          # noqa: BLE001 - reported to the trainer by done()/wait()
                self._error = e
            finally:
                del state
                with self._lock:
                    self._pending -= 1

    def done(self) -> bool:
        """Every file handed over so far is on disk (or the writer failed: wait() raises it)."""
        with self._lock:
            return self._pending == 0

    def wait(self) -> None:
        """Block until every file handed over is on disk; raise the writer thread's error, if any."""
        while not self.done():
            threading.Event().wait(0.005)
        if self._error is not None:
            raise RuntimeError(f"checkpoint write failed: {type(self._error).__name__}: {self._error}")

    def take_written(self) -> dict[str, tuple[int, str]]:
        with self._lock:
            out, self.written = self.written, {}
        return out


def install(engine, async_write: bool) -> HashingWriter:
    """Every rank: the engine writes its checkpoints through a HashingWriter from now on."""
    writer = HashingWriter(async_write)
    engine.checkpoint_engine = writer
    return writer
