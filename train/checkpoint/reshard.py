"""Resume a run in another parallel layout: a checkpoint's state per parameter, sliced again for the new one.

A DeepSpeed checkpoint is written for one layout (train/checkpoint/store.py): pipeline layer files per tensor rank,
and the optimizer state (fp32 master weights, Adam's two moments) as flat ZeRO partitions per data-parallel
rank of each model-parallel rank. Loading it needs the same tp, pp, dp and ZeRO stage. When the layout of the
newest checkpoint differs from the config's, the trainer goes through a layout-free form instead, the idea of
DeepSpeed's universal checkpoint (``deepspeed/checkpoint/``), written for this trainer's layers:

1. ``convert`` (every rank takes some of the old model-parallel ranks): the flat partitions of each old
   model-parallel rank are cut back into its parameters, following DeepSpeed's own reconstruction order
   (``param_shapes`` of the ``mp_rank`` file, packed in order with ``param_alignment_paddings`` after each),
   checked against ``param_slice_mappings``, and each parameter's (fp32, exp_avg, exp_avg_sq, step) is
   written as ``<run>/reshard/step_N/<Llama name>.tp<t>.pt``: the slice of old tensor rank t, named as in
   ``train.model.transformer.Llama`` (pipeline indices resolved), so the old pipeline split is gone.
2. ``apply_state`` (every rank, its own parameters): the old tensor slices are joined along the dim each
   weight is split on (``partition_dim``, read from the model as the export does; replicated norms are taken
   from slice 0) and cut for the new tensor rank; the fp32 values go into this rank's ZeRO fragments (through
   each parameter's ``_hp_mapping``, DeepSpeed's link between a module weight and its place in the flat
   partition), the moments into flat buffers handed to the torch optimizer's ``load_state_dict``, and the
   module weights become the fp32 values cast to the training dtype (what DeepSpeed does after every step).
3. The trainer's own state (step, data cursor and shift, tokens per source, spike history) comes from the
   old checkpoint's client state; the learning rate is a function of the step (train/loop/schedule.py) and the
   data order depends on the global batch only (train/data/loader.py), so neither needs more.

Nothing is rounded on the way: a state loaded into another layout and saved again is bit-identical, and the
trainer's losses after a layout change match those of the unchanged run as closely as two layouts ever
agree (summation order; tests/train/checkpoint/test_train_reshard.py). Memory: ``convert`` reads the partitions memory-mapped
and holds one parameter at a time; ``apply_state`` one full (unsplit) parameter at a time. Disk: the converted
state, 12 bytes per parameter, until every rank has loaded it.

The same ``apply_state`` sets weights from a Hugging Face model (train/checkpoint/hf_import.py), without moments.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable

import torch

from train.checkpoint.store import COMPLETE, checkpoints_dir, layer_names_for, tag_for

LAYOUT_KEYS = ("tp", "pp", "dp", "zero_stage")
MOMENTS = ("exp_avg", "exp_avg_sq")
STATE = MOMENTS + ("momentum_buffer",)        # Adam's two moments; Muon's momentum (train/engine/muon.py)


class ReshardError(RuntimeError):
    """The checkpoint cannot be carried into the new layout; the message names the file and the reason."""


def saved_layout(ckpt_dir: Path) -> dict:
    """tp, pp, dp and ZeRO stage a checkpoint was written with: its complete.json; for checkpoints from before
    the ZeRO stage was recorded there, the stage its files show (ZeRO partitions or none)."""
    ckpt_dir = Path(ckpt_dir)
    info = json.loads((ckpt_dir / COMPLETE).read_text())
    out = {k: int(v) for k, v in (info.get("layout") or {}).items() if k in LAYOUT_KEYS}
    if "zero_stage" not in out:
        out["zero_stage"] = 1 if any(ckpt_dir.glob("*zero_pp_rank_0_mp_rank_*_optim_states.pt")) else 0
    return {k: out.get(k, 1) for k in LAYOUT_KEYS}


def describe(layout: dict) -> str:
    return f"tp={layout['tp']} pp={layout['pp']} dp={layout['dp']} zero_stage={layout['zero_stage']}"


def llama_name(pipe_name: str, n_layers: int) -> str:
    """``PipelineModule`` parameter name (global layer index first) -> ``train.model.transformer.Llama``'s."""
    idx, rest = pipe_name.split(".", 1)
    return f"{layer_names_for(n_layers)[int(idx)]}.{rest}"


