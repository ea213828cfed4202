"""pp = 1: the model's one pipeline stage in DeepSpeed's plain engine, without the pipeline schedule.

DeepSpeed's ``PipelineEngine`` interprets a schedule of instructions per micro-batch, moves every batch
through its own buffers, and broadcasts the loss across stages, even when there is one stage. With pp = 1
none of that is needed: ``SingleStageEngine`` runs forward, backward and ``step`` per micro-batch, as any
DeepSpeed training loop does, on the same ``LlamaPipe`` (train/engine/pipeline_stages.py).

It keeps the pipeline engine's interface where the trainer uses it (``train_batch``, ``eval_batch``,
``total_loss``, ``agg_additional_losses``, ``is_first_stage`` / ``is_last_stage``) and its checkpoint files:
the module is saved layer by layer (``layer_NN-model_states.pt``), so a pp = 1 checkpoint and a pp > 1 one
reshard into each other (train/checkpoint/reshard.py) and are read by export alike.
"""
from __future__ import annotations

from collections import OrderedDict

import torch
from deepspeed import comm as dist
from deepspeed.runtime.config import DeepSpeedConfig
from deepspeed.runtime.engine import DeepSpeedEngine
from deepspeed.runtime.pipe.engine import PipelineEngine


class SingleStageEngine(DeepSpeedEngine):
    # Per-layer module files, exactly as the pipeline engine writes and reads them.
    module_state_dict = PipelineEngine.module_state_dict
    load_module_state_dict = PipelineEngine.load_module_state_dict

    def __init__(self, model, optimizer, config: dict, model_parallel_unit: bool = True):
        # model_parallel_unit False (tp = pp = 1 only): DeepSpeed builds its optimizer without the grid, taking
        # every rank as the data group, which the grid is then anyway: its bf16 optimizer runs Muon only that way.
        # The engine gets the grid back afterwards for its gradient reductions, which read it.
        mpu = model.mpu()
        super().__init__(args=None, model=model, optimizer=optimizer, mpu=mpu if model_parallel_unit else None,
                         config=config, config_class=DeepSpeedConfig(config, mpu))
        self.mpu = mpu
        self.total_loss = None
        self.agg_additional_losses = None
        # What the pipeline engine's constructor sets on its module: layer files written by dp rank 0 (or
        # spread), and the blocks' activation checkpointing ready.
        model.checkpoint_parallel_write_pipeline = self._config.checkpoint_parallel_write_pipeline
        if model.activation_checkpoint_interval > 0:
            model._precompute_checkpointable_values()

    def is_first_stage(self) -> bool:
        return True

    def is_last_stage(self) -> bool:
        return True

    def _loss(self, batch) -> torch.Tensor:
        inputs, labels = batch
        return self.module.loss_fn(self(inputs.to(self.device, non_blocking=True)),
                                   labels.to(self.device, non_blocking=True))

    def train_batch(self, data_iter) -> torch.Tensor:
        """One optimizer step over ``gradient_accumulation_steps()`` micro-batches; the mean loss over them
        and over data-parallel ranks (a tensor: reading it is the caller's choice of when to synchronise)."""
        self.module.train()
        self.total_loss, extra = None, None
        for _ in range(self.gradient_accumulation_steps()):
            loss = self._loss(next(data_iter))
            # Summed before step(): the spike guard judges total_loss inside the optimizer's step.
            self.total_loss = loss.detach() if self.total_loss is None else self.total_loss + loss.detach()
            parts = self.module.get_additional_losses()
            if parts is not None:
                extra = OrderedDict((k, v.detach() + (extra[k] if extra else 0)) for k, v in parts.items())
            self.backward(loss)          # scaled by 1 / accumulation steps; reduced across dp at the boundary
            self.step()
        names = list(extra) if extra else []
        means = self._dp_mean([self.total_loss] + [extra[k] for k in names], self.gradient_accumulation_steps())
        self.agg_additional_losses = OrderedDict(zip(names, means[1:])) if names else None
        return means[0]

    @torch.no_grad()
    def eval_batch(self, data_iter, num_micro_batches: int) -> torch.Tensor:
        """Mean loss over ``num_micro_batches`` micro-batches and the data-parallel ranks."""
        self.module.eval()
        total = None
        for _ in range(num_micro_batches):
            loss = self._loss(next(data_iter)).float()
            total = loss if total is None else total + loss
        self.module.train()
        return self._dp_mean([total], num_micro_batches)[0]

    def _dp_mean(self, sums: list[torch.Tensor], count: int) -> list[torch.Tensor]:
        """Each sum / count, averaged over the data-parallel group in one collective."""
        flat = torch.stack([s.float().reshape(()) for s in sums]) / count
        if self.dp_world_size > 1:
            dist.all_reduce(flat, group=self.mpu.get_data_parallel_group())
            flat /= self.dp_world_size
        return list(flat.unbind())
