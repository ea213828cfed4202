"""Faults that tests inject into a real run, kept out of the training loop.

The tests launch the trainer under torchrun, so the environment is the only way in:

- ``GLASSBOX_FAULT_AFTER_STEP=N``: rank 0 kills itself with SIGKILL right after step N (a crash between
  checkpoints);
- ``GLASSBOX_FAULT_BAD_BATCH=N``: data batch N (0-based, the ``data_step`` of the records) arrives as all-zero
  token ids, what a shard of zero bytes decodes to (a corrupted batch that makes a loss spike);
- ``GLASSBOX_FAULT_IN_WRITE=N``: rank 0 kills itself with SIGKILL while writing the second file of its part of
  checkpoint N (with ``checkpoint.async``, in the background writer, while training goes on).

``from_env()`` is None when none is set, which is always the case outside the tests.
"""
from __future__ import annotations

import os
import signal
from dataclasses import dataclass


@dataclass(frozen=True)
class FaultHooks:
    kill_after_step: int | None = None
    bad_batch: int | None = None
    kill_in_write: int | None = None

    def batches(self, data_step: int, batches):
        """The micro-batches of ``data_step``, zeroed when it is the bad batch (first and last stage alike)."""
        if batches is None or data_step != self.bad_batch:
            return batches
        return ((x.new_zeros(x.shape), y.new_zeros(y.shape)) for x, y in batches)

    def after_step(self, step: int, rank: int) -> None:
        if step == self.kill_after_step and rank == 0:
            os.kill(os.getpid(), signal.SIGKILL)


    def writing(self, rank: int):
        """A hook for the checkpoint writer (train/checkpoint/writer.py), called before each file it writes."""
        if self.kill_in_write is None or rank != 0:
            return None
        tag, seen = f"step_{self.kill_in_write:08d}", []

        def before(path) -> None:
            if tag in str(path):
                seen.append(path)
                if len(seen) == 2:
                    os.kill(os.getpid(), signal.SIGKILL)
        return before


def from_env(env=os.environ) -> FaultHooks | None:
    after, bad = env.get("GLASSBOX_FAULT_AFTER_STEP"), env.get("GLASSBOX_FAULT_BAD_BATCH")
    write = env.get("GLASSBOX_FAULT_IN_WRITE")
    if not after and not bad and not write:
        return None
    return FaultHooks(kill_after_step=int(after) if after else None, bad_batch=int(bad) if bad else None,
                      kill_in_write=int(write) if write else None)
