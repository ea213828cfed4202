"""The corpus side of a search: a DATA folder's token counts and manifests, built the way `make mix` builds them
(pipeline/mix/mixture.py) without Spark: the trainer checks every shard's sha256 when it opens one."""
from __future__ import annotations

import json
import os

from mixsearch.rows import SwarmError
from pipeline.mix.mixture import MixConfig, build_manifest, dumps_manifest, write_manifest


def load_counts(data: str) -> dict:
    path = os.path.join(data, "tokenized", "counts.json")
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except OSError:
        raise SwarmError(f"data: {path} not found; run `make tokenize DATA={data}` first") from None


def search_counts(spec) -> dict:
    """The DATA folder's counts as the search sees them: with a ``split:``, each split source's buckets in its
    place, their token shards written under the search's folder (mixsearch/split.py)."""
    counts = load_counts(spec.data)
    if not getattr(spec, "split_plans", None):
        return counts
    from mixsearch.split import materialize

    return materialize(spec.data, counts, spec.split_plans, spec.out_dir)


def natural_shares(counts: dict, domains: list[str]) -> dict[str, float]:
    tot = sum(int(counts["sources"][d]["tokens"]) for d in domains)
    return {d: int(counts["sources"][d]["tokens"]) / tot for d in domains}


def mixture_manifest(data: str, counts: dict, name: str, weights: dict[str, float], tokens: int, seq_len: int,
                     seed: int, max_epochs: float, out_dir: str) -> str:
    """A manifest of `weights` over the DATA folder's shards in out_dir/<name>.json (rewritten only when its
    content changed, so a resumed swarm finds the same file); -> its path."""
    mix = MixConfig(name=name, weights={d: w for d, w in weights.items() if w > 0}, max_seq_len=seq_len, seed=seed,
                    total_tokens=tokens, max_epochs=max_epochs)
    man = build_manifest(mix, counts, os.path.join(data, "tokenized"), out_dir)
    path = os.path.join(out_dir, f"{name}.json")
    text = dumps_manifest(man)
    if not (os.path.isfile(path) and open(path, encoding="utf-8").read() == text):
        write_manifest(man, path)
    return path
