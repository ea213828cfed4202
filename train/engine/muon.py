"""Muon on the hidden weight matrices, AdamW on the rest: one torch optimizer that DeepSpeed's engines drive.

Muon (Jordan et al. 2024; Moonshot's "Muon is scalable"): per 2-D weight, SGD momentum (Nesterov), the update
orthogonalised by five Newton-Schulz iterations of the quintic ``a X + b (X X^T) X + c (X X^T)^2 X`` with
(a, b, c) = (3.4445, -4.7750, 2.0315) on the update scaled to spectral norm <= 1 (bf16-safe coefficients of the
reference implementation), then scaled by sqrt(max(1, rows / cols)) so every matrix moves by about the same
RMS, and decoupled weight decay. Embeddings, the output head and the norm weights are not hidden matrices:
AdamW, as the reference recipe does. Each group carries ``lr_scale`` (its learning rate is the schedule's
value times it; the trainer sets ``lr``) and its own ``weight_decay``; ``describe`` puts both on the record.

Where it runs: the pipeline engine and the plain one hand it the stage's own parameters. Under tensor
parallelism a rank holds a slice of each matrix, and Newton-Schulz of a slice is not the slice of the
orthogonalised matrix: the momentum stays sliced (it is elementwise), and the update is gathered from the
tensor group, orthogonalised whole (every rank the same computation) and sliced again, so tp > 1 takes the
same step as one process. Without ZeRO its state (momentum buffers, AdamW moments and step) is the torch
optimizer's state dict, which DeepSpeed saves and loads bit for bit and train/checkpoint/reshard.py carries
into other layouts. Under ZeRO-1 DeepSpeed's own Muon runs instead (train/pretrain.py).
"""
from __future__ import annotations

import math

import torch

NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)


def whole_update(update: torch.Tensor, dim: int | None, tp_group, steps: int = 5) -> torch.Tensor:
    """Orthogonalise a matrix of which this tensor rank holds the slice ``update`` along ``dim`` (None: all of
    it): gathered, orthogonalised and scaled as the full matrix, and this rank's slice returned."""
    import torch.distributed as dist

    world = 1 if dim is None or tp_group is None else dist.get_world_size(tp_group)
    if world == 1:
        full = update
    else:
        parts = [torch.empty_like(update) for _ in range(world)]
        dist.all_gather(parts, update.contiguous(), group=tp_group)
        full = torch.cat(parts, dim)
    out = orthogonalise(full, steps)
    out.mul_(math.sqrt(max(1.0, full.shape[0] / full.shape[1])))
    return out if world == 1 else out.chunk(world, dim)[dist.get_rank(tp_group)].contiguous()


def orthogonalise(g: torch.Tensor, steps: int = 5, eps: float = 1e-7) -> torch.Tensor:
    """Newton-Schulz iterations towards U V^T of g's SVD (singular values driven to about [0.7, 1.2])."""
    a, b, c = NS_COEFFICIENTS
    x = g.float()
    transposed = x.shape[0] > x.shape[1]
    if transposed:
        x = x.T
    x = x / (x.norm() + eps)
    for _ in range(steps):
        s = x @ x.T
        x = a * x + (b * s + c * s @ s) @ x
    return (x.T if transposed else x).to(g.dtype)