def stage_layers(n_layers: int, pp: int) -> list[range]:
    """Pipeline layers of each stage, as ``partition_method="type:Block"`` cuts them (train/engine/pipeline_stages.py)."""
    from deepspeed.runtime.utils import partition_balanced

    parts = partition_balanced(weights=[0] + [1] * n_layers + [0], num_parts=pp)
    return [range(parts[s], parts[s + 1]) for s in range(pp)]


# ------------------------------------------------------------------------- 1. the old files, per parameter

def _load(path: Path):
    if not path.is_file():
        raise ReshardError(f"{path}: missing; the checkpoint is incomplete or not of this layout")
    return torch.load(path, map_location="cpu", weights_only=False, mmap=True)


def _optim_file(ckpt_dir: Path, dp_rank: int, mp_rank: int) -> Path:
    """ZeRO-1 writes ``zero_pp_rank_*``, DeepSpeed's bf16 optimizer ``bf16_zero_pp_rank_*``."""
    found = sorted(Path(ckpt_dir).glob(f"*zero_pp_rank_{dp_rank}_mp_rank_{mp_rank:02d}_optim_states.pt"))
    if len(found) != 1:
        raise ReshardError(f"{ckpt_dir}: expected one optimizer file for data rank {dp_rank}, model rank "
                           f"{mp_rank}, found {[f.name for f in found] or 'none'}")
    return found[0]


def _gather(parts: list[torch.Tensor], start: int, numel: int) -> torch.Tensor:
    """Elements [start, start + numel) of the concatenation of ``parts``, without concatenating them."""
    out = torch.empty(numel, dtype=parts[0].dtype)
    pos, done = 0, 0
    for p in parts:
        lo, hi = max(start, pos), min(start + numel, pos + p.numel())
        if lo < hi:
            out[lo - start:hi - start] = p[lo - pos:hi - pos]
            done += hi - lo
        pos += p.numel()
    if done != numel:
        raise ReshardError(f"flat partitions hold {pos} elements, a parameter needs [{start}, {start + numel})")
    return out


def _flat_rank_state(ckpt_dir: Path, mp_rank: int, dp: int, model_file: dict) -> dict[str, dict]:
    """ZeRO-1 / bf16 optimizer: every parameter of one model-parallel rank from its ``dp`` flat partitions."""
    shapes = model_file.get("param_shapes")
    if not shapes:
        raise ReshardError(f"{ckpt_dir}/mp_rank_{mp_rank:02d}_model_states.pt has no param_shapes")
    files = [_optim_file(ckpt_dir, d, mp_rank) for d in range(dp)]
    states = [_load(f)["optimizer_state_dict"] for f in files]
    # DeepSpeed's bf16 optimizer keeps Muon's momentum in the partition layout of the master weights, like Adam's
    # moments; its ZeRO-1 optimizer keeps it per whole matrix (_muon_momentum).
    bf16 = files[0].name.startswith("bf16_")
    out: dict[str, dict] = {}
    for g, group in enumerate(shapes):
        fp32 = [s["single_partition_of_fp32_groups"][g].detach() for s in states]
        adam = [s["base_optimizer_state"]["state"].get(g) for s in states]
        muon = any(a is not None and "momentum_buffer" in a for a in adam)
        if muon and not bf16:
            _muon_momentum(ckpt_dir, g, group, states, out)
            adam = [None] * dp
        elif muon:                                  # an average: (1 - beta) x this trainer's sum
            beta = states[0]["base_optimizer_state"]["param_groups"][g]["momentum"]
            adam = [{"momentum_buffer": a["momentum_buffer"] / (1 - beta)} for a in adam]
        if any(a is None for a in adam) and not all(a is None for a in adam):
            raise ReshardError(f"{ckpt_dir}: model rank {mp_rank} group {g}: Adam state on some data ranks only")
        steps = {float(a["step"]) for a in adam if a is not None and "step" in a}
        if len(steps) > 1:
            raise ReshardError(f"{ckpt_dir}: model rank {mp_rank} group {g}: data ranks at different Adam steps "
                               f"{sorted(steps)}")
        moments = {k: [a[k] for a in adam] for k in STATE if k in adam[0]} if adam[0] is not None else {}
        pads = (states[0].get("param_alignment_paddings") or [None] * len(shapes))[g] or [0] * len(group)
        size = fp32[0].numel()
        offset = 0
        where = {}
        for (name, shape), pad in zip(group.items(), pads):
            numel = int(torch.Size(shape).numel())
            entry = out.setdefault(name, {})
            entry["fp32"] = _gather(fp32, offset, numel).view(shape)
            entry.update({k: _gather(v, offset, numel).view(shape) for k, v in moments.items()})
            entry["step"] = next(iter(steps)) if steps else None
            where[name] = (offset, numel)
            offset += numel + pad
        padding = sum(s["group_paddings"][g] for s in states)
        if offset + padding != size * dp:
            raise ReshardError(f"{ckpt_dir}: model rank {mp_rank} group {g}: parameters take {offset} elements "
                               f"and padding {padding}, the partitions hold {size * dp}; not a layout this "
                               "reader knows")
        for d, s in enumerate(states):      # DeepSpeed's own record of each partition's fragments must agree
            for name, frag in (s.get("param_slice_mappings") or [{}] * len(shapes))[g].items():
                lo, n = where[name]
                if not (lo <= d * size + frag.start and d * size + frag.start + frag.numel <= lo + n):
                    raise ReshardError(f"{ckpt_dir}: {name} lies at [{lo}, {lo + n}) of group {g}, but data rank "
                                       f"{d}'s slice mapping puts a fragment at {d * size + frag.start}")
    return out


