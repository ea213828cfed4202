"""Pretrain a Llama-style model on a mixture manifest with DeepSpeed (data x tensor x pipeline parallel).

    python -m train.pretrain runs/x --config C.yaml --manifest M.json [--steps S] [--set section.key=value]
    torchrun --standalone --nproc_per_node=N -m train.pretrain runs/x --config ... --manifest ...

N must be parallel.tp * pp * dp of the config (``make pretrain`` computes it). ``--steps S`` stops after
optimizer step S; the learning-rate schedule keeps the config's ``train.steps`` as its horizon (or S when
larger), so a run stopped at k and continued to n trains the same as one run to n. Running again with the
same ``--run`` resumes from the newest complete checkpoint: model, optimizer, and the data cursor (step x
global batch samples consumed), in the config's layout even when another wrote the checkpoint
(train/checkpoint/reshard.py), on the run's current manifest when ``--manifest`` is left out; another manifest version
(same tokenizer) continues from there on the new mixture (train/data/timeline.py). ``--init DIR`` starts a
new run from a Hugging Face Llama's weights (train/checkpoint/hf_import.py), saved as checkpoint 0. A plain ``python -m train.pretrain`` runs one process.

The flow, one named step each (``main`` reads top to bottom):
  0. ``check``: config, manifest and plan (train/plan.py) on every rank, before any process group;
  1. ``prepare_shards``: shards verified, token caches built (each node's local rank 0);
  2. ``find_resume_point`` and ``prepare_record``: newest checkpoint, run record, data order and the validation
     leakage check (rank 0);
  3. ``Training``: the model as a PipelineModule in a DeepSpeed engine (the pipeline engine for pp > 1, the
     plain one for pp = 1: train/engine/single_stage.py; ZeRO-1 where it partitions something), resumed;
  4. ``Training.train``: train / validate / checkpoint, data telemetry and decoded samples on rank 0, spike
     handling on every rank (``train.on_spike``: ``on_spike`` -> ``rollback``); ``finish``: the diagnosis.

The data cursor: step t (1-based) trains on data batch t - 1 + shift, where the shift is 0 until a rollback
moves the cursor past a bad window (kept in checkpoints; ``samples_consumed`` in metrics.jsonl is the cursor
after the step).
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import os
import socket
import sys
import time
import warnings
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import NoReturn

from train.loop import fault_hooks
from train.config import ConfigError, load_config
from train.data import timeline
from train.data.manifest import ManifestError, read_manifest
from train.loop.lifeline import die_with_parent
from train.model.config import ModelConfig
from train.plan import Plan, resolve


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--manifest", default=None,
                    help="the mixture manifest (default for an existing run: the one it trains on now; another "
                         "version switches the run's data from its newest checkpoint on)")
    # --run-dir is the same option: under torchrun, `--run` is taken as an abbreviation of its --run-path.
    ap.add_argument("run_dir", nargs="?", metavar="RUN", help="run directory (created, or resumed when it exists)")
    ap.add_argument("--run", "--run-dir", dest="run", help="the same as RUN")
    ap.add_argument("--steps", type=int, default=None, help="stop after this optimizer step")
    ap.add_argument("--init", default=None, metavar="DIR",
                    help="start a new run from a Hugging Face LlamaForCausalLM directory (train/checkpoint/hf_import.py)")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="override a config key (YAML value), e.g. --set parallel.dp=2")
    ap.add_argument("--local_rank", "--local-rank", type=int, help=argparse.SUPPRESS)  # launchers; env wins
    args = ap.parse_args(argv)
    if args.run and args.run_dir and args.run != args.run_dir:
        ap.error(f"two run directories: {args.run_dir} and --run {args.run}")
    args.run = args.run or args.run_dir
    if not args.run:
        ap.error("the run directory is required: python -m train.pretrain RUN --config ... (make pretrain RUN=...)")
    return args


def build_engine(cfg, mcfg: ModelConfig):
    """Collective: the model as a pipeline over this config's tp x pp x dp topology in a DeepSpeed engine with
    AdamW (weight decay on matrices and embeddings only): the pipeline engine when pp > 1, the plain one when
    pp = 1. Returns (engine, torch optimizer, topology, tensor group)."""
    import deepspeed
    import torch

    from train.model.kernels import compile_blocks
    from train.engine.pipeline_stages import build_pipeline, build_topology, tensor_parallel_group

    t_cfg, o = cfg.train, cfg.optimizer
    topo = build_topology(cfg.parallel.tp, cfg.parallel.pp, cfg.parallel.dp)
    group = tensor_parallel_group(topo)
    pipe = build_pipeline(mcfg, topo, group, o.z_loss, t_cfg.activation_checkpointing)
    if compiled(cfg):
        compile_blocks(pipe)
    if o.kind == "muon":                 # Muon on the blocks' matrices, AdamW on the rest (train/engine/muon.py)
        from train.engine.muon import MuonAdamW, deepspeed_muon, param_groups

        if t_cfg.zero_stage:
            optimizer = deepspeed_muon(param_groups(pipe, o), o)
        else:
            optimizer = MuonAdamW(param_groups(pipe, o), lr=o.lr, betas=tuple(o.betas), eps=o.eps,
                                  momentum=o.muon_momentum, tp_group=group)
    else:
        decay = [p for p in pipe.parameters() if p.ndim >= 2]
        no_decay = [p for p in pipe.parameters() if p.ndim < 2]
        optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": o.weight_decay},
                                       {"params": no_decay, "weight_decay": 0.0}],
                                      lr=o.lr, betas=tuple(o.betas), eps=o.eps,
                                      **({"fused": True} if o.fused else {"foreach": False}))
    bf16 = t_cfg.precision == "bf16"
    ds_config = {
        "train_batch_size": t_cfg.global_batch_size, "train_micro_batch_size_per_gpu": t_cfg.micro_batch_size,
        "gradient_accumulation_steps": cfg.grad_accum, "gradient_clipping": o.grad_clip,
        "zero_optimization": {"stage": t_cfg.zero_stage}, "bf16": {"enabled": bf16},
        "zero_allow_untested_optimizer": True, "steps_per_print": 2**31 - 1, "wall_clock_breakdown": False,
    }
    if bf16:
        ds_config["data_types"] = {"grad_accum_dtype": "fp32"}
    if cfg.parallel.pp == 1:         # one stage: the plain engine, no pipeline schedule (train/engine/single_stage.py)
        from train.engine.single_stage import SingleStageEngine

        engine = SingleStageEngine(pipe, optimizer, ds_config,
                                   model_parallel_unit=not (o.kind == "muon" and bf16 and cfg.parallel.tp == 1))
    else:
        engine, _, _, _ = deepspeed.initialize(model=pipe, optimizer=optimizer, config=ds_config)
    if engine.optimizer is optimizer:
        keep_fp32_grad_norm(engine)
    return engine, optimizer, topo, group


def kernels(cfg) -> dict:
    """Every rank: SDPA's backend fixed; what the run record says about the kernels this run uses."""
    from train.model.kernels import attention_backend, document_kernel

    out = {"engine": "single_stage" if cfg.parallel.pp == 1 else "pipeline", "compile": compiled(cfg),
           "attention": attention_backend(cfg.train.precision),
           "optimizer": "AdamW (fused)" if cfg.optimizer.fused else "AdamW (loop)"}
    o = cfg.optimizer
    if o.kind == "muon":                     # each group's learning rate and decay on the record
        out["optimizer"] = (f"Muon on the block matrices (lr {o.muon_lr:g} x schedule / optimizer.lr, momentum "
                            f"{o.muon_momentum:g}, weight decay {o.weight_decay:g}) + AdamW on embeddings and head "
                            f"(lr {o.lr:g}, weight decay {o.weight_decay:g}) and norms (lr {o.lr:g}, no decay)")
    documents = document_kernel(cfg.model.document_masking)
    if documents:                            # chosen at start-up: flex attention on a GPU, SDPA's mask elsewhere
        out["document_masking"] = documents
    return out


