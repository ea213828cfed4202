"""Loss spikes: detection agreed by every rank, skipping the update, and the record of what was skipped.

Detection: ``SpikeDetector`` in train/monitor/spike_rule.py, the rule the diagnosis replays afterwards.

Where the decision is taken (``SpikeGuard``). ``train_batch`` (of either engine) runs forward, backward,
the gradient all-reduce and the optimizer step in one call, so the trainer cannot look between backward and
step. The guard replaces ``step`` on the torch optimizer the trainer built, which DeepSpeed keeps inside its
own optimizer and calls last, after the global gradient norm exists:

- ZeRO-1 (``DeepSpeedZeroOptimizer.step``): computes the norm over every data, tensor and pipeline rank
  (``_global_grad_norm``), then calls the torch optimizer once per parameter group, then copies the fp32
  partitions back into the model and all-gathers them;
- bf16 without ZeRO (``BF16_Optimizer.step``): the same order;
- fp32 without ZeRO: the engine clips with ``clip_grad_norm_`` and calls the torch optimizer directly; the
  trainer wraps that clip call to keep the norm it computes (``keep_fp32_grad_norm`` in train/pretrain.py;
  DeepSpeed keeps none).

On the first call in a step the guard all-reduces (sum over the world group) [loss on last-stage ranks,
1 on last-stage ranks, norm, 1 where a norm exists]: every rank gets the same mean loss (the data-parallel
mean that ``train_batch`` returns) and norm, bit-identical, and the detector, whose history is made of
those same numbers, takes the same decision everywhere; no second collective is needed. A skipped step
leaves the torch optimizer untouched (no moment update, no step count), so ZeRO copies unchanged weights
back; DeepSpeed's own counters (``global_steps``, samples) still advance on every rank alike, and the
trainer sets the learning rate from its own step each time. When DeepSpeed skips a step itself (a
non-finite norm, ``overflow``) the torch optimizer is never called; ``finish`` then judges the step after
``train_batch`` (the same all-reduce on every rank) so the spike is still recorded and acted on.
"""
from __future__ import annotations

import json
from pathlib import Path

from train.monitor.spike_rule import Judgement, SpikeDetector

MAX_INLINE_DOCUMENTS = 10_000    # rollbacks.jsonl lists at most this many; the documents file lists all


class SpikeGuard:
    """Makes the torch optimizer's ``step`` a no-op for steps the detector calls spikes (see module doc)."""

    def __init__(self, engine, optimizer, detector: SpikeDetector):
        import torch
        from deepspeed.accelerator import get_accelerator

        self.engine, self.optimizer, self.detector = engine, optimizer, detector
        self.device = torch.device(get_accelerator().current_device_name())
        self.judgement: Judgement | None = None
        self._inner_step = optimizer.step
        optimizer.step = self._guarded_step

    def begin(self) -> None:
        self.judgement = None
        if self.engine.optimizer is self.optimizer:     # fp32 without ZeRO: the trainer's clip sets it anew
            self.engine._global_grad_norm = None

    def _local_norm(self) -> float | None:
        holder = self.engine if self.engine.optimizer is self.optimizer else self.engine.optimizer
        norm = getattr(holder, "_global_grad_norm", None)
        return None if norm is None else float(norm)

    def _judge(self) -> Judgement:
        import torch
        import torch.distributed as dist

        eng = self.engine
        last = bool(eng.is_last_stage()) and eng.total_loss is not None
        loss = float(eng.total_loss.detach().float().mean()) / eng.gradient_accumulation_steps() if last else 0.0
        norm = self._local_norm()
        t = torch.tensor([loss if last else 0.0, 1.0 if last else 0.0,
                          norm if norm is not None else 0.0, 1.0 if norm is not None else 0.0],
                         dtype=torch.float64, device=self.device)
        dist.all_reduce(t)
        t = t.cpu().tolist()
        mean_loss = t[0] / t[1] if t[1] else float("nan")
        mean_norm = t[2] / t[3] if t[3] else None
        return self.detector.judge(mean_loss, mean_norm)

    def _guarded_step(self, *args, **kwargs):
        if self.judgement is None:
            self.judgement = self._judge()
        if self.judgement.spike:
            for group in self.optimizer.param_groups:
                for p in group["params"]:
                    p.grad = None
            return None
        return self._inner_step(*args, **kwargs)

    def finish(self) -> Judgement:
        """After ``train_batch``: the step's judgement (judged now when DeepSpeed skipped the step itself)."""
        if self.judgement is None:
            self.judgement = self._judge()
            self.judgement.update_applied_by_deepspeed = False
            if not self.judgement.spike:        # DeepSpeed skipped it anyway: no update was applied
                self.judgement.spike, self.judgement.reason = True, "skipped by DeepSpeed (gradient overflow)"
        return self.judgement


