"""``glassbox config check FILE``: check any Glassbox config without starting Spark or DeepSpeed.

The kind is read from the file (a pipeline config has ``sources``, a mixture config ``dataset_mix``, anything
else is a trainer config) or given with ``--kind``. It is the one config checker: ``make`` runs it before any
heavy work (``--world-size`` gives ``make pretrain`` its process count).
"""
from __future__ import annotations

import argparse
import sys

from glassbox.schema import ConfigError, load_file

KINDS = ("pipeline", "train", "mix")


def kind_of(raw) -> str:
    if isinstance(raw, dict) and "sources" in raw:
        return "pipeline"
    if isinstance(raw, dict) and "dataset_mix" in raw:
        return "mix"
    return "train"


def check(path: str, kind: str | None = None, sets: list[str] | None = None, world_size: bool = False) -> str:
    """What the checked config holds (a summary line, then a pipeline's sources and benchmarks); ConfigError
    (or the mixture's MixError) when it is wrong. `world_size`: a trainer config's process count only."""
    kind = kind or kind_of(load_file(path))
    if kind == "pipeline":
        from pipeline.config import load_config
        return load_config(path).summary()
    if kind == "mix":
        from pipeline.mix.mixture import load_mix
        mix = load_mix(path)
        return f"{path}: mixture config ok ({', '.join(f'{k} {v:g}' for k, v in sorted(mix.weights.items()))})"
    from train.config import load_config as load_train_config
    cfg = load_train_config(path, sets)
    if world_size:
        return str(cfg.world_size)
    return (f"{path}: trainer config ok ({cfg.world_size} processes: tp={cfg.parallel.tp} pp={cfg.parallel.pp} "
            f"dp={cfg.parallel.dp}, gradient accumulation {cfg.grad_accum})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="glassbox config", description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=["check"])
    ap.add_argument("file")
    ap.add_argument("--kind", choices=KINDS, default=None, help="default: read from the file")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="trainer configs: override a key as make pretrain's --set does")
    ap.add_argument("--world-size", action="store_true", help="trainer configs: print tp x pp x dp only")
    a = ap.parse_args(argv)
    from pipeline.mix.mixture import MixError
    try:
        print(check(a.file, a.kind, a.set, a.world_size))
    except (ConfigError, MixError) as e:
        print(f"config error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