def compiled(cfg) -> bool:
    """train.compile, null meaning: on a GPU."""
    import torch

    return cfg.train.compile if cfg.train.compile is not None else torch.cuda.is_available()


def keep_fp32_grad_norm(engine) -> None:
    """fp32 without ZeRO: DeepSpeed's own clipping (``clip_grad_norm_``) counts a weight that is not split by
    tensor parallelism only on the first rank of the pipe x tensor group, so with pp > 1 the later stages'
    weights are missing from the norm, and it keeps no norm. Replaced: every weight counted once (a tensor
    slice on each tensor rank, a replicated weight on tensor rank 0), summed over stages and tensor ranks in
    one all-reduce, clipped, and kept as a tensor for ``get_global_grad_norm`` (read when the row is written)."""
    import torch
    import torch.distributed as dist

    mpu, max_norm = engine.mpu, engine.gradient_clipping()
    params = list(engine.module.parameters())
    counted = [p for p in params if getattr(p, "model_parallel", False) or mpu.get_slice_parallel_rank() == 0]

    def clip_and_keep_norm():
        grads = [p.grad for p in counted if p.grad is not None]
        square = (torch.stack([g.float().square().sum() for g in grads]).sum() if grads
                  else torch.zeros((), device=engine.device))
        if mpu.get_model_parallel_world_size() > 1:
            dist.all_reduce(square, group=mpu.get_model_parallel_group())
        norm = square.sqrt()
        scale = (max_norm / (norm + 1e-6)).clamp(max=1.0)
        for p in params:
            if p.grad is not None:
                p.grad.mul_(scale)
        engine._global_grad_norm = norm
    engine.clip_fp32_gradients = clip_and_keep_norm


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init_distributed(cpu_threads: int | None = None):
    """DeepSpeed's process group (gloo on CPU, NCCL on GPUs), without the CPU shared-memory op build."""
    if "RANK" not in os.environ:           # a plain `python -m train.pretrain`: one process
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1",
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()))
    import importlib

    import deepspeed
    from deepspeed.accelerator import get_accelerator
    from deepspeed.utils import logger as ds_logger

    ds_logger.setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", message=".*all_gather_into_tensor.*is deprecated", category=FutureWarning)
    acc = get_accelerator()
    if acc.device_name() == "cpu":
        # The shared-memory collective op takes ~60 s to JIT-compile and training does not use it.
        # (`import deepspeed.comm.torch as m` would bind the torch package: deepspeed.comm re-exports it.)
        importlib.import_module("deepspeed.comm.torch").build_shm_op = lambda: None
    else:
        acc.set_device(int(os.environ["LOCAL_RANK"]))
    import torch

    if cpu_threads:
        torch.set_num_threads(cpu_threads)
    deepspeed.init_distributed(timeout=timedelta(minutes=int(os.environ.get("GLASSBOX_DIST_TIMEOUT_MIN", 120))),
                               verbose=False)


