"""Micro-batches for one data-parallel rank, addressed by step: the loader's whole state is the step.

Row r of step t is global sample t * global_batch + r. Rows are dealt micro-batch by micro-batch: micro-batch
m of data-parallel rank d holds rows m * (dp * mb) + d * mb + [0, mb). Which samples a step trains on
therefore depends on the global batch only, never on the parallel layout, and resuming at step t resumes
at sample t * global_batch, so no sample is repeated or skipped.
"""
from __future__ import annotations

import json
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch

from train.data.sample_index import DataOrder


class Loader:
    def __init__(self, order: DataOrder, global_batch: int, micro_batch: int, dp: int, dp_rank: int,
                 consumed_log: Path | None = None, run_start: int = 0):
        assert global_batch % (micro_batch * dp) == 0
        self.order, self.G, self.mb, self.dp, self.rank = order, global_batch, micro_batch, dp, dp_rank
        self.grad_accum = global_batch // (micro_batch * dp)
        self.consumed_log, self.run_start = consumed_log, run_start
        self._reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="read-ahead")
        self._ahead = None       # (step, future of its prepared micro-batches)

    def rows(self, micro: int) -> np.ndarray:
        return micro * self.dp * self.mb + self.rank * self.mb + np.arange(self.mb)

    def cursor(self, step: int) -> int:
        """Samples consumed before ``step`` (0-based) starts."""
        return step * self.G

    def _batch(self, seqs: list[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.from_numpy(np.stack(seqs))
        return x[:, :-1].contiguous(), x[:, 1:].contiguous()

    def _prepare(self, step: int) -> list[tuple[np.ndarray, list[np.ndarray]]]:
        """(global sample ids, sequences) of each micro-batch of ``step``: the reading, no side effect."""
        if (step + 1) * self.G > self.order.n_samples:
            raise RuntimeError(f"step {step} needs samples up to {(step + 1) * self.G}, the data order has "
                               f"{self.order.n_samples}")
        out = []
        for m in range(self.grad_accum):
            ids = self.cursor(step) + self.rows(m)
            out.append((ids, [self.order.sample(int(g)) for g in ids]))
        return out

    def train(self, step: int):
        """The ``grad_accum`` micro-batches (inputs, labels) of this rank for optimizer step ``step``, read
        ahead: step + 1 is read on a background thread while ``step`` trains (a rollback, which moves the
        cursor, just reads its step in the foreground)."""
        ahead, self._ahead = self._ahead, None
        prepared = ahead[1].result() if ahead and ahead[0] == step else self._prepare(step)
        if (step + 2) * self.G <= self.order.n_samples:
            self._ahead = (step + 1, self._reader.submit(self._prepare, step + 1))
        for m, (ids, seqs) in enumerate(prepared):
            if self.consumed_log is not None:       # written as a micro-batch is handed over, never ahead
                crc = zlib.crc32(np.stack(seqs).tobytes())
                with open(self.consumed_log, "a") as f:
                    f.write(json.dumps({"step": step, "micro": m, "dp": self.rank,
                                        "samples": ids.tolist(), "crc32": crc,
                                        "run_start": self.run_start}) + "\n")
            yield self._batch(seqs)

    def val_micro_batches(self) -> int:
        return self.order.val_samples // (self.mb * self.dp)

    def val(self, source: int):
        """This rank's validation micro-batches of one source (all ranks together cover every sequence)."""
        for m in range(self.val_micro_batches()):
            yield self._batch([self.order.val_sample(source, int(v)) for v in self.rows(m)])
