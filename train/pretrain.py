"""Pretrain a Llama-style model on a mixture manifest with DeepSpeed (data x tensor x pipeline parallel).

    python -m train.pretrain --config C.yaml --manifest M.json --run runs/x [--steps S] [--set section.key=value]
    torchrun --standalone --nproc_per_node=N -m train.pretrain --config ... --manifest ... --run-dir runs/x ...

N must be parallel.tp * pp * dp of the config (``make pretrain`` computes it). ``--steps S`` stops after
optimizer step S; the learning-rate schedule keeps the config's ``train.steps`` as its horizon (or S when
larger), so a run stopped at k and continued to n trains the same as one run to n. Running again with the
same ``--run`` resumes from the newest complete checkpoint: model, optimizer, and the data cursor (step x
global batch samples consumed), in the config's layout even when another wrote the checkpoint
(train/reshard.py), on the run's current manifest when ``--manifest`` is left out; another manifest version
(same tokenizer) continues from there on the new mixture (train/data/timeline.py). ``--init DIR`` starts a
new run from a Hugging Face Llama's weights (train/hf_import.py), saved as checkpoint 0. A plain ``python -m train.pretrain`` runs one process.

The flow: check config and manifest (no process group yet) -> verify shards, build token caches (each
node's local rank 0) -> run record, data order and the validation leakage check (rank 0) -> model as a
PipelineModule, DeepSpeed engine with ZeRO-1 -> resume -> train / validate / checkpoint, with data telemetry
and decoded samples on rank 0 and spike handling on every rank (``train.on_spike``) -> final checkpoint,
diagnosis (rank 0), barrier, exit.

The data cursor: step t (1-based) trains on data batch t - 1 + shift, where the shift is 0 until a rollback
moves the cursor past a bad window (kept in checkpoints; ``samples_consumed`` in metrics.jsonl is the cursor
after the step).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import signal
import socket
import sys
import time
import warnings
from datetime import timedelta
from pathlib import Path

from train.lifeline import die_with_parent
from train.config import ConfigError, ffn_hidden, load_config
from train.data import timeline
from train.data.manifest import ManifestError, read_manifest
from train.model import ModelConfig


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--manifest", default=None,
                    help="the mixture manifest (default for an existing run: the one it trains on now; another "
                         "version switches the run's data from its newest checkpoint on)")
    # --run-dir is the same option: under torchrun, `--run` is taken as an abbreviation of its --run-path.
    ap.add_argument("--run", "--run-dir", dest="run", required=True,
                    help="run directory (created, or resumed when it exists)")
    ap.add_argument("--steps", type=int, default=None, help="stop after this optimizer step")
    ap.add_argument("--init", default=None, metavar="DIR",
                    help="start a new run from a Hugging Face LlamaForCausalLM directory (train/hf_import.py)")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="override a config key (YAML value), e.g. --set parallel.dp=2")
    ap.add_argument("--local_rank", "--local-rank", type=int, help=argparse.SUPPRESS)  # launchers; env wins
    return ap.parse_args(argv)


def resolve(cfg, manifest, steps: int | None) -> dict:
    """Everything derived before heavy work: model shape, sequence length, batch layout, steps."""
    seq_len = cfg.data.seq_len or manifest.max_seq_len
    vocab = cfg.model.vocab_size or manifest.vocab_size
    if vocab < manifest.vocab_size:
        raise ConfigError(f"model.vocab_size: {vocab} is below the tokenizer's {manifest.vocab_size}; "
                          "leave it null to take the manifest's")
    m = cfg.model
    mcfg = ModelConfig(vocab_size=vocab, n_layers=m.n_layers, d_model=m.d_model, n_heads=m.n_heads,
                       n_kv_heads=m.n_kv_heads or m.n_heads, ffn_hidden=ffn_hidden(m), max_seq_len=seq_len,
                       rope_theta=m.rope_theta, norm_eps=m.norm_eps, init_std=m.init_std,
                       vocab_multiple=m.vocab_multiple, seed=cfg.train.seed)
    if mcfg.padded_vocab % cfg.parallel.tp:
        raise ConfigError(f"model.vocab_multiple: {m.vocab_multiple} gives {mcfg.padded_vocab} embedding rows, "
                          f"not divisible by parallel.tp ({cfg.parallel.tp}); use a multiple of tp")
    if steps is not None and steps < 1:
        raise ConfigError(f"--steps: must be >= 1, got {steps}")
    stop = steps or cfg.train.steps
    horizon = max(cfg.train.steps, stop)
    return {"config": cfg.to_dict(), "model": dataclasses.asdict(mcfg), "seq_len": seq_len, "vocab_size": vocab,
            "padded_vocab": mcfg.padded_vocab, "world_size": cfg.world_size, "grad_accum": cfg.grad_accum,
            "tokens_per_step": cfg.train.global_batch_size * seq_len, "manifest_max_seq_len": manifest.max_seq_len,
            "_stop": stop, "_horizon": horizon, "_mcfg": mcfg}


def build_engine(cfg, mcfg: ModelConfig):
    """Collective: the model as a pipeline over this config's tp x pp x dp topology in a DeepSpeed engine with
    AdamW (weight decay on matrices and embeddings only). Returns (engine, torch optimizer, topology, tensor
    group)."""
    import deepspeed
    import torch

    from train.parallel.pipeline import build_pipeline, build_topology, tensor_parallel_group

    t_cfg, o = cfg.train, cfg.optimizer
    topo = build_topology(cfg.parallel.tp, cfg.parallel.pp, cfg.parallel.dp)
    group = tensor_parallel_group(topo)
    pipe = build_pipeline(mcfg, topo, group, o.z_loss, t_cfg.activation_checkpointing)
    decay = [p for p in pipe.parameters() if p.ndim >= 2]
    no_decay = [p for p in pipe.parameters() if p.ndim < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": o.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=o.lr, betas=tuple(o.betas), eps=o.eps)
    bf16 = t_cfg.precision == "bf16"
    ds_config = {
        "train_batch_size": t_cfg.global_batch_size, "train_micro_batch_size_per_gpu": t_cfg.micro_batch_size,
        "gradient_accumulation_steps": cfg.grad_accum, "gradient_clipping": o.grad_clip,
        "zero_optimization": {"stage": t_cfg.zero_stage}, "bf16": {"enabled": bf16},
        "zero_allow_untested_optimizer": True, "steps_per_print": 2**31 - 1, "wall_clock_breakdown": False,
    }
    if bf16:
        ds_config["data_types"] = {"grad_accum_dtype": "fp32"}
    engine, _, _, _ = deepspeed.initialize(model=pipe, optimizer=optimizer, config=ds_config)
    return engine, optimizer, topo, group


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init_distributed():
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


def _exit(code: int) -> None:
    """Leave without interpreter teardown: ranks sometimes abort in it after a clean run."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main(argv=None) -> int:
    if os.environ.get("TORCHELASTIC_RUN_ID"):   # launched by torchrun: die with it
        die_with_parent()
    args = parse_args(argv)
    try:
        init_hf = None
        if args.init:        # the model's shape fills the config's unnamed model keys, then both are checked
            from train import hf_import

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
        if init_hf:
            hf_import.check_shape(plan["_mcfg"], init_hf, args.init)
            init_weights = hf_import.Weights(args.init, plan["_mcfg"], init_hf)   # names and shapes checked
        # Another version for this RUN: the data switches at the newest checkpoint (train/data/timeline.py).
        switch_from = timeline.switch_from(args.run, manifest, plan["seq_len"], asked=args.manifest is not None)
    except (ConfigError, ManifestError) as e:
        if os.environ.get("RANK", "0") == "0":       # every rank finds it; one says it
            print(f"error: {e}", file=sys.stderr)
        return 2
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world != cfg.world_size:
        if os.environ.get("RANK", "0") == "0":
            print(f"error: {args.config}: parallel.tp x pp x dp = {cfg.world_size} processes, but {world} were "
                  f"launched; run torchrun --nproc_per_node={cfg.world_size} (make pretrain does) or change "
                  "parallel.dp", file=sys.stderr)
        return 2

    init_distributed()
    import numpy as np
    import torch.distributed as dist

    from train import checkpoint, reshard, run_record
    from train.data.loader import Loader
    from train.data.shards import ShardCache
    from train.metrics import MetricsLog, device_peak_flops
    from train.monitor.leakage import check_leakage
    from train.monitor.leakage import summary_line as leakage_line
    from train.monitor.spike import SpikeGuard, record_rollback, record_spike, rollback_since
    from train.monitor.spike_rule import SpikeDetector
    from train.monitor.telemetry import BatchTelemetry, SampleWriter, TensorBoardSink
    from train.schedule import lr_at

    rank, local_rank = dist.get_rank(), int(os.environ.get("LOCAL_RANK", 0))
    run = Path(args.run).resolve()
    t_cfg, G, mb, o = cfg.train, cfg.train.global_batch_size, cfg.train.micro_batch_size, cfg.optimizer
    stop, horizon, mcfg, seq_len = plan["_stop"], plan["_horizon"], plan["_mcfg"], plan["seq_len"]
    cache_dir = Path(cfg.data.cache_dir) if cfg.data.cache_dir else manifest.path.parent.parent / "token_cache"
    cache = ShardCache(cache_dir, plan["vocab_size"], manifest.eos_id)

    # 1. Shards: verified against the manifest, flattened into the token cache (once per node).
    err = None
    if local_rank == 0:
        try:
            for src in manifest.sources.values():
                for shard in src.shards:
                    cache.verify(shard, cfg.data.verify)
                    cache.ensure(shard)
        except ManifestError as e:
            err = str(e)
    _exit_on_any(err)

    # 2. Run record and data order (rank 0), resume point (everyone).
    latest = checkpoint.latest_complete(run)
    start = latest[0] if latest else 0
    # Rollbacks move the data cursor ahead of the step (the data shift, kept in every checkpoint): the index
    # holds room for the most rollbacks one invocation may do, each at most a checkpoint interval plus the
    # extra batches skipped. A rollback to the newest checkpoint by a run killed before its next save is
    # replayed from rollbacks.jsonl, not repeated.
    replayed = rollback_since(run, start) if latest else None
    resume_shift = replayed["data_shift"] if replayed else checkpoint.data_shift(latest[1]) if latest else 0
    layout = reshard.layout_now(cfg)
    old_layout = reshard.saved_layout(latest[1]) if latest else None
    invocation_extra = {}
    if old_layout and reshard.changed(old_layout, layout):
        invocation_extra["layout_change"] = {"step": start, "from": old_layout, "to": layout}
    if args.init:
        invocation_extra["init"] = ({"ignored": f"the run resumes from its checkpoint {start}"} if latest
                                    else hf_import.describe(args.init))
    reserve = (t_cfg.spike_max_rollbacks * (cfg.checkpoint.every + t_cfg.spike_rollback_skip)
               if t_cfg.on_spike == "rollback" else 0)
    needed = (horizon + resume_shift + reserve) * G
    if switch_from is not None and start >= stop:      # nothing to train: the data stays on the current version
        if rank == 0:
            print(f"{run}: already at step {start} (>= {stop}); nothing to do, so the data stays on "
                  f"{timeline.describe(switch_from)}. Pass a larger --steps (STEPS=) to continue on {manifest.path}.")
        dist.barrier()
        _exit(0)
    if rank == 0:
        try:
            resolved = {k: v for k, v in plan.items() if not k.startswith("_")}
            run_record.prepare(run, args.config, resolved, manifest, {
                "start_step": start, "stop_step": stop, "schedule_horizon": horizon, "world_size": world,
                "layout": {"tp": cfg.parallel.tp, "pp": cfg.parallel.pp, "dp": cfg.parallel.dp},
                **invocation_extra}, switch_at=(start, start + resume_shift) if switch_from else None)
            if switch_from is not None:
                seg = timeline.read(run)[-1]
                print(f"{run}: the data switches from {timeline.describe(switch_from)} to {timeline.describe(seg)} "
                      f"after step {start} (data batch {start + resume_shift} on; segment {seg['segment']}, "
                      f"{seg['data_order']}/)", flush=True)
            order = timeline.open_order(run, manifest, cache, seq_len, needed,
                                        cfg.eval.samples_per_source if cfg.eval.every else 0)
            for w in order.warnings:
                print(f"warning: {w}", flush=True)
            if horizon > t_cfg.steps:
                print(f"warning: --steps {stop} is past train.steps {t_cfg.steps}: the schedule's horizon "
                      f"becomes {horizon}", flush=True)
            leak_file = timeline.leakage_file(run)       # leakage.json, or the current segment's
            if cfg.eval.leakage != "off" and order.val_sources and not leak_file.is_file():
                leak = check_leakage(order)
                leaked = leak["val_documents_in_train"]
                if leaked and cfg.eval.leakage == "error":     # leakage.json is written once the check passes
                    leak_file.with_suffix(".failed.json").write_text(json.dumps(leak, indent=1))
                    raise RuntimeError(f"{leakage_line(leak).replace('leakage.json', 'leakage.failed.json')}. "
                                       "eval.leakage is error: rebuild the corpus without those duplicates (or "
                                       "set eval.leakage: warn)")
                leak_file.write_text(json.dumps(leak, indent=1))
                print(("warning: " if leaked else "") + leakage_line(leak).replace(
                    "leakage.json", str(leak_file.relative_to(run))), flush=True)
        except (RuntimeError, ValueError, OSError) as e:
            err = str(e)
    _exit_on_any(err)
    if start >= stop and latest:
        if rank == 0:
            print(f"{run}: already at step {start} (>= {stop}); nothing to do. Pass a larger --steps (STEPS=).")
        dist.barrier()
        _exit(0)
    order = timeline.load_order(run, manifest, cache)

    # 3. Model, engine, resume.
    engine, optimizer, topo, group = build_engine(cfg, mcfg)
    coord = topo.get_coord(rank)
    from train.handoff.weights import meta_model, partition_dims

    dims = partition_dims(meta_model(mcfg))

    def load_checkpoint(step: int) -> dict:
        """Collective: checkpoint ``step`` into the engine, resharded when another layout wrote it."""
        return reshard.load(engine, run, step, layout, mcfg.n_layers, group, dims)

    state = {}
    try:
        if latest:
            state = load_checkpoint(start)
        elif args.init:
            hf_import.apply(engine, init_weights, mcfg.n_layers, group)
    except (reshard.ReshardError, ConfigError) as e:
        err = str(e)
    _exit_on_any(err)
    shift = int(state.get("data_shift", 0))          # data batch of step t (1-based) = t - 1 + shift
    if latest and state.get("samples_consumed") != (start + shift) * G:
        err = (f"checkpoint step {start} recorded {state.get('samples_consumed')} samples consumed, "
               f"expected {(start + shift) * G}")
    _exit_on_any(err)
    if replayed:
        shift = replayed["data_shift"]
    telemetry = BatchTelemetry(order, G, timeline.sources(run))     # every source of the run's manifests so far
    # Sequences per source over the steps whose update was applied (kept in checkpoints: rollbacks restore it).
    def trained_at(state: dict, cursor: int) -> np.ndarray:
        if "trained_per_source" in state:     # by name: a checkpoint from before a switch counts other sources
            saved = dict(zip(state.get("trained_sources") or timeline.sources(run, 0), state["trained_per_source"]))
            return np.array([saved.get(n, 0) for n in telemetry.names], np.int64)
        # A checkpoint from before telemetry: every sample up to its cursor.
        return telemetry.counts(order.first_sample, cursor)

    trained = trained_at(state, (start + shift) * G)
    since_log = np.zeros(len(telemetry.names), np.int64)
    row_fields = timeline.row_fields(run)         # manifest_version on the rows of a later segment
    guard = None
    if t_cfg.on_spike != "off":
        detector = SpikeDetector.from_config(t_cfg)
        detector.load(state.get("spike_history"))
        guard = SpikeGuard(engine, optimizer, detector)

    loads_data = engine.is_first_stage() or engine.is_last_stage()
    consumed_log = None
    if cfg.data.log_consumed and engine.is_first_stage() and coord.model == 0:
        (run / "consumed").mkdir(exist_ok=True)
        consumed_log = run / "consumed" / f"dp{coord.data}.jsonl"
    loader = Loader(order, G, mb, cfg.parallel.dp, coord.data, consumed_log, run_start=start)
    sinks = [TensorBoardSink(run / "tensorboard")] if cfg.log.tensorboard and rank == 0 else []
    metrics = MetricsLog(run, stop_step=stop, log_every=cfg.log.every,
                         flops_per_token=mcfg.flops_per_token(seq_len),
                         peak_flops_per_device=device_peak_flops(t_cfg.precision, cfg.log.peak_tflops),
                         devices=world, enabled=rank == 0, sinks=sinks)
    samples = SampleWriter(run, order, G) if cfg.log.sample_every and rank == 0 else None
    if rank == 0:
        dropped = metrics.truncate_after(start)
        what = f"resuming from step {start}" if latest else "starting"
        if args.init:
            what += f" (INIT {args.init} ignored: the run has checkpoints)" if latest else f" from {args.init}"
        if "layout_change" in invocation_extra:
            what += f" in a new layout (checkpoint written with {reshard.describe(old_layout)}; resharded)"
        if replayed:
            what += (f" with the rollback of step {replayed['step']} to it replayed from rollbacks.jsonl "
                     f"(data shift {replayed['data_shift']})")
        print(f"{run}: {what}, training to step {stop} (schedule horizon {horizon}); "
              f"{mcfg.num_params() / 1e6:.2f}M parameters, layout tp={cfg.parallel.tp} pp={cfg.parallel.pp} "
              f"dp={cfg.parallel.dp}, {G} x {seq_len} tokens per step"
              + (f"; {dropped} metrics rows past the checkpoint moved to metrics.discarded.jsonl" if dropped else "")
              + (f"; data cursor {shift} batches ahead of the step (rollbacks)" if shift else ""),
              flush=True)

    def evaluate(step: int) -> None:
        if not order.val_sources:
            return
        loss_fn, z = engine.module.loss_fn, engine.module.loss_fn.z_loss
        loss_fn.z_loss = 0.0                 # validation reports plain cross entropy
        per = {}
        for s in order.val_sources:
            out = engine.eval_batch(loader.val(s) if loads_data else None,
                                    num_micro_batches=loader.val_micro_batches())
            per[order.names[s]] = float(out)
        loss_fn.z_loss = z
        # Overall: the sources weighted by their share of the training mix (equal if none is planned).
        w = {order.names[s]: order.planned[s] for s in order.val_sources}
        if not sum(w.values()):
            w = {k: 1 for k in w}
        overall = sum(per[k] * w[k] for k in per) / sum(w.values())
        metrics.val(step=step, tokens=step * G * seq_len, val_loss=overall, per_source=per)

    def save_checkpoint(step: int) -> None:
        client = {"step": step, "samples_consumed": (step + shift) * G, "data_shift": shift,
                  "trained_per_source": trained.tolist(), "trained_sources": telemetry.names,
                  "spike_history": guard.detector.state() if guard else None}
        checkpoint.save(engine, run, step, client, cfg.checkpoint.keep,
                        {"samples_consumed": (step + shift) * G, "data_shift": shift,
                         "manifest_content_hash": manifest.content_hash, "layout": layout,
                         "precision": t_cfg.precision})

    if args.init and not latest:       # the starting model is the run's checkpoint 0
        save_checkpoint(0)

    # 4. The loop.
    fault_step = int(os.environ.get("GLASSBOX_FAULT_AFTER_STEP", 0)) or None
    # tests: data batch N (0-based, the data_step of records) arrives as all-zero token ids (a corrupted batch)
    bad_batch = int(os.environ["GLASSBOX_FAULT_BAD_BATCH"]) if os.environ.get("GLASSBOX_FAULT_BAD_BATCH") else None
    rollbacks = 0
    step = start
    while step < stop:
        data_step = step + shift
        lr = lr_at(step, kind=cfg.schedule.kind, lr=o.lr, min_lr=o.min_lr, warmup_steps=cfg.schedule.warmup_steps,
                   total_steps=horizon, decay_fraction=cfg.schedule.decay_fraction)
        for g in engine.optimizer.param_groups:
            g["lr"] = lr
        batches = loader.train(data_step) if loads_data else None
        if batches is not None and bad_batch == data_step:
            batches = _zeroed(batches)
        if guard:
            guard.begin()
        t0 = time.perf_counter()
        loss = engine.train_batch(batches)
        seconds = time.perf_counter() - t0
        step += 1
        verdict = guard.finish() if guard else None
        spiked = verdict is not None and verdict.spike
        extra = {"samples_consumed": (data_step + 1) * G, **row_fields}
        if engine.agg_additional_losses:
            extra.update({k: float(v) for k, v in engine.agg_additional_losses.items()})
        if verdict is not None:
            extra.update(spike_loss_z=verdict.loss_z, spike_grad_norm_z=verdict.grad_norm_z,
                         update_skipped=int(spiked))
        counts = telemetry.source_counts(data_step)
        if not spiked:
            trained += counts
            since_log += counts
        if step % cfg.log.every == 0 or step == stop:
            if rank == 0 and cfg.log.telemetry:
                extra.update(telemetry.batch(data_step))
                extra.update(telemetry.shares(trained, since_log))
            since_log[:] = 0
        gn = engine.get_global_grad_norm()
        metrics.train(step=step, tokens=step * G * seq_len, loss=float(loss), lr=lr,
                      grad_norm=float(gn) if gn is not None else None, step_tokens=G * seq_len,
                      seconds=seconds, **extra)
        if samples is not None and step % cfg.log.sample_every == 0:
            samples.write(step, data_step)
        if fault_step == step and rank == 0:     # tests: a crash between checkpoints (GLASSBOX_FAULT_AFTER_STEP)
            os.kill(os.getpid(), signal.SIGKILL)
        if spiked:
            newest = checkpoint.latest_complete(run) if rank == 0 else None
            restore = _broadcast(newest[0] if newest else None)
            action = t_cfg.on_spike if restore is not None else "skip"
            if rank == 0:
                note = "" if action == t_cfg.on_spike else " (no complete checkpoint yet to roll back to)"
                record_spike(run, step=step, data_step=data_step, global_batch=G, judgement=verdict,
                             action=action + note, order=order)
                print(f"step {step:>6}/{stop} | spike: {verdict.reason} (loss {verdict.loss:.4g}, grad_norm "
                      f"{verdict.grad_norm if verdict.grad_norm is None else format(verdict.grad_norm, '.4g')}); "
                      f"update skipped{note}" + ("; rolling back" if action == "rollback" else ""), flush=True)
            if action == "rollback":
                rollbacks += 1
                new_shift = step + shift + t_cfg.spike_rollback_skip - restore
                err = None
                if rollbacks > t_cfg.spike_max_rollbacks:
                    err = (f"{rollbacks} spikes in this invocation, more than train.spike_max_rollbacks "
                           f"({t_cfg.spike_max_rollbacks}): the spikes are not one bad batch. Lower the learning "
                           "rate (or lengthen warmup, tighten clipping) and resume, or raise the limit")
                elif (stop + new_shift) * G > order.n_samples:
                    err = (f"rolling back to step {restore} needs the data order to reach sample "
                           f"{(stop + new_shift) * G}; it holds {order.n_samples}. Resume (the order is extended "
                           "at start)")
                if err and rank == 0:
                    print(f"error: {err}", file=sys.stderr)
                if err:
                    dist.barrier()
                    _exit(2)
                state = load_checkpoint(restore)
                restored_shift = int(state.get("data_shift", 0))    # the current shift, unless resumed oddly
                if rank == 0:
                    rec = record_rollback(run, step=step, spike_data_step=data_step, restored_step=restore,
                                          old_shift=restored_shift,
                                          new_shift=new_shift, global_batch=G, judgement=verdict, order=order)
                    dropped = metrics.truncate_after(restore)
                    print(f"step {step:>6}/{stop} | rolled back to step {restore}; data batches "
                          f"{rec['skipped_data_steps'][0]}-{rec['skipped_data_steps'][1] - 1} skipped "
                          f"({rec['skipped_documents_total']} documents, rollbacks.jsonl); {dropped} metrics rows "
                          "moved to metrics.discarded.jsonl", flush=True)
                trained = trained_at(state, (restore + restored_shift) * G)
                shift, step = new_shift, restore
                since_log[:] = 0
                guard.detector.load(state.get("spike_history"))
                dist.barrier()
                continue
        if cfg.eval.every and (step % cfg.eval.every == 0 or step == stop):
            evaluate(step)
        if step == stop or (cfg.checkpoint.every and step % cfg.checkpoint.every == 0):
            save_checkpoint(step)

    dist.barrier()
    if rank == 0:
        _diagnose(run, plan["vocab_size"])
        for sink in sinks:
            sink.close()
        print(f"{run}: done at step {stop}; checkpoint {checkpoint.tag_for(stop)}", flush=True)
    _exit(0)
    return 0


def _broadcast(value):
    """Rank 0's value on every rank."""
    import torch.distributed as dist

    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def _zeroed(batches):
    """Tests (GLASSBOX_FAULT_BAD_BATCH): every token id of the batch replaced by 0 (what a shard of zero bytes
    decodes to); the same on the first and last pipeline stage."""
    for x, y in batches:
        yield x.new_zeros(x.shape), y.new_zeros(y.shape)


def _diagnose(run: Path, vocab_size: int) -> None:
    """diagnosis.json and the findings table at the end of a run (never fails the run)."""
    try:
        from train.record.diagnose import assess_run, format_table
        from train.record.load import read_run

        result = assess_run(read_run(run), vocab_size=vocab_size)          # with the run's manifest.json
        (run / "diagnosis.json").write_text(json.dumps(result.to_dict(), indent=1))
        print(f"{run}: diagnosis (diagnosis.json; python -m train.report {run} draws it):\n"
              + "".join(f"reading: {line}\n" for line in result.reading)
              + format_table(result.findings, result.not_judged), flush=True)
    except Exception as e:       # a reader's problem must not turn a finished run into a failed one
        print(f"warning: diagnosis failed: {type(e).__name__}: {e}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
