"""Near-duplicate clusters in plain Python: candidate groups become edges (all pairs in a small bucket),
edges become components (`union_find`), and inside each component the best document is kept
(`keep_best_first`). The Spark path (pipeline/dedup/near.py, components.py) and the no-Spark path
(pipeline/dedup/local.py) share it, so both decide alike."""
from __future__ import annotations

from typing import Iterable

# Buckets up to this size propose every pair of their members, bigger ones a star to their smallest
# id: all pairs let a document be checked against the very document it will be removed for.
PAIRS_BUCKET = 20
LOCAL_MAX_EDGES = 2_000_000
# The quality a document of an earlier corpus ranks with (`dedup.against`): above every real score, so it is
# always walked first and kept; its corpus is fixed, and a new document near it is the one removed.
OLD_RANK = float("inf")


def union_find(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Plain Python: every node of `pairs` -> the smallest id of its component."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        root = parent.setdefault(x, x)
        while root != parent[root]:
            parent[root] = parent[parent[root]]  # path halving
            root = parent[root]
        return root

    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:  # the smaller id stays the root, so a root is its component's smallest id
            parent[max(ra, rb)] = min(ra, rb)
    return {x: find(x) for x in parent}


def _best_first(node: str, quality: float | None) -> tuple:
    """Sort key, best first: quality present before missing (None or NaN), higher before lower,
    then the smaller id."""
    if quality is None or quality != quality:
        return (1, 0.0, node)
    return (0, -quality, node)


def keep_best_first(edges: Iterable[tuple[str, str]], quality: dict[str, float | None]
                    ) -> dict[str, tuple[str, str | None]]:
    """Plain Python: for every node of `edges`, (component, duplicate_of). Components by union-find
    (named by their smallest id); inside each, nodes are walked best first (`_best_first` on
    `quality`): a node with an edge to an already kept node is a duplicate of the best of them,
    otherwise it is kept (duplicate_of None). So the best node of every component survives, and a
    removed node always names a kept node it shares an edge with: with verified edges, one within the
    threshold, never one it only reaches through a chain of others."""
    pairs = list(edges)
    root = union_find(pairs)
    neighbours: dict[str, set[str]] = {}
    for a, b in pairs:
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    members: dict[str, list[str]] = {}
    for node, r in root.items():
        members.setdefault(r, []).append(node)
    out: dict[str, tuple[str, str | None]] = {}
    for r, nodes in members.items():
        nodes.sort(key=lambda x: _best_first(x, quality.get(x)))
        rank = {x: i for i, x in enumerate(nodes)}
        kept: set[str] = set()
        for x in nodes:
            hits = [y for y in neighbours[x] if y in kept]
            if hits:
                out[x] = (r, min(hits, key=rank.__getitem__))
            else:
                kept.add(x)
                out[x] = (r, None)
    return out
