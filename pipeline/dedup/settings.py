"""What the dedup stage can be told: exact, near (MinHash LSH) and semantic dedup, checked as a
config is read (bands x rows = num_perm and the like are `check` methods)."""
from __future__ import annotations

from dataclasses import dataclass, field

from glassbox.schema import setting


# --- dedup ---------------------------------------------------------------------------------------------------

MEASURES = ("jaccard", "containment")
NEAR_SCOPES = ("source", "all")
SEMANTIC_SCOPES = ("all", "source")
SEMANTIC_MODELS = ("static", "minilm")


@dataclass
class NearDedupConfig:
    enabled: bool = True
    ngram: int = setting(5, ge=1)                    # shingle size in words
    # ... and in characters for a text written mostly in a script without spaces (Chinese, Japanese,
    # Thai, ...; pipeline/clean/words.py): with 2-character shingles a copy with 3 % of its characters changed
    # stays near a Jaccard of 0.87 (3-grams: 0.80, at the threshold; 5-grams: 0.69), while unrelated
    # pages of one language stay below 0.4 (bench/languages.py)
    char_ngram: int = setting(2, ge=1)
    num_perm: int = setting(112, ge=1)
    bands: int = setting(14, ge=1)
    rows: int = setting(8, ge=1)
    threshold: float = setting(0.8, gt=0, le=1)
    # jaccard: the two texts are nearly the same; containment: the smaller one is (mostly) inside
    # the larger, e.g. a pasted excerpt. Containment pairs have low Jaccard, so LSH needs looser
    # bands (e.g. 56 x 2) to propose them.
    measure: str = setting("jaccard", choices=MEASURES)
    verify: bool = True
    max_bucket: int = setting(1000, ge=2)
    scope: str = setting("source", choices=NEAR_SCOPES)
    seed: int = setting(42, ge=0)

    def check(self) -> str | None:
        if self.bands * self.rows != self.num_perm:
            return (f"num_perm: bands * rows must equal num_perm ({self.bands} * {self.rows} = "
                    f"{self.bands * self.rows}, num_perm = {self.num_perm}): change bands, rows or num_perm")
        if self.measure != "jaccard" and not self.verify:
            return f"verify: measure {self.measure} needs verify: true (LSH alone estimates Jaccard only)"
        return None


@dataclass
class SemanticDedupConfig:
    enabled: bool = False
    eps: float = setting(0.05, gt=0, lt=1)           # remove when cosine similarity to a kept document > 1 - eps
    docs_per_cluster: int = setting(100, ge=1)       # k-means k = max(1, ceil(n / docs_per_cluster))
    max_iter: int = setting(20, ge=1)                # k-means iterations
    batch_size: int = setting(32, ge=1)              # texts per forward pass of the encoder
    max_chars: int = setting(2000, ge=1)             # texts are cut here before tokenizing (the model reads 256 tokens)
    scope: str = setting("all", choices=SEMANTIC_SCOPES)  # duplicates across all sources, or only within one
    seed: int = setting(42, ge=0)                    # k-means seed
    model: str = setting("static", choices=SEMANTIC_MODELS)  # static (distilled from MiniLM, fast) or minilm
    static_dir: str = ""                             # where the static model is cached ("" = ~/.cache/glassbox)

    def check(self) -> str | None:
        if self.static_dir and self.model != "static":
            return (f"static_dir: only the static model is cached there, but model is {self.model!r}: "
                    "remove static_dir or set model: static")
        return None


@dataclass
class DedupConfig:
    exact: bool = True
    shards: int = setting(4, ge=1)   # output files of the final stage; fixed so reruns give the same shards
    # Inputs with less text than this (bytes, from the Parquet footers) are deduplicated in one Spark task
    # by pipeline/dedup/local.py: the same result in seconds instead of dozens of small Spark jobs. That task
    # holds the input and ~8 bytes per word, so keep it well under an executor's memory; 0 = never.
    # 256 MiB: on the 10^5-document bench corpus (146 MiB of text, 2 cores) the local path took 18.3 s against
    # the distributed path's 104.0 s, same decisions, with a 1.7 GB peak (about 12 x the text); and it matches
    # the no-JVM executor's LOCAL_MAX_BYTES (pipeline/run/local.py), so such a run never starts Spark for dedup.
    local_max_bytes: int = setting(256 << 20, ge=0, le=1 << 30,
                                   why="one task holds the whole input: beyond 1 GiB use the distributed path")
    near: NearDedupConfig = field(default_factory=NearDedupConfig)          # MinHash LSH
    semantic: SemanticDedupConfig = field(default_factory=SemanticDedupConfig)  # SemDeDup
    # Corpora already built (DATA folders of `make clean-dedup`, or their dedup_index/ folders, local or
    # s3://): this run's documents that repeat one of theirs are rejected with duplicate_of naming the old
    # document; theirs are never rewritten (pipeline/dedup/index.py, docs/incremental-dedup.md).
    against: list[str] = setting(default_factory=list, check=lambda v: None if all(v) else "an empty path")

    def check(self) -> str | None:
        if self.against and self.semantic.enabled:
            return ("against: semantic dedup cannot run against earlier corpora (its k-means clusters are made "
                    "over one run's documents, so a new crawl's clusters would not be the full run's): set "
                    "dedup.semantic.enabled: false here, or deduplicate the corpora together from scratch")
        return None