# ---------------------------------------------------------------------------------------------- record

def _append(path: Path, row: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")


def batch_documents(order, data_step: int, global_batch: int) -> list[list[str]]:
    """[source, id] of every document in one data batch, first-seen order."""
    docs = order.documents(range(data_step * global_batch, (data_step + 1) * global_batch))
    return [[d["source"], d["id"]] for d in docs]


def record_spike(run: Path, *, step: int, data_step: int, global_batch: int, judgement: Judgement, action: str,
                 order) -> dict:
    """One line of ``spikes.jsonl``: the step, its data batch and documents, the numbers and what was done."""
    row = {"step": step, "data_step": data_step,
           "samples": [data_step * global_batch, (data_step + 1) * global_batch], "action": action,
           **{k: v for k, v in judgement.to_dict().items() if k != "spike"},
           "documents": batch_documents(order, data_step, global_batch)}
    _append(Path(run) / "spikes.jsonl", row)
    return row


def record_rollback(run: Path, *, step: int, spike_data_step: int, restored_step: int, old_shift: int,
                    new_shift: int, global_batch: int, judgement: Judgement, order) -> dict:
    """One line of ``rollbacks.jsonl`` and ``rollbacks/step_<N>.documents.jsonl``.

    Steps restored_step+1 .. step trained on data batches [restored_step + old_shift, step + old_shift):
    their updates are discarded with the rollback, and the next step starts at data batch
    restored_step + new_shift, so batches [restored_step + old_shift, restored_step + new_shift) never reach
    the model that goes on: those samples and their documents are the skipped ones."""
    first, end = restored_step + old_shift, restored_step + new_shift
    samples = range(first * global_batch, end * global_batch)
    docs = order.documents(samples)
    spike_batch = spike_data_step
    spike_samples = set(range(spike_batch * global_batch, (spike_batch + 1) * global_batch))
    detail = Path(run) / "rollbacks" / f"step_{step:08d}.documents.jsonl"
    detail.parent.mkdir(parents=True, exist_ok=True)
    with open(detail, "w") as f:
        for d in docs:
            f.write(json.dumps(d) + "\n")
    row = {"step": step, "restored_step": restored_step, "data_shift": new_shift,
           "spike_data_step": spike_batch,
           "skipped_data_steps": [first, end], "skipped_samples": [first * global_batch, end * global_batch],
           **{k: v for k, v in judgement.to_dict().items() if k != "spike"},
           "spike_documents": [[d["source"], d["id"]] for d in docs
                               if any(p[0] in spike_samples for p in d["pieces"])],
           "skipped_documents": [[d["source"], d["id"]] for d in docs[:MAX_INLINE_DOCUMENTS]],
           "skipped_documents_total": len(docs),
           "documents_file": str(detail.relative_to(run))}
    _append(Path(run) / "rollbacks.jsonl", row)
    return row


def rollback_since(run: Path, step: int) -> dict | None:
    """The last rollback to checkpoint ``step`` (a row of rollbacks.jsonl), when ``step`` is the newest complete
    checkpoint: a rollback is recorded the moment it happens, but its new data shift reaches a checkpoint only
    at the next save, so a run killed in between would otherwise resume at the old shift and train into the
    same bad batches again (and record the spike and rollback twice). Resuming takes the shift from here."""
    path = Path(run) / "rollbacks.jsonl"
    if not path.is_file():
        return None
    last = None
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
        except ValueError:              # a torn last line: the kill came while writing it
            continue
        if row.get("restored_step") == step:
            last = row
    return last
