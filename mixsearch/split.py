"""A source split into buckets of a score column, each bucket a domain of the search (quality-aware upsampling as
Dolma 3 does it: every bucket kept, the search decides how much of each, instead of one threshold).

    split:
      web: {column: quality_en, quantiles: 5}                 # web@q1 .. web@q5, equal document counts
      cc:  {column: quality_en, edges: [0.1, 0.5], names: [low, mid, high], unscored: low}
      zh:  {column: quality_zh_bucket}                        # a score stage bucket column: one domain per value

The token shards hold ``id``, ``source`` and the tokens only; the score columns stay in the folder tokenize read
(``DATA/decontaminated``, every column of the score stage kept; ``from:`` names another). A document's bucket is
found by its ``id``. A numeric column is cut at ``edges`` (fixed) or at ``quantiles`` (``N`` for N equal buckets, or
fractions) of that source's scored documents, by the score stage's nearest rank (`pipeline/score/distributions.py`)
and its cut (`pipeline/score/decisions.py`: a score equal to a cut point falls in the lower bucket); a string column
(a score stage ``buckets`` column) gives one bucket per value. Documents without a score (another language) go where
``unscored`` says: ``own`` (a domain ``<source>@unscored``) or a bucket's name; without it they are an error.

Each bucket ``<source>@<name>`` gets token shards of its own in ``<search>/split/<source>@<name>/`` (for each of the
source's shards, its documents of that bucket, in their order), written as the tokenize stage writes shards and
described in ``split.json``; the search's token counts list the buckets in the source's place, so the swarm, the fit,
the proposal, verify and the manifests work on them as on any source. Everything is checked when the spec is read,
before a proxy trains: an unknown source or column, cut points that do not increase, a bucket with no tokens.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

from glassbox.schema import ConfigError, build, setting
from pipeline.score.settings import strictly_increasing

SEP = "@"
UNSCORED = "unscored"
SPLIT_DIR, SPLIT_FILE = "split", "split.json"


@dataclass
class SplitRule:
    column: str = setting(why="a score column of the documents, e.g. quality_en, or a bucket column")
    edges: list[float] | None = setting(None, check=strictly_increasing)
    names: list[str] | None = None
    unscored: str | None = None
    from_: str = "decontaminated"          # the spec's key is `from`
    quantiles: object = None               # N, or fractions: checked by _quantiles (not a single type)


def _quantiles(key: str, q) -> list[float]:
    if isinstance(q, bool):
        raise ConfigError(f"{key}: expected a bucket count (e.g. 5) or fractions (e.g. [0.2, 0.4, 0.6, 0.8])")
    if isinstance(q, int):
        if q < 2:
            raise ConfigError(f"{key}: {q} bucket(s); give at least 2")
        return [i / q for i in range(1, q)]
    if isinstance(q, list) and q and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in q):
        if not all(0 < x < 1 for x in q):
            raise ConfigError(f"{key}: fractions must lie in (0, 1), got {q!r}")
        problem = strictly_increasing(q)
        if problem:
            raise ConfigError(f"{key}: {problem}")
        return [float(x) for x in q]
    raise ConfigError(f"{key}: expected a bucket count (e.g. 5) or fractions (e.g. [0.2, 0.4, 0.6, 0.8]), got {q!r}")


def _read_scores(data: str, rule: SplitRule, key: str):
    """{id: value} of the column over the folder's documents, and whether the column is numeric."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    folder = os.path.join(data, rule.from_)
    if not os.path.isdir(folder):
        raise ConfigError(f"{key}.from: no folder {folder} (the documents with their score columns; tokenize reads "
                          "decontaminated/)")
    dset = ds.dataset(folder, format="parquet")
    names = dset.schema.names
    if "id" not in names:
        raise ConfigError(f"{key}.from: {folder} has no id column to find a token shard's documents by")
    if rule.column not in names:
        scores = sorted(c for c in names if c.startswith("quality") or c.startswith("ppl") or c == "perplexity")
        raise ConfigError(f"{key}.column: no column {rule.column!r} in {folder} (score columns there: "
                          f"{', '.join(scores) or 'none'}; the score stage writes them, docs/quality.md)")
    table = dset.to_table(columns=["id", rule.column])
    typ = table.schema.field(rule.column).type
    numeric = pa.types.is_integer(typ) or pa.types.is_floating(typ)
    if not numeric and not pa.types.is_string(typ) and not pa.types.is_large_string(typ):
        raise ConfigError(f"{key}.column: {rule.column!r} is {typ}; a numeric score or a string bucket column")
    return dict(zip(table.column("id").to_pylist(), table.column(rule.column).to_pylist())), numeric


def _token_index(data: str, counts: dict, source: str):
    """[(shard facts, [(id, n_tokens), ...])] of the source's token shards, in order."""
    import pyarrow.parquet as pq

    out = []
    for sh in counts["sources"][source]["shards"]:
        path = os.path.join(data, "tokenized", sh["path"])
        t = pq.read_table(path, columns=["id", "n_tokens"])
        out.append((sh, list(zip(t.column("id").to_pylist(), t.column("n_tokens").to_pylist()))))
    return out