class MuonAdamW(torch.optim.Optimizer):
    """Groups with ``muon=True`` take Muon steps, the others AdamW steps."""

    def __init__(self, groups: list[dict], lr: float, betas=(0.9, 0.95), eps: float = 1e-8, momentum: float = 0.95,
                 ns_steps: int = 5, tp_group=None):
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, momentum=momentum, ns_steps=ns_steps, weight_decay=0.0,
                        muon=False, lr_scale=1.0)
        super().__init__(groups, defaults)
        self.tp_group = tp_group
        for g in self.param_groups:
            if g["muon"] and any(p.ndim != 2 for p in g["params"]):
                raise ValueError("Muon groups hold 2-D weight matrices only")

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for g in self.param_groups:
            lr, wd = g["lr"], g["weight_decay"]
            for p in g["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if g["muon"]:
                    buf = state.setdefault("momentum_buffer", torch.zeros_like(p))
                    buf.mul_(g["momentum"]).add_(p.grad)
                    update = p.grad.add(buf, alpha=g["momentum"])                   # Nesterov
                    update = whole_update(update, getattr(p, "partition_dim", None), self.tp_group, g["ns_steps"])
                    p.mul_(1 - lr * wd)
                    p.add_(update, alpha=-lr)
                else:
                    if not state:
                        state["step"] = torch.zeros((), dtype=torch.float32)
                        state["exp_avg"] = torch.zeros_like(p)
                        state["exp_avg_sq"] = torch.zeros_like(p)
                    b1, b2 = g["betas"]
                    state["step"] += 1
                    t = float(state["step"])
                    state["exp_avg"].lerp_(p.grad, 1 - b1)
                    state["exp_avg_sq"].mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                    denom = (state["exp_avg_sq"] / (1 - b2 ** t)).sqrt_().add_(g["eps"])
                    p.mul_(1 - lr * wd)
                    p.addcdiv_(state["exp_avg"], denom, value=-lr / (1 - b1 ** t))
        return loss


GROUP_NAMES = ("muon: block matrices", "adamw: embeddings and head", "adamw: norms")


def group_of(name: str, ndim: int) -> int:
    """0: Muon (a block's 2-D weight), 1: AdamW with decay (embeddings, head), 2: AdamW without (norms)."""
    if ndim == 2 and "embed_tokens" not in name and "lm_head" not in name:
        return 0
    return 1 if ndim >= 2 else 2


def grouped(named: list[tuple[str, int]]) -> list[list[str]]:
    """The names of each non-empty group, in module order: the optimizer's param_groups, which the checkpoint's
    state indexes (train/checkpoint/reshard.py reads a checkpoint's state back with it)."""
    out = [[], [], []]
    for name, ndim in named:
        out[group_of(name, ndim)].append(name)
    return [g for g in out if g]


def param_groups(module: torch.nn.Module, o) -> list[dict]:
    """Muon on the blocks' 2-D weights; AdamW on embeddings and head (with decay) and norms (without)."""
    params = dict(module.named_parameters())
    settings = [(True, o.muon_lr / o.lr, o.weight_decay), (False, 1.0, o.weight_decay), (False, 1.0, 0.0)]
    out = []
    for names in grouped([(n, p.ndim) for n, p in params.items()]):
        k = group_of(names[0], params[names[0]].ndim)
        muon, lr_scale, decay = settings[k]
        out.append({"params": [params[n] for n in names], "muon": muon, "lr_scale": lr_scale,
                    "weight_decay": decay, "name": GROUP_NAMES[k]})
    return out


def deepspeed_muon(groups: list[dict], o):
    """ZeRO-1: DeepSpeed's own Muon (deepspeed/runtime/zero/muon/), the same groups. ZeRO-1 hands the optimizer
    flat partitions of many parameters; DeepSpeed's ZeRO optimizer recognises its MuonWithAuxAdam, gathers each
    tagged matrix's gradient whole while it fills the partition and orthogonalises it there. Its momentum is an
    exponential average (``lerp``), ours a sum; after Newton-Schulz's normalisation the two give one update.
    Newton-Schulz in fp32 ("standard"): DeepSpeed's "gram" runs in fp16 wherever the device has it."""
    from deepspeed.runtime.zero.muon.muon_optimizer import MuonWithAuxAdam

    out = []
    for g in groups:
        for p in g["params"]:
            p.use_muon = g["muon"]                  # read by DeepSpeed's ZeRO optimizer
        extra = ({"momentum": o.muon_momentum, "ns_method": "standard"} if g["muon"]
                 else {"betas": tuple(o.betas), "eps": o.eps})
        out.append({**g, "use_muon": g["muon"], "lr": o.lr * g["lr_scale"], **extra})
    return MuonWithAuxAdam(out)


def describe(opt: MuonAdamW) -> list[dict]:
    """Per group: what it is, its base learning rate scale and decay (run.json)."""
    return [{"group": g.get("name"), "tensors": len(g["params"]), "lr_scale": g["lr_scale"],
             "weight_decay": g["weight_decay"]} for g in opt.param_groups]