def _muon_momentum(ckpt_dir: Path, g: int, shapes: dict, states: list[dict], out: dict) -> None:
    """DeepSpeed's ZeRO Muon (train/engine/muon.py, deepspeed_muon): each data rank keeps the momentum of every
    matrix with elements in its partition, whole, one after another in the group's order (a matrix split between
    two ranks is in both, the same). Its momentum is an average, (1 - beta) times this trainer's sum; the
    converted state holds the sum."""
    beta = states[0]["base_optimizer_state"]["param_groups"][g]["momentum"]
    for d, s in enumerate(states):
        buf = s["base_optimizer_state"]["state"][g]["momentum_buffer"]
        at = 0
        for name in s["param_slice_mappings"][g]:
            shape = torch.Size(shapes[name])
            if name not in out or "momentum_buffer" not in out[name]:
                out.setdefault(name, {})["momentum_buffer"] = buf[at:at + shape.numel()].view(shape) / (1 - beta)
            at += shape.numel()
        if at != buf.numel():
            raise ReshardError(f"{ckpt_dir}: data rank {d} group {g}: Muon momentum of {buf.numel()} elements, its "
                               f"matrices hold {at}")
    missing = [n for n in shapes if "momentum_buffer" not in out.get(n, {})]
    if missing:
        raise ReshardError(f"{ckpt_dir}: group {g}: no Muon momentum for {missing[:3]}")