def plan_source(data: str, counts: dict, source: str, raw, key: str) -> dict:
    """The bucket of each document of `source` and each bucket's documents and tokens; ConfigError on bad input.
    -> {"rule": {...}, "buckets": {name: {documents, tokens}}, "assign": {id: name}}"""
    import numpy as np

    from pipeline.score.decisions import cut
    from pipeline.score.distributions import nearest_rank

    if not isinstance(raw, dict):
        raise ConfigError(f"{key}: expected {{column: ..., quantiles: 5}} or {{column: ..., edges: [...]}}")
    raw = dict(raw)
    q = raw.pop("quantiles", None)
    rule = build(SplitRule, raw, key)
    rule.quantiles = q
    scores, numeric = _read_scores(data, rule, key)
    index = _token_index(data, counts, source)
    ids = [i for _, docs in index for i, _ in docs]
    missing = [i for i in ids if i not in scores]
    if missing:
        raise ConfigError(f"{key}: {len(missing)} document(s) of {source!r} in tokenized/ are not in "
                          f"{rule.from_}/ (first id {missing[0]}); the token shards are from another run: "
                          "rerun make tokenize")
    values = [scores[i] for i in ids]
    if numeric:
        if (rule.edges is None) == (rule.quantiles is None):
            raise ConfigError(f"{key}: a numeric column is cut at edges (fixed cut points, e.g. [0.1, 0.5, 0.9]) or "
                              "quantiles (5, or fractions such as [0.2, 0.4, 0.6, 0.8]): give one of the two")
        scored = np.array([v for v in values if v is not None and v == v], float)
        quantiles = None
        if rule.edges is not None:
            edges = [float(x) for x in rule.edges]
        else:
            quantiles = _quantiles(f"{key}.quantiles", rule.quantiles)
            if not len(scored):
                raise ConfigError(f"{key}.column: no document of {source!r} has a {rule.column} score")
            edges = nearest_rank(scored, quantiles)
            tie = next((i for i in range(1, len(edges)) if not edges[i - 1] < edges[i]), None)
            if tie is not None:
                raise ConfigError(f"{key}.quantiles: the {quantiles[tie - 1]:g} and {quantiles[tie]:g} quantiles of "
                                  f"{source}'s {rule.column} are both {edges[tie]:g} (ties), so a bucket between them "
                                  "would be empty; ask for fewer buckets or give edges")
        names = rule.names or [f"q{i + 1}" for i in range(len(edges) + 1)]
        if len(names) != len(edges) + 1:
            raise ConfigError(f"{key}.names: {len(edges)} cut points make {len(edges) + 1} buckets; name "
                              f"{len(edges) + 1}, got {len(names)}: {names}")
        labels = [None if v is None or v != v else cut(float(v), edges, names) for v in values]
    else:
        if rule.edges is not None or rule.quantiles is not None:
            raise ConfigError(f"{key}: {rule.column!r} is a string (bucket) column: its values are the buckets; "
                              "drop edges/quantiles (they cut a numeric score)")
        present = sorted({v for v in values if v is not None})
        names = rule.names or present
        extra = sorted(set(present) - set(names))
        if extra:
            raise ConfigError(f"{key}.names: {rule.column} has the value(s) {extra} the names leave out")
        edges = quantiles = None
        labels = list(values)
    for n in names:
        if not isinstance(n, str) or not n or any(c in n for c in "/@ ") or n == UNSCORED:
            raise ConfigError(f"{key}.names: a bucket name is a non-empty string without '/', '@' or spaces, and "
                              f"not {UNSCORED!r}; got {n!r}")
    if len(set(names)) != len(names):
        raise ConfigError(f"{key}.names: every bucket needs its own name, got {names}")
    n_none = sum(lab is None for lab in labels)
    if n_none:
        if rule.unscored is None:
            raise ConfigError(f"{key}.unscored: {n_none} document(s) of {source!r} have no {rule.column} (another "
                              f"language, or unscored); say where they go: unscored: own (a domain "
                              f"{source}{SEP}{UNSCORED}) or the name of a bucket ({', '.join(names)})")
        if rule.unscored != "own" and rule.unscored not in names:
            raise ConfigError(f"{key}.unscored: {rule.unscored!r} is neither own nor a bucket ({', '.join(names)})")
        to = UNSCORED if rule.unscored == "own" else rule.unscored
        labels = [to if lab is None else lab for lab in labels]
        if rule.unscored == "own":
            names = names + [UNSCORED]
    buckets = {n: {"documents": 0, "tokens": 0} for n in names}
    ntok = [n for _, docs in index for _, n in docs]
    for lab, n in zip(labels, ntok):
        buckets[lab]["documents"] += 1
        buckets[lab]["tokens"] += int(n)
    empty = [n for n, b in buckets.items() if b["tokens"] <= 0]
    if empty:
        desc = f"edges {[round(e, 6) for e in edges]}" if edges is not None else f"values {names}"
        raise ConfigError(f"{key}: bucket {source}{SEP}{empty[0]} has no tokens ({desc}; documents per bucket: "
                          + ", ".join(f"{n} {b['documents']}" for n, b in buckets.items())
                          + "); a domain with nothing in it cannot take a weight: move the cut points")
    import hashlib

    # which document went where: a rerun whose scores moved a document (same edges) writes the shards again
    digest = hashlib.sha256("".join(f"{i}\t{lab}\n" for i, lab in zip(ids, labels)).encode()).hexdigest()
    return {"rule": {"column": rule.column, "from": rule.from_, "edges": edges, "quantiles": quantiles,
                     "names": names, "unscored": rule.unscored,
                     "shards": [sh["sha256"] for sh, _ in index], "assignment_sha256": digest},
            "buckets": buckets, "assign": dict(zip(ids, labels))}