def _agree(err: str | None) -> str | None:
    """Every rank learns the first error any rank hit (so no rank waits at a barrier forever)."""
    import torch.distributed as dist

    errs = [None] * dist.get_world_size()
    dist.all_gather_object(errs, err)
    return next((e for e in errs if e), None)


def _exit_on_any(err: str | None) -> None:
    """Collective: when any rank hit an error, rank 0 prints it and every rank exits with status 2."""
    import torch.distributed as dist

    err = _agree(err)
    if err:
        if dist.get_rank() == 0:
            print(f"error: {err}", file=sys.stderr)
        _exit(2)


def _exit(code: int) -> NoReturn:
    """Leave without interpreter teardown (ranks sometimes abort in it after a clean run): the process ends
    here with `code`, so nothing after a call runs."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


# ------------------------------------------------------------------------------------------------ the steps

@dataclass
class Checked:
    """Step 0, before any process group: the config and manifest checked, the plan resolved."""
    cfg: object                     # train.config.TrainConfig
    manifest: object                # train.data.manifest.Manifest
    plan: Plan
    init_weights: object = None     # hf_import.Weights of --init (names and shapes checked)
    init_hf: dict | None = None
    switch_from: dict | None = None  # the run's current timeline segment when the manifest is another version


def check(args) -> Checked:
    """Config, manifest, plan, --init model and manifest switch, checked on every rank without collectives.
    Raises ConfigError or ManifestError naming the key and the fix."""
    init_hf = None
    if args.init:        # the model's shape fills the config's unnamed model keys, then both are checked
        from train.checkpoint import hf_import

        init_hf = hf_import.read_config(args.init)
        cfg = load_config(args.config, hf_import.model_overrides(args.config, args.set, init_hf) + args.set)
    else:
        cfg = load_config(args.config, args.set)
    manifest_path = args.manifest or timeline.current_manifest_path(args.run)
    if manifest_path is None:
        raise ConfigError(f"--manifest: required for a new run ({args.run} has no run.json); pass MANIFEST=...")
    manifest = read_manifest(manifest_path)
    if init_hf:
        hf_import.check_vocabulary(args.init, init_hf, manifest)
    plan = resolve(cfg, manifest, args.steps)
    checked = Checked(cfg, manifest, plan, init_hf=init_hf)
    if init_hf:
        hf_import.check_shape(plan.model, init_hf, args.init)
        checked.init_weights = hf_import.Weights(args.init, plan.model, init_hf)
    # Another version for this RUN: the data switches at the newest checkpoint (train/data/timeline.py).
    checked.switch_from = timeline.switch_from(args.run, manifest, plan.seq_len, asked=args.manifest is not None)
    return checked


def prepare_shards(c: Checked, local_rank: int):
    """Step 1, collective: shards verified against the manifest and flattened into the token cache, once per
    node. Returns the cache."""
    from train.data.shards import ShardCache

    cache_dir = Path(c.cfg.data.cache_dir) if c.cfg.data.cache_dir else c.manifest.path.parent.parent / "token_cache"
    cache = ShardCache(cache_dir, c.plan.vocab_size, c.manifest.eos_id)
    err = None
    if local_rank == 0:
        try:
            for src in c.manifest.sources.values():
                for shard in src.shards:
                    cache.verify(shard, c.cfg.data.verify)
                    cache.ensure(shard)
        except ManifestError as e:
            err = str(e)
    _exit_on_any(err)
    return cache


@dataclass
class ResumePoint:
    """Where this invocation starts: the newest complete checkpoint (if any), its layout and data shift."""
    start: int
    latest: tuple | None            # (step, checkpoint directory)
    shift: int                      # data batch of step t (1-based) = t - 1 + shift
    replayed: dict | None           # a rollback to the newest checkpoint replayed from rollbacks.jsonl
    layout: dict
    old_layout: dict | None
    invocation: dict = field(default_factory=dict)   # extra keys of run.json's invocation entry


def find_resume_point(run: Path, cfg, init: str | None) -> ResumePoint:
    from train.checkpoint import store as checkpoint
    from train.checkpoint import reshard
    from train.monitor.spike import rollback_since

    import torch.distributed as dist

    # The newest checkpoint whose manifest's files all match (rank 0 hashes them; a damaged one is named).
    latest = _broadcast(checkpoint.latest_whole(run) if dist.get_rank() == 0 else None)
    start = latest[0] if latest else 0
    # A rollback to the newest checkpoint by a run killed before its next save is replayed, not repeated.
    replayed = rollback_since(run, start) if latest else None
    shift = replayed["data_shift"] if replayed else checkpoint.data_shift(latest[1]) if latest else 0
    layout = reshard.layout_now(cfg)
    old_layout = reshard.saved_layout(latest[1]) if latest else None
    point = ResumePoint(start, latest, shift, replayed, layout, old_layout)
    if old_layout and reshard.changed(old_layout, layout):
        point.invocation["layout_change"] = {"step": start, "from": old_layout, "to": layout}
    if init:
        from train.checkpoint import hf_import

        point.invocation["init"] = ({"ignored": f"the run resumes from its checkpoint {start}"} if latest
                                    else hf_import.describe(init))
    return point


def samples_needed(c: Checked, point: ResumePoint) -> int:
    """Samples the data order must hold: to the schedule's horizon, past the shift, with room for the most
    rollbacks one invocation may do (each at most a checkpoint interval plus the batches skipped)."""
    t = c.cfg.train
    reserve = (t.spike_max_rollbacks * (c.cfg.checkpoint.every + t.spike_rollback_skip)
               if t.on_spike == "rollback" else 0)
    return (c.plan.horizon + point.shift + reserve) * t.global_batch_size


def prepare_record(run: Path, args, c: Checked, point: ResumePoint, cache, world: int) -> None:
    """Step 2, rank 0: the run record (run.json, config.json, manifest timeline), the data order and the
    validation leakage check. Raises RuntimeError, ValueError or OSError."""
    from train.loop import run_record

    plan, cfg = c.plan, c.cfg
    run_record.prepare(run, args.config, plan.to_json(), c.manifest, {
        "start_step": point.start, "stop_step": plan.stop, "schedule_horizon": plan.horizon, "world_size": world,
        "layout": {"tp": cfg.parallel.tp, "pp": cfg.parallel.pp, "dp": cfg.parallel.dp}, **point.invocation},
        switch_at=(point.start, point.start + point.shift) if c.switch_from else None)
    if c.switch_from is not None:
        seg = timeline.read(run)[-1]
        print(f"{run}: the data switches from {timeline.describe(c.switch_from)} to {timeline.describe(seg)} "
              f"after step {point.start} (data batch {point.start + point.shift} on; segment {seg['segment']}, "
              f"{seg['data_order']}/)", flush=True)
    order = timeline.open_order(run, c.manifest, cache, plan.seq_len, samples_needed(c, point),
                                cfg.eval.samples_per_source if cfg.eval.every else 0)
    for w in order.warnings:
        print(f"warning: {w}", flush=True)
    if plan.horizon > cfg.train.steps:
        print(f"warning: --steps {plan.stop} is past train.steps {cfg.train.steps}: the schedule's horizon "
              f"becomes {plan.horizon}", flush=True)
    check_leakage_once(run, cfg.eval.leakage, order)


def check_leakage_once(run: Path, mode: str, order) -> None:
    """leakage.json (or the current segment's) once per data order; mode error raises on leaked documents."""
    from train.monitor.leakage import check_leakage, summary_line

    leak_file = timeline.leakage_file(run)
    if mode == "off" or not order.val_sources or leak_file.is_file():
        return
    leak = check_leakage(order)
    leaked = leak["val_documents_in_train"]
    if leaked and mode == "error":     # leakage.json is written once the check passes
        leak_file.with_suffix(".failed.json").write_text(json.dumps(leak, indent=1))
        raise RuntimeError(f"{summary_line(leak).replace('leakage.json', 'leakage.failed.json')}. "
                           "eval.leakage is error: rebuild the corpus without those duplicates (or "
                           "set eval.leakage: warn)")
    leak_file.write_text(json.dumps(leak, indent=1))
    print(("warning: " if leaked else "") + summary_line(leak).replace(
        "leakage.json", str(leak_file.relative_to(run))), flush=True)


def nothing_to_do(run: Path, c: Checked, point: ResumePoint, rank: int) -> bool:
    """Collective: a run already at its stop step says so (and stays on its manifest version)."""
    import torch.distributed as dist

    if point.start < c.plan.stop or not point.latest:
        return False
    if rank == 0:
        stays = f", so the data stays on {timeline.describe(c.switch_from)}" if c.switch_from else ""
        more = f" to continue on {c.manifest.path}" if c.switch_from else ""
        print(f"{run}: already at step {point.start} (>= {c.plan.stop}); nothing to do{stays}. Pass a larger "
              f"--steps (STEPS=){more}.")
    dist.barrier()
    return True


class Training:
    """Step 3 and 4: the engine on this rank, resumed, and the loop with validation, checkpoints and spike
    handling. State that outlives a step: ``step``, ``shift`` (the data cursor's lead over the step, moved by
    rollbacks), ``trained`` (sequences per source whose update was applied)."""

    def __init__(self, run: Path, args, c: Checked, point: ResumePoint, order, rank: int, world: int):
        import numpy as np
        from train.checkpoint import reshard
        from train.data.loader import Loader
        from train.checkpoint.store import meta_model, partition_dims
        from train.loop.metrics import DeferredRows, MetricsLog, device_peak_flops
        from train.monitor.spike import SpikeGuard
        from train.monitor.spike_rule import SpikeDetector
        from train.monitor.telemetry import BatchTelemetry, SampleWriter, TensorBoardSink

        self.run, self.cfg, self.plan, self.manifest, self.order = run, c.cfg, c.plan, c.manifest, order
        self.point, self.rank, self.G = point, rank, c.cfg.train.global_batch_size
        cfg, mcfg = c.cfg, c.plan.model
        self.engine, self.optimizer, topo, self.group = build_engine(cfg, mcfg)
        from train.checkpoint.store import Saver
        self.saver = Saver(self.engine, run, cfg.checkpoint.keep, cfg.checkpoint.async_)   # files hashed as written
        self.dims = partition_dims(meta_model(mcfg))
        self.reshard = reshard
        state = {}
        err = None
        try:
            if point.latest:
                state = self.load_checkpoint(point.start)
            elif args.init:
                from train.checkpoint import hf_import

                hf_import.apply(self.engine, c.init_weights, mcfg.n_layers, self.group)
        except (reshard.ReshardError, ConfigError) as e:
            err = str(e)
        _exit_on_any(err)
        self.shift = int(state.get("data_shift", 0))
        if point.latest and state.get("samples_consumed") != (point.start + self.shift) * self.G:
            err = (f"checkpoint step {point.start} recorded {state.get('samples_consumed')} samples consumed, "
                   f"expected {(point.start + self.shift) * self.G}")
        _exit_on_any(err)
        if point.replayed:
            self.shift = point.replayed["data_shift"]
        self.step = point.start
        self.telemetry = BatchTelemetry(order, self.G, timeline.sources(run))  # every source of the run's versions
        self.trained = self.trained_at(state, (point.start + self.shift) * self.G)
        self.since_log = np.zeros(len(self.telemetry.names), np.int64)
        self.row_fields = timeline.row_fields(run)         # manifest_version on the rows of a later segment
        self.guard = None
        if cfg.train.on_spike != "off":
            detector = SpikeDetector.from_config(cfg.train)
            detector.load(state.get("spike_history"))
            self.guard = SpikeGuard(self.engine, self.optimizer, detector)
        self.rollbacks = 0
        self.faults = fault_hooks.from_env()
        if self.faults:
            self.saver.writer.before_write = self.faults.writing(rank)

        coord = topo.get_coord(rank)
        self.loads_data = self.engine.is_first_stage() or self.engine.is_last_stage()
        consumed_log = None
        if cfg.data.log_consumed and self.engine.is_first_stage() and coord.model == 0:
            (run / "consumed").mkdir(exist_ok=True)
            consumed_log = run / "consumed" / f"dp{coord.data}.jsonl"
        self.loader = Loader(order, self.G, cfg.train.micro_batch_size, cfg.parallel.dp, coord.data, consumed_log,
                             run_start=point.start)
        self.sinks = [TensorBoardSink(run / "tensorboard")] if cfg.log.tensorboard and rank == 0 else []
        self.metrics = MetricsLog(run, stop_step=c.plan.stop, log_every=cfg.log.every,
                                  flops_per_token=mcfg.flops_per_token(c.plan.seq_len),
                                  peak_flops_per_device=device_peak_flops(cfg.train.precision, cfg.log.peak_tflops),
                                  devices=world, enabled=rank == 0, sinks=self.sinks)
        self.samples = SampleWriter(run, order, self.G) if cfg.log.sample_every and rank == 0 else None
        self.compiled, self.compile_reported = compiled(cfg), 0.0
        self.on_gpu = self.engine.device.type == "cuda"
        self.rows = DeferredRows(self.metrics, cfg.log.rows_every_step, cfg.log.every, c.plan.stop)
        if rank == 0:
            self.announce(args)
        if args.init and not point.latest:       # the starting model is the run's checkpoint 0
            self.save_checkpoint(0)

    def announce(self, args) -> None:
        point, plan, cfg = self.point, self.plan, self.cfg
        dropped = self.metrics.truncate_after(point.start)
        what = f"resuming from step {point.start}" if point.latest else "starting"
        if args.init:
            what += f" (INIT {args.init} ignored: the run has checkpoints)" if point.latest else f" from {args.init}"
        if "layout_change" in point.invocation:
            what += f" in a new layout (checkpoint written with {self.reshard.describe(point.old_layout)}; resharded)"
        if point.replayed:
            what += (f" with the rollback of step {point.replayed['step']} to it replayed from rollbacks.jsonl "
                     f"(data shift {point.replayed['data_shift']})")
        print(f"{self.run}: {what}, training to step {plan.stop} (schedule horizon {plan.horizon}); "
              f"{plan.model.num_params() / 1e6:.2f}M parameters, layout tp={cfg.parallel.tp} pp={cfg.parallel.pp} "
              f"dp={cfg.parallel.dp}, {self.G} x {plan.seq_len} tokens per step"
              + (f"; document masking ({self.point.invocation['kernels']['document_masking']}), positions "
                 f"{'per document' if plan.model.restart_positions else 'per row'}"
                 if plan.model.document_masking else "")
              + (f"; {dropped} metrics rows past the checkpoint moved to metrics.discarded.jsonl" if dropped else "")
              + (f"; data cursor {self.shift} batches ahead of the step (rollbacks)" if self.shift else ""),
              flush=True)

    # -- checkpoints
    def load_checkpoint(self, step: int) -> dict:
        """Collective: checkpoint ``step`` into the engine, resharded when another layout wrote it."""
        return self.reshard.load(self.engine, self.run, step, self.point.layout, self.plan.model.n_layers,
                                 self.group, self.dims)

    def save_checkpoint(self, step: int) -> None:
        consumed = (step + self.shift) * self.G
        client = {"step": step, "samples_consumed": consumed, "data_shift": self.shift,
                  "trained_per_source": self.trained.tolist(), "trained_sources": self.telemetry.names,
                  "spike_history": self.guard.detector.state() if self.guard else None}
        self.saver.save(step, client, {"samples_consumed": consumed, "data_shift": self.shift,
                                       "manifest_content_hash": self.manifest.content_hash,
                                       "layout": self.point.layout, "precision": self.cfg.train.precision})

    def trained_at(self, state: dict, cursor: int):
        """Sequences per source trained up to a checkpoint (kept in checkpoints: rollbacks restore it)."""
        import numpy as np

        if "trained_per_source" in state:     # by name: a checkpoint from before a switch counts other sources
            names = state.get("trained_sources") or timeline.sources(self.run, 0)
            saved = dict(zip(names, state["trained_per_source"]))
            return np.array([saved.get(n, 0) for n in self.telemetry.names], np.int64)
        # A checkpoint from before telemetry: every sample up to its cursor.
        return self.telemetry.counts(self.order.first_sample, cursor)

    # -- validation
    def evaluate(self, step: int) -> None:
        order, engine = self.order, self.engine
        if not order.val_sources:
            return
        loss_fn, z = engine.module.loss_fn, engine.module.loss_fn.z_loss
        loss_fn.z_loss = 0.0                 # validation reports plain cross entropy
        per = {}
        for s in order.val_sources:
            out = engine.eval_batch(self.loader.val(s) if self.loads_data else None,
                                    num_micro_batches=self.loader.val_micro_batches())
            per[order.names[s]] = float(out)
        loss_fn.z_loss = z
        # Overall: the sources weighted by their share of the training mix (equal if none is planned).
        w = {order.names[s]: order.planned[s] for s in order.val_sources}
        if not sum(w.values()):
            w = {k: 1 for k in w}
        overall = sum(per[k] * w[k] for k in per) / sum(w.values())
        bpb = None
        if self.metrics.enabled:             # bits per byte: the same nats over the bytes the targets decode to
            tb = self.val_bytes()
            bpb = {k: per[k] * tb[k][0] / (math.log(2) * tb[k][1]) if tb[k][1] else float("nan") for k in per}
            bpb["__overall__"] = sum(bpb[k] * w[k] for k in per) / sum(w.values())
        self.metrics.val(step=step, tokens=step * self.G * self.plan.seq_len, val_loss=overall, per_source=per,
                         bpb=bpb)

    def val_bytes(self) -> dict[str, tuple[int, int]]:
        """Per source: (target tokens, their UTF-8 bytes) of the held-out sequences validation scores (all ranks
        together), read once (train/tokenizer/token_bytes.py says how each id counts)."""
        order = self.order
        key = (id(order), tuple(order.val_sources))      # a manifest switch brings another order
        if getattr(self, "_val_bytes_key", None) != key:
            from train.tokenizer.token_bytes import token_bytes

            table = token_bytes(self.manifest.tokenizer["abs_path"], self.manifest.eos_id, self.plan.model.vocab_size)
            n = self.loader.val_micro_batches() * self.cfg.train.micro_batch_size * self.cfg.parallel.dp
            out = {}
            for s in order.val_sources:
                targets = [order.val_sample(s, v)[1:] for v in range(n)]
                out[order.names[s]] = (sum(len(t) for t in targets), int(sum(table[t].sum() for t in targets)))
            self._val_bytes, self._val_bytes_key = out, key
        return self._val_bytes


    # -- the loop
    def train(self) -> None:
        cfg, stop = self.cfg, self.plan.stop
        while self.step < stop:
            verdict, data_step = self.train_step()
            self.saver.poll()                # a checkpoint written in the background gets its manifest when done
            if verdict is not None and verdict.spike and self.on_spike(verdict, data_step):
                continue                     # rolled back: self.step is the restored checkpoint's
            step = self.step
            evaluate = cfg.eval.every and (step % cfg.eval.every == 0 or step == stop)
            save = step == stop or (cfg.checkpoint.every and step % cfg.checkpoint.every == 0)
            if evaluate or save:
                self.rows.flush()             # the rows up to a validation row or a checkpoint come first
            if evaluate:
                self.evaluate(step)
            if save:
                self.save_checkpoint(step)
            if evaluate or save:
                self.rows.restart_interval()

    def train_step(self):
        """One optimizer step on data batch step + shift, and its metrics row. Returns (spike verdict, data
        batch)."""
        import torch

        from train.model.kernels import compile_seconds
        from train.loop.schedule import lr_at

        cfg, o, G, seq_len = self.cfg, self.cfg.optimizer, self.G, self.plan.seq_len
        engine, step, data_step = self.engine, self.step, self.step + self.shift
        lr = lr_at(step, kind=cfg.schedule.kind, lr=o.lr, min_lr=o.min_lr, warmup_steps=cfg.schedule.warmup_steps,
                   total_steps=self.plan.horizon, decay_fraction=cfg.schedule.decay_fraction)
        for g in engine.optimizer.param_groups:
            g["lr"] = lr * g.get("lr_scale", 1.0)        # Muon's group runs at its own scale of the schedule
        batches = self.loader.train(data_step) if self.loads_data else None
        if self.faults:
            batches = self.faults.batches(data_step, batches)
        if self.guard:
            self.guard.begin()
        t0 = time.perf_counter()
        loss = engine.train_batch(batches)
        seconds = time.perf_counter() - t0
        self.step = step = step + 1
        verdict = self.guard.finish() if self.guard else None
        spiked = verdict is not None and verdict.spike
        extra = {"samples_consumed": (data_step + 1) * G, **self.row_fields}
        if engine.agg_additional_losses:
            extra.update(engine.agg_additional_losses)          # tensors, read when the row is written
        if verdict is not None:
            extra.update(spike_loss_z=verdict.loss_z, spike_grad_norm_z=verdict.grad_norm_z,
                         update_skipped=int(spiked))
        if self.compiled:
            spent = compile_seconds()
            if spent > self.compile_reported:        # the first step (and the first validation) compile
                extra["compile_s"] = self.compile_reported = spent
        counts = self.telemetry.source_counts(data_step)
        if not spiked:
            self.trained += counts
            self.since_log += counts
        if step % cfg.log.every == 0 or step == self.plan.stop:
            if self.rank == 0 and cfg.log.telemetry:
                extra.update(self.telemetry.batch(data_step))
                extra.update(self.telemetry.shares(self.trained, self.since_log))
            self.since_log[:] = 0
            if self.on_gpu:                      # an allocator counter: no wait for the device
                extra["peak_mem_gib"] = torch.cuda.max_memory_allocated() / 2**30
        self.rows.add(step=step, tokens=step * G * seq_len, loss=loss, lr=lr,
                      grad_norm=engine.get_global_grad_norm(), step_tokens=G * seq_len, seconds=seconds, **extra)
        if self.samples is not None and step % cfg.log.sample_every == 0:
            self.samples.write(step, data_step)
        if self.faults:
            self.faults.after_step(step, self.rank)
        return verdict, data_step

    def on_spike(self, verdict, data_step: int) -> bool:
        """Collective, after a step whose update the guard skipped: record it; with on_spike rollback and a
        complete checkpoint, roll back to it. Returns whether it rolled back."""
        from train.checkpoint import store as checkpoint
        from train.monitor.spike import record_spike

        t_cfg, step, stop = self.cfg.train, self.step, self.plan.stop
        self.rows.flush()
        self.saver.finish()                  # a checkpoint still being written is one to roll back to
        newest = checkpoint.latest_whole(self.run) if self.rank == 0 else None
        restore = _broadcast(newest[0] if newest else None)
        action = t_cfg.on_spike if restore is not None else "skip"
        if self.rank == 0:
            note = "" if action == t_cfg.on_spike else " (no complete checkpoint yet to roll back to)"
            record_spike(self.run, step=step, data_step=data_step, global_batch=self.G, judgement=verdict,
                         action=action + note, order=self.order)
            print(f"step {step:>6}/{stop} | spike: {verdict.reason} (loss {verdict.loss:.4g}, grad_norm "
                  f"{verdict.grad_norm if verdict.grad_norm is None else format(verdict.grad_norm, '.4g')}); "
                  f"update skipped{note}" + ("; rolling back" if action == "rollback" else ""), flush=True)
        if action != "rollback":
            return False
        self.rollback(restore, verdict, data_step)
        return True

    def rollback(self, restore: int, verdict, data_step: int) -> None:
        """Collective: back to checkpoint ``restore`` with the data cursor moved past the bad window."""
        import torch.distributed as dist

        from train.monitor.spike import record_rollback

        t_cfg, step, G = self.cfg.train, self.step, self.G
        self.rollbacks += 1
        new_shift = step + self.shift + t_cfg.spike_rollback_skip - restore
        err = None
        if self.rollbacks > t_cfg.spike_max_rollbacks:
            err = (f"{self.rollbacks} spikes in this invocation, more than train.spike_max_rollbacks "
                   f"({t_cfg.spike_max_rollbacks}): the spikes are not one bad batch. Lower the learning "
                   "rate (or lengthen warmup, tighten clipping) and resume, or raise the limit")
        elif (self.plan.stop + new_shift) * G > self.order.n_samples:
            err = (f"rolling back to step {restore} needs the data order to reach sample "
                   f"{(self.plan.stop + new_shift) * G}; it holds {self.order.n_samples}. Resume (the order is "
                   "extended at start)")
        if err:
            if self.rank == 0:
                print(f"error: {err}", file=sys.stderr)
            dist.barrier()
            _exit(2)
        state = self.load_checkpoint(restore)
        restored_shift = int(state.get("data_shift", 0))    # the current shift, unless resumed oddly
        if self.rank == 0:
            rec = record_rollback(self.run, step=step, spike_data_step=data_step, restored_step=restore,
                                  old_shift=restored_shift, new_shift=new_shift, global_batch=G, judgement=verdict,
                                  order=self.order)
            dropped = self.metrics.truncate_after(restore)
            print(f"step {step:>6}/{self.plan.stop} | rolled back to step {restore}; data batches "
                  f"{rec['skipped_data_steps'][0]}-{rec['skipped_data_steps'][1] - 1} skipped "
                  f"({rec['skipped_documents_total']} documents, rollbacks.jsonl); {dropped} metrics rows "
                  "moved to metrics.discarded.jsonl", flush=True)
        self.trained = self.trained_at(state, (restore + restored_shift) * G)
        self.shift, self.step = new_shift, restore
        self.since_log[:] = 0
        self.guard.detector.load(state.get("spike_history"))
        dist.barrier()

    def finish(self) -> None:
        """Collective: every rank done; rank 0 writes the diagnosis."""
        import torch.distributed as dist

        from train.checkpoint import store as checkpoint

        self.saver.finish()                  # the last checkpoint's write, if in the background
        self.rows.flush()
        dist.barrier()
        if self.rank == 0:
            _diagnose(self.run, self.plan.vocab_size)
            for sink in self.sinks:
                sink.close()
            print(f"{self.run}: done at step {self.plan.stop}; checkpoint {checkpoint.tag_for(self.plan.stop)}",
                  flush=True)


def main(argv=None) -> int:
    from train.loop.threads import pin_cpu_threads

    cpu_threads = pin_cpu_threads()             # before anything loads torch, MKL or OpenMP
    if os.environ.get("TORCHELASTIC_RUN_ID"):   # launched by torchrun: die with it
        die_with_parent()
    args = parse_args(argv)
    rank0 = os.environ.get("RANK", "0") == "0"   # every rank checks; one says it
    try:
        c = check(args)                                                          # 0. config, manifest, plan
    except (ConfigError, ManifestError) as e:
        if rank0:
            print(f"error: {e}", file=sys.stderr)
        return 2
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world != c.cfg.world_size:
        if rank0:
            print(f"error: {args.config}: parallel.tp x pp x dp = {c.cfg.world_size} processes, but {world} were "
                  f"launched; run torchrun --nproc_per_node={c.cfg.world_size} (make pretrain does) or change "
                  "parallel.dp", file=sys.stderr)
        return 2

    init_distributed(cpu_threads)
    import torch.distributed as dist

    rank, local_rank = dist.get_rank(), int(os.environ.get("LOCAL_RANK", 0))
    run = Path(args.run).resolve()
    cache = prepare_shards(c, local_rank)                                        # 1. shards, token cache
    point = find_resume_point(run, c.cfg, args.init)                             # 2. resume point, run record
    point.invocation["kernels"] = {**kernels(c.cfg), "cpu_threads": cpu_threads}
    if c.switch_from is not None and nothing_to_do(run, c, point, rank):
        _exit(0)
    err = None
    if rank == 0:
        try:
            prepare_record(run, args, c, point, cache, world)
        except (RuntimeError, ValueError, OSError) as e:
            err = str(e)
    _exit_on_any(err)
    if nothing_to_do(run, c, point, rank):
        _exit(0)
    order = timeline.load_order(run, c.manifest, cache)
    training = Training(run, args, c, point, order, rank, world)                 # 3. engine, resumed
    training.train()                                                             # 4. the loop, rollbacks
    training.finish()
    _exit(0)                                                                     # no return: see _exit


def _broadcast(value):
    """Rank 0's value on every rank."""
    import torch.distributed as dist

    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def _diagnose(run: Path, vocab_size: int) -> None:
    """diagnosis.json and the findings table at the end of a run (never fails the run)."""
    try:
        from train.record.diagnose import assess_run, format_table
        from train.record.formats import read_run

        result = assess_run(read_run(run), vocab_size=vocab_size)          # with the run's manifest.json
        (run / "diagnosis.json").write_text(json.dumps(result.to_dict(), indent=1))
        print(f"{run}: diagnosis (diagnosis.json; glassbox report {run} draws it):\n"
              + "".join(f"reading: {line}\n" for line in result.reading)
              + format_table(result.findings, result.not_judged), flush=True)
    except Exception as e:       # a reader's problem must not turn a finished run into a failed one
        print(f"warning: diagnosis failed: {type(e).__name__}: {e}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