def _plain_rank_state(ckpt_dir: Path, mp_rank: int, layout: dict, n_layers: int, model_file: dict) -> dict:
    """fp32 without ZeRO: the module weights are the master weights (layer files), the torch optimizer's state
    is in the ``mp_rank`` file, indexed in the order the trainer grouped the parameters (train/pretrain.py):
    AdamW's matrices and embeddings, then the norm weights; Muon's groups (``"muon"`` in the saved groups) as
    ``train.engine.muon.grouped`` makes them; each in module order."""
    from train.checkpoint.store import layer_files
    from train.engine.muon import grouped

    stage, tp_rank = divmod(mp_rank, layout["tp"])
    files = layer_files(Path(ckpt_dir))
    weights: dict[str, torch.Tensor] = {}
    for idx in stage_layers(n_layers, layout["pp"])[stage]:
        path = files.get(idx, {}).get(tp_rank)
        if path is None:
            raise ReshardError(f"{ckpt_dir}: no file for pipeline layer {idx}, tensor rank {tp_rank}")
        for key, t in torch.load(path, map_location="cpu", weights_only=True).items():
            weights[f"{idx}.{key}"] = t
    osd = model_file.get("optimizer") or {}
    if any("muon" in g for g in osd.get("param_groups", [])):
        groups = grouped([(n, t.ndim) for n, t in weights.items()])
    else:
        groups = [[n for n, t in weights.items() if t.ndim >= 2], [n for n, t in weights.items() if t.ndim < 2]]
    indices = [g["params"] for g in osd.get("param_groups", [])]
    if [len(i) for i in indices] != [len(g) for g in groups]:
        raise ReshardError(f"{ckpt_dir}/mp_rank_{mp_rank:02d}_model_states.pt: optimizer groups of "
                           f"{[len(i) for i in indices]} parameters, the layer files give {[len(g) for g in groups]}")
    out = {}
    for names, idxs in zip(groups, indices):
        for name, i in zip(names, idxs):
            entry = {"fp32": weights[name].float(), "step": None}
            st = osd["state"].get(i) or {}
            for k in STATE:
                if k not in st:
                    continue
                if st[k].shape != weights[name].shape:
                    raise ReshardError(f"{ckpt_dir}: optimizer state {i} ({k}) has shape {tuple(st[k].shape)}, "
                                       f"parameter {name} {tuple(weights[name].shape)}; the grouping changed")
                entry[k] = st[k]
            if "step" in st:
                entry["step"] = float(st["step"])
            out[name] = entry
    return out


def read_model_parallel_rank(ckpt_dir: Path, mp_rank: int, layout: dict, n_layers: int) -> dict[str, dict]:
    """{Llama name: {"fp32", "exp_avg", "exp_avg_sq" (absent before the first step), "step"}} of one old
    model-parallel rank (pipeline stage mp_rank // tp, tensor rank mp_rank % tp)."""
    model_file = _load(Path(ckpt_dir) / f"mp_rank_{mp_rank:02d}_model_states.pt")
    if list(Path(ckpt_dir).glob(f"*zero_pp_rank_0_mp_rank_{mp_rank:02d}_optim_states.pt")):
        state = _flat_rank_state(Path(ckpt_dir), mp_rank, layout["dp"], model_file)
    else:
        state = _plain_rank_state(Path(ckpt_dir), mp_rank, layout, n_layers, model_file)
    return {llama_name(k, n_layers): v for k, v in state.items()}


def client_state(ckpt_dir: Path) -> dict:
    """The trainer's state saved with the checkpoint (DeepSpeed's entries included, as its loader returns)."""
    state = _load(Path(ckpt_dir) / "mp_rank_00_model_states.pt")
    return {k: v for k, v in state.items() if k not in ("module", "optimizer", "param_shapes", "shared_params")}


def convert(ckpt_dir: Path, out_dir: Path, layout: dict, n_layers: int, rank: int = 0, world: int = 1) -> list[str]:
    """Write the per-parameter files of the old model-parallel ranks this rank takes (m % world == rank)."""
    written = []
    for m in range(rank, layout["tp"] * layout["pp"], world):
        tp_rank = m % layout["tp"]
        for name, entry in read_model_parallel_rank(ckpt_dir, m, layout, n_layers).items():
            f = Path(out_dir) / f"{name}.tp{tp_rank}.pt"
            # clone: a view of a memory-mapped partition would save the whole storage
            torch.save({k: (v.clone() if torch.is_tensor(v) else v) for k, v in entry.items()}, f)
            written.append(f.name)
    return written


class Universal:
    """The converted state: full (unsplit) tensors per parameter, joined from the old tensor slices."""

    def __init__(self, root: Path, old_tp: int, dims: dict[str, int | None]):
        self.root, self.old_tp, self.dims = Path(root), old_tp, dims

    def __call__(self, name: str) -> dict:
        parts = []
        for t in range(self.old_tp):
            f = self.root / f"{name}.tp{t}.pt"
            if not f.is_file():
                raise ReshardError(f"{f}: missing from the converted checkpoint (tensor slice {t} of {name})")
            parts.append(torch.load(f, map_location="cpu", weights_only=True))
        dim = self.dims.get(name)
        out = {"step": parts[0]["step"]}
        for key in ("fp32",) + STATE:
            if key in parts[0]:
                out[key] = parts[0][key] if dim is None else torch.cat([p[key] for p in parts], dim)
        return out


