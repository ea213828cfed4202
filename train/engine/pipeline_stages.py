"""The model as a DeepSpeed ``PipelineModule`` over a pipe x data x tensor topology.

``PipeModelDataParallelTopology(num_pp, num_mp, num_dp)`` orders ranks as (pipe, data, model) with the
tensor ("model") axis fastest, so a tensor-parallel group is adjacent ranks (one node's fast links) and
DeepSpeed's data-parallel groups (gradient all-reduce, ZeRO partitions) hold one rank per tensor slice.
The tensor-parallel process groups are made here from the same topology, before the layers are built.

Layers: ``Embedding``, ``Block`` x n_layers, ``Head``; the loss is ``LossFn`` on the last stage. Stages
are cut so that each holds the same number of blocks (``partition_method="type:Block"``).
"""
from __future__ import annotations

from collections import OrderedDict

import torch
import torch.distributed as dist
from deepspeed.pipe import LayerSpec, PipelineModule
from deepspeed.runtime.pipe.topology import PipeModelDataParallelTopology

from train.model.transformer import Block, Embedding, Head, LossFn, ModelConfig
from train.parallel.tensor_parallel import tp_rank, tp_size


def build_topology(tp: int, pp: int, dp: int) -> PipeModelDataParallelTopology:
    return PipeModelDataParallelTopology(num_pp=pp, num_mp=tp, num_dp=dp)


def tensor_parallel_group(topo: PipeModelDataParallelTopology):
    """This rank's tensor-parallel group (None when tp == 1). Every rank must call it: each creates
    every group, in the same order, as torch.distributed requires."""
    if topo.get_dim("model") == 1:
        return None
    mine = None
    for ranks in topo.get_axis_comm_lists("model"):
        group = dist.new_group(ranks=ranks)
        if dist.get_rank() in ranks:
            mine = group
    return mine


class LlamaPipe(PipelineModule):
    """PipelineModule that also reports the cross-entropy and z-loss parts when z-loss is on."""

    def get_additional_losses(self):
        fn = self.loss_fn
        if not getattr(fn, "z_loss", 0.0):
            return None
        zero = torch.zeros(())
        return OrderedDict(ce=fn.last_ce if fn.last_ce is not None else zero,
                           z_loss=fn.last_z if fn.last_z is not None else zero)


def layer_specs(cfg: ModelConfig, group) -> list[LayerSpec]:
    return ([LayerSpec(Embedding, cfg, group)]
            + [LayerSpec(Block, cfg, i, group) for i in range(cfg.n_layers)]
            + [LayerSpec(Head, cfg, group)])


def build_pipeline(cfg: ModelConfig, topo: PipeModelDataParallelTopology, group, z_loss: float = 0.0,
                   activation_checkpointing: bool = False) -> LlamaPipe:
    per = cfg.padded_vocab // tp_size(group)
    loss_fn = LossFn(group, tp_rank(group) * per, z_loss)
    return LlamaPipe(layers=layer_specs(cfg, group), topology=topo, loss_fn=loss_fn,
                     partition_method="type:Block",
                     activation_checkpoint_interval=1 if activation_checkpointing else 0,
                     # Only whole blocks: checkpointing the embedding (integer input) breaks backward.
                     checkpointable_layers=["Block"])