def plan_split(data: str, counts: dict, raw) -> dict:
    """{source: plan} for the spec's ``split:`` (see plan_source); ConfigError naming the key on bad input."""
    if not isinstance(raw, dict) or not raw:
        raise ConfigError("split: expected {source: {column: quality_en, quantiles: 5}, ...}")
    plans = {}
    for source, r in raw.items():
        key = f"split.{source}"
        if source not in counts["sources"]:
            raise ConfigError(f"{key}: no source {source!r} in the corpus (sources: "
                              f"{', '.join(sorted(counts['sources']))})")
        if int(counts["sources"][source]["tokens"]) <= 0:
            raise ConfigError(f"{key}: source {source!r} has no tokens")
        plans[source] = plan_source(data, counts, source, r, key)
    return plans


def bucket_domains(plans: dict) -> dict[str, list[str]]:
    """{source: [its bucket domains]}."""
    return {s: [f"{s}{SEP}{n}" for n in p["rule"]["names"]] for s, p in plans.items()}


def record(plans: dict) -> dict:
    """What the swarm's meta and split.json record of the split (no per-document assignment)."""
    return {s: {"rule": p["rule"], "buckets": p["buckets"]} for s, p in sorted(plans.items())}


def materialize(data: str, counts: dict, plans: dict, out_dir: str) -> dict:
    """Write each bucket's token shards under out_dir/split/ (once: a rerun with the same rule and the same source
    shards finds them and leaves them) and return the corpus's counts with the buckets in place of their sources."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from glassbox.contracts import sha256_file
    from pipeline.tokenize.tokenizer import ShardWriter

    root = os.path.join(out_dir, SPLIT_DIR)
    tokenized = os.path.join(data, "tokenized")
    rec_path = os.path.join(root, SPLIT_FILE)
    old = None
    if os.path.isfile(rec_path):
        with open(rec_path, encoding="utf-8") as fh:
            old = json.load(fh)
    rec = {"sources": {}}
    merged = {**counts, "sources": {k: v for k, v in counts["sources"].items() if k not in plans}}
    for source, p in sorted(plans.items()):
        prev = (old or {}).get("sources", {}).get(source)
        reuse = prev is not None and prev["rule"] == p["rule"] and all(
            os.path.isfile(os.path.join(root, sh["path"])) and sha256_file(os.path.join(root, sh["path"])) == sh["sha256"]
            for b in prev["buckets"].values() for sh in b["shards"])
        if reuse:
            got = prev["buckets"]
        else:
            got = {n: {"documents": 0, "tokens": 0, "shards": []} for n in p["rule"]["names"]}
            for k, sh in enumerate(counts["sources"][source]["shards"]):
                table = pq.read_table(os.path.join(tokenized, sh["path"]))
                labels = pa.array([p["assign"][i] for i in table.column("id").to_pylist()], pa.string())
                for n in p["rule"]["names"]:
                    part = table.filter(pc.equal(labels, n))
                    if not part.num_rows:
                        continue
                    rel = f"{source}{SEP}{n}/part-{k:05d}.parquet"
                    path = os.path.join(root, rel)
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    w = ShardWriter(path)
                    w.add(part)
                    facts = w.close()
                    got[n]["shards"].append({"path": rel, "sha256": facts["sha256"], "documents": facts["documents"],
                                             "tokens": facts["tokens"]})
                    got[n]["documents"] += facts["documents"]
                    got[n]["tokens"] += facts["tokens"]
        rec["sources"][source] = {"rule": p["rule"], "buckets": got}
        for n, b in got.items():
            merged["sources"][f"{source}{SEP}{n}"] = {
                "documents": b["documents"], "tokens": b["tokens"],
                "shards": [{**sh, "path": os.path.relpath(os.path.join(root, sh["path"]), tokenized)}
                           for sh in b["shards"]]}
    if rec != old:
        os.makedirs(root, exist_ok=True)
        with open(rec_path, "w", encoding="utf-8") as fh:
            json.dump(rec, fh, indent=1, sort_keys=True)
    return merged