# ---------------------------------------------------------------------- 2. into the engine of the new layout

def _optimizer_parts(engine):
    """(torch optimizer, [(flat fp32 tensor, its module weights)] or None for a plain optimizer)."""
    opt = engine.optimizer
    if hasattr(opt, "single_partition_of_fp32_groups"):              # ZeRO-1/2
        return opt.optimizer, list(zip(opt.single_partition_of_fp32_groups, opt.bit16_groups))
    if hasattr(opt, "fp32_groups_flat_partition"):                   # DeepSpeed's bf16 optimizer
        return opt.optimizer, list(zip(opt.fp32_groups_flat_partition, opt.bf16_groups))
    return opt, None


def apply_state(engine, full_state: Callable[[str], dict], n_layers: int, tp_group) -> None:
    """Every rank: set its module weights, fp32 master fragments and (when given) Adam moments from
    ``full_state(Llama name)`` -> {"fp32": full tensor, optional "exp_avg"/"exp_avg_sq", "step"}."""
    from train.parallel.tensor_parallel import shard

    base, flats = _optimizer_parts(engine)
    local: dict[int, dict] = {}                          # id(module weight) -> this rank's slices
    for pipe_name, p in engine.module.named_parameters():
        name = llama_name(pipe_name, n_layers)
        full = full_state(name)
        dim = getattr(p, "partition_dim", None)
        mine = {k: shard(v, dim, tp_group) if torch.is_tensor(v) else v for k, v in full.items()}
        if mine["fp32"].shape != p.shape:
            raise ReshardError(f"{name}: the checkpoint gives this rank a slice of shape {tuple(mine['fp32'].shape)}, "
                               f"the model's is {tuple(p.shape)}")
        with torch.no_grad():
            p.data.copy_(mine["fp32"].to(p.dtype))
        local[id(p)] = mine
    # Every parameter has its optimizer state (Adam's moments, or Muon's momentum) or none has (before the
    # first step).
    with_moments = {any(k in s for k in STATE) for s in local.values()}
    if len(with_moments) > 1:
        raise ReshardError("optimizer state for some parameters only; the converted checkpoint is incomplete")
    steps = {s["step"] for s in local.values() if s.get("step") is not None}
    if len(steps) > 1:
        raise ReshardError(f"parameters at different Adam steps {sorted(steps)}")
    moments_of: dict[int, dict] = {}                     # id(optimizer parameter) -> moments
    if flats is None:                                    # the module weights are the master weights
        # Contiguous copies: a column slice is a strided view, and torch's fused AdamW (CPU, 2.13) silently
        # updates a strided moment as if it were contiguous.
        moments_of = {i: {k: s[k].contiguous() for k in STATE if k in s} for i, s in local.items()}
    else:
        for g, (flat, lps) in enumerate(flats):
            muon = base.param_groups[g].get("use_muon")   # DeepSpeed's Muon, its average form
            aligned = hasattr(engine.optimizer, "fp32_groups_flat_partition")     # the bf16 optimizer
            bufs = ({"momentum_buffer": torch.zeros_like(flat)} if aligned else {}) if muon else \
                {k: torch.zeros_like(flat) for k in MOMENTS}
            for p in lps:
                link = getattr(p, "_hp_mapping", None)
                if link is None:                         # no element of p in this rank's partition
                    continue
                lo, n = link.lp_fragment_address.start, link.lp_fragment_address.numel
                at = link.hp_fragment_address.start
                src = local[id(p)]
                with torch.no_grad():
                    link.hp_fragment.data.copy_(src["fp32"].reshape(-1)[lo:lo + n].to(flat.dtype))
                    for k in bufs:
                        if k in src:
                            bufs[k][at:at + n] = src[k].reshape(-1)[lo:lo + n]
            beta = base.param_groups[g].get("momentum")
            if muon and aligned:
                bufs["momentum_buffer"].mul_(1 - beta)
            mine = engine.optimizer.params_in_partition[g] if muon and not aligned else []
            if mine and all("momentum_buffer" in local[id(p)] for p in mine):     # ZeRO-1: whole matrices
                bufs["momentum_buffer"] = torch.cat([local[id(p)]["momentum_buffer"].reshape(-1) * (1 - beta)
                                                     for p in mine])
            moments_of[id(flat)] = bufs
        if hasattr(engine.optimizer, "_hp_optimizer_states_linked"):
            engine.optimizer._hp_optimizer_states_linked = False    # re-link the moment fragments lazily
    sd = base.state_dict()
    state = {}
    if with_moments == {True}:
        step = steps.pop() if steps else 0.0
        index = 0
        for group in base.param_groups:
            for p in group["params"]:
                m = moments_of[id(p)]
                if group.get("muon") and "momentum_buffer" not in m:
                    raise ReshardError("the checkpoint holds Adam moments for a matrix this run's Muon optimizer "
                                       "steps; an optimizer.kind change cannot resume (start from its weights with "
                                       "glassbox export and --init)")
                if not group.get("muon") and MOMENTS[0] not in m:
                    raise ReshardError("the checkpoint holds Muon momentum for a weight this run's AdamW steps; an "
                                       "optimizer.kind change cannot resume")
                if group.get("muon"):
                    state[index] = {"momentum_buffer": m["momentum_buffer"]}
                else:
                    # DeepSpeed's Muon counts Adam's steps in an int, torch's AdamW and ours in a tensor
                    at = int(step) if "use_muon" in group else torch.tensor(step, dtype=torch.float32)
                    state[index] = {"step": at, **{k: m[k] for k in MOMENTS}}
                index += 1
    base.load_state_dict({"state": state, "param_groups": sd["param_groups"]})


