"""A torchrun worker for tests/train/checkpoint/test_train_reshard.py and tests/train/checkpoint/test_hf_import.py: the trainer's engine
(train.pretrain.build_engine) in a config's layout, then one of

    roundtrip RUN STEP OUT     load RUN's checkpoint STEP (any layout: train.checkpoint.reshard.load) and save it at once,
                               untrained, as OUT's checkpoint STEP in this layout
    logits INIT IDS OUT        import the Hugging Face model INIT (train.checkpoint.hf_import), forward the token ids of
                               the .pt file IDS ([B, T], B = micro_batch_size) and write the full-vocabulary
                               logits [B, T, vocab] (tensor slices gathered) to OUT

    torchrun --standalone --nproc_per_node=N tests/reshard_worker.py CONFIG MANIFEST MODE ARGS... [--set k=v ...]
"""
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist

# Run as a script, Python puts tests/ first on the path, where tests/train/ (no __init__) would be taken for the
# train package when the project is installed through an editable finder rather than a path entry.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from train.config import load_config  # noqa: E402
from train.data.manifest import read_manifest  # noqa: E402
from train.plan import resolve  # noqa: E402
from train.pretrain import build_engine, init_distributed  # noqa: E402


def main(argv):
    sets = [argv[i + 1] for i, a in enumerate(argv) if a == "--set"]
    args = [a for i, a in enumerate(argv) if a != "--set" and (i == 0 or argv[i - 1] != "--set")]
    config, manifest, mode, *rest = args
    init_distributed()
    manifest = read_manifest(manifest)
    if mode == "logits":
        from train.checkpoint import hf_import

        hf = hf_import.read_config(rest[0])
        cfg = load_config(config, hf_import.model_overrides(config, sets, hf) + sets)
    else:
        cfg = load_config(config, sets)
    mcfg = resolve(cfg, manifest, None).model
    engine, _, topo, group = build_engine(cfg, mcfg)
    if mode == "roundtrip":
        from train.checkpoint import store as checkpoint
        from train.checkpoint import reshard
        from train.checkpoint.store import meta_model, partition_dims

        run, step, out = Path(rest[0]), int(rest[1]), Path(rest[2])
        layout = reshard.layout_now(cfg)
        state = reshard.load(engine, run, step, layout, mcfg.n_layers, group, partition_dims(meta_model(mcfg)))
        client = {k: state[k] for k in ("step", "samples_consumed", "data_shift", "trained_per_source",
                                         "spike_history") if k in state}
        checkpoint.save(engine, out, step, client, 0, {"layout": layout})
    elif mode == "logits":
        from train.checkpoint import hf_import

        hf_import.apply(engine, hf_import.Weights(rest[0], mcfg, hf), mcfg.n_layers, group)
        ids = torch.load(rest[1])
        batch = iter([(ids, ids.clone())])
        _, logits = engine.eval_batch(batch, return_logits=True, num_micro_batches=1)
        coord = topo.get_coord(dist.get_rank())
        if engine.is_last_stage():
            parts = [torch.empty_like(logits) for _ in range(cfg.parallel.tp)]
            if group is None:
                parts = [logits]
            else:
                dist.all_gather(parts, logits.contiguous(), group=group)
            if coord.data == 0 and coord.model == 0:
                torch.save(torch.cat(parts, -1)[..., :mcfg.vocab_size].clone(), rest[2])
    dist.barrier()
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
