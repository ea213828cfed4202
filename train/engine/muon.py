"""Muon on the hidden weight matrices, AdamW on the rest: one torch optimizer that DeepSpeed's engines drive.

Muon (Jordan et al. 2024; Moonshot's "Muon is scalable"): per 2-D weight, SGD momentum (Nesterov), the update
orthogonalised by five Newton-Schulz iterations of the quintic ``a X + b (X X^T) X + c (X X^T)^2 X`` with
(a, b, c) = (3.4445, -4.7750, 2.0315) on the update scaled to spectral norm <= 1 (bf16-safe coefficients of the
reference implementation), then scaled by sqrt(max(1, rows / cols)) so every matrix moves by about the same
RMS, and decoupled weight decay. Embeddings, the output head and the norm weights are not hidden matrices:
AdamW, as the reference recipe does. Each group carries ``lr_scale`` (its learning rate is the schedule's
value times it; the trainer sets ``lr``) and its own ``weight_decay``; ``describe`` puts both on the record.

Where it runs: one tensor-parallel rank holds a slice of each matrix, and the orthogonalisation of a slice is
not the slice of the orthogonalised matrix, so tp > 1 is refused; ZeRO-1 hands the optimizer flat partitions
of many parameters, not matrices, so ZeRO is refused too (train/config.py says so). The pipeline engine and
the plain one hand it the stage's own parameters: both work. Its state (momentum buffers, AdamW moments and
step) is the torch optimizer's state dict, which DeepSpeed saves and loads bit for bit.
"""
from __future__ import annotations

import math

import torch

NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)


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
                 ns_steps: int = 5):
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, momentum=momentum, ns_steps=ns_steps, weight_decay=0.0,
                        muon=False, lr_scale=1.0)
        super().__init__(groups, defaults)
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
                    update = orthogonalise(update, g["ns_steps"])
                    update.mul_(math.sqrt(max(1.0, p.shape[0] / p.shape[1])))
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


def param_groups(module: torch.nn.Module, o) -> list[dict]:
    """Muon on the blocks' 2-D weights; AdamW on embeddings and head (with decay) and norms (without)."""
    muon, adam_decay, adam_plain = [], [], []
    for name, p in module.named_parameters():
        if p.ndim == 2 and "embed_tokens" not in name and "lm_head" not in name:
            muon.append(p)
        elif p.ndim >= 2:
            adam_decay.append(p)
        else:
            adam_plain.append(p)
    groups = [{"params": muon, "muon": True, "lr_scale": o.muon_lr / o.lr, "weight_decay": o.weight_decay,
               "name": "muon: block matrices"},
              {"params": adam_decay, "muon": False, "lr_scale": 1.0, "weight_decay": o.weight_decay,
               "name": "adamw: embeddings and head"},
              {"params": adam_plain, "muon": False, "lr_scale": 1.0, "weight_decay": 0.0, "name": "adamw: norms"}]
    return [g for g in groups if g["params"]]


def describe(opt: MuonAdamW) -> list[dict]:
    """Per group: what it is, its base learning rate scale and decay (run.json)."""
    return [{"group": g.get("name"), "tensors": len(g["params"]), "lr_scale": g["lr_scale"],
             "weight_decay": g["weight_decay"]} for g in opt.param_groups]