# --------------------------------------------------------------------------------------------- 3. resume

def _first_error(err: str | None) -> str | None:
    import torch.distributed as dist

    errs = [None] * dist.get_world_size()
    dist.all_gather_object(errs, err)
    return next((e for e in errs if e), None)


def load(engine, run: Path, step: int, layout: dict, n_layers: int, tp_group, dims: dict[str, int | None]) -> dict:
    """Collective: load checkpoint ``step`` into ``engine`` whatever layout wrote it; returns its client state.
    The same layout loads through DeepSpeed (bit-exact, no conversion)."""
    import torch.distributed as dist

    from train.checkpoint import store as checkpoint

    ckpt = checkpoints_dir(run) / tag_for(step)
    old = saved_layout(ckpt)
    # The same layout in another precision is another optimizer format (bf16_zero_* files against zero_* ones),
    # which DeepSpeed's loader cannot read: converted like a layout change.
    same_format = any(ckpt.glob("bf16_zero_pp_rank_*")) == hasattr(engine.optimizer, "fp32_groups_flat_partition")
    if all(old[k] == layout[k] for k in LAYOUT_KEYS) and same_format:
        return checkpoint.load(engine, run, step)
    work = Path(run) / "reshard" / tag_for(step)
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        shutil.rmtree(work, ignore_errors=True)          # a conversion cut short by a kill
        work.mkdir(parents=True)
    dist.barrier()
    err = None
    try:
        convert(ckpt, work, old, n_layers, rank, world)
    except (ReshardError, OSError, RuntimeError, KeyError, ValueError) as e:
        err = f"converting {ckpt} ({describe(old)}): {e}"
    err = _first_error(err)
    if not err:
        try:
            apply_state(engine, Universal(work, old["tp"], dims), n_layers, tp_group)
        except (ReshardError, OSError, RuntimeError, KeyError) as e:
            err = f"loading {ckpt} into {describe(layout)}: {e}"
        err = _first_error(err)
    if err:
        raise ReshardError(err)
    state = client_state(ckpt)
    for key in ("global_steps", "global_samples", "skipped_steps"):      # DeepSpeed's own counters
        if key in state:
            setattr(engine, key, state[key])
    dist.barrier()
    if rank == 0:
        shutil.rmtree(work, ignore_errors=True)
        if not any(work.parent.iterdir()):
            work.parent.rmdir()
    return state


def layout_now(cfg) -> dict:
    return {"tp": cfg.parallel.tp, "pp": cfg.parallel.pp, "dp": cfg.parallel.dp, "zero_stage": cfg.train.zero_stage}


def changed(old: dict, new: dict) -> bool:
    return any(old[k] != new[k] for k in LAYOUT_KEYS)

