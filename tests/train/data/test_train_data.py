"""Trainer data: manifest reader, shard checksums and token cache, the data order and the loader."""
import dataclasses
import json
import shutil
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from train.data.loader import Loader
from train.data.manifest import ManifestError, read_manifest
from train.data.sample_index import _EPOCH, DataOrder, blend
from train.data.shards import ShardCache
from glassbox.contracts import manifest_content_hash
from train_fixtures import REPO, make_dataset

L = 32


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("traindata")
    path = make_dataset(root, total_tokens=60_000, max_seq_len=L)
    m = read_manifest(path)
    cache = ShardCache(root / "token_cache", m.vocab_size, m.eos_id)
    for src in m.sources.values():
        for sh in src.shards:
            cache.verify(sh)
            cache.ensure(sh)
    return root, path, m, cache


def _edit_manifest(path, tmp_path, fn, rehash=True):
    raw = json.loads(path.read_text())
    fn(raw)
    if rehash:
        raw["content_hash"] = manifest_content_hash(raw)
    out = path.parent / f"edited-{tmp_path.name}.json"
    out.write_text(json.dumps(raw))
    return out


def test_manifest_is_read_with_paths_relative_to_it(data):
    root, path, m, _ = data
    assert list(m.sources) == ["prose", "wiki"]
    for src in m.sources.values():
        assert all(sh.path.is_file() and sh.rel_path.startswith("../tokenized/") for sh in src.shards)
    assert (root / "tokenizer" / "sp.model").resolve() == __import__("pathlib").Path(m.tokenizer["abs_path"])
    assert m.vocab_size == 384 and m.eos_id == 3


def test_edited_or_incomplete_manifest_is_refused(data, tmp_path):
    _, path, _, _ = data
    edited = _edit_manifest(path, tmp_path, lambda r: r["sources"]["wiki"].update(weight=0.9), rehash=False)
    with pytest.raises(ManifestError, match="content_hash"):
        read_manifest(edited)
    missing = _edit_manifest(path, tmp_path, lambda r: r["tokenizer"].pop("eos_id"))
    with pytest.raises(ManifestError, match=r"tokenizer\.eos_id: missing"):
        read_manifest(missing)


def test_token_cache_is_the_parquet_content(data):
    _, _, m, cache = data
    sh = m.sources["wiki"].shards[1]
    tokens, offsets = cache.open(sh.sha256)
    assert tokens.dtype == np.uint16 and cache.tokens_path(sh.sha256).name.endswith(".tokens.u16.npy")
    col = pq.read_table(sh.path, columns=["tokens"]).column("tokens").to_pylist()
    assert len(offsets) == len(col) + 1 and offsets[-1] == len(tokens) == sh.tokens
    for d in (0, 7, len(col) - 1):
        assert tokens[offsets[d]:offsets[d + 1]].tolist() == col[d]


def _corrupt(shard_path):
    t = pq.read_table(shard_path)
    toks = t.column("tokens").to_pylist()
    toks[0][0] = (toks[0][0] + 1) % 300
    t = t.set_column(t.schema.get_field_index("tokens"), "tokens", pa.array(toks, type=pa.list_(pa.int32())))
    pq.write_table(t, shard_path, compression="zstd")


@pytest.mark.trainer
def test_changed_shard_is_an_error_naming_it(data, tmp_path):
    root, path, _, _ = data
    copy = tmp_path / "data"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("token_cache"))
    m = read_manifest(copy / "manifests" / path.name)
    cache = ShardCache(copy / "token_cache", m.vocab_size, m.eos_id)
    shard = m.sources["prose"].shards[0]
    cache.verify(shard)                      # hashed once, stamp recorded
    _corrupt(shard.path)
    with pytest.raises(ManifestError) as e:
        cache.verify(shard)                  # the stamp no longer matches: rehashed
    assert str(shard.path) in str(e.value) and "manifest must be rebuilt" in str(e.value)

    # The trainer refuses to start on it, naming the file.
    cfg = tmp_path / "c.yaml"
    cfg.write_text("model: {n_layers: 1, d_model: 32, n_heads: 2}\ntrain: {steps: 2, micro_batch_size: 2, "
                   "global_batch_size: 2}\n")
    r = subprocess.run([sys.executable, "-m", "train.pretrain", "--config", str(cfg), "--manifest",
                        str(copy / "manifests" / path.name), "--run", str(tmp_path / "run")],
                       cwd=REPO, capture_output=True, text=True, timeout=300, env={**__import__("os").environ,
                                                                                 "OMP_NUM_THREADS": "1"})
    assert r.returncode == 2, r.stderr[-2000:]
    assert str(shard.path) in r.stderr and "manifest must be rebuilt" in r.stderr
    assert not (tmp_path / "run" / "metrics.jsonl").exists()


def test_blend_keeps_every_prefix_in_proportion():
    counts = [700, 295, 5]
    src, draw = blend(counts, 3000)                     # past the planned 1000: continues in proportion
    p = np.array(counts) / sum(counts)
    n = np.arange(1, len(src) + 1)
    for s in range(3):
        seen = np.cumsum(src == s)
        assert np.abs(seen - n * p[s]).max() <= 1.0
        assert np.array_equal(draw[src == s], np.arange((src == s).sum()))   # draws in order, none skipped
    small_src, small_draw = blend(counts, 777, chunk=50.0)                   # any chunking: same prefix
    assert np.array_equal(small_src, src[:777]) and np.array_equal(small_draw, draw[:777])


def _order(m, cache, n=600, val=8):
    o = DataOrder(m, cache, L)
    o.hold_out(val)
    o.build(n)
    return o


def test_data_order_is_deterministic_prefix_stable_and_seeded(data):
    _, _, m, cache = data
    a, b = _order(m, cache, 600), _order(m, cache, 900)
    assert np.array_equal(a.index_source, b.index_source[:600]) and np.array_equal(a.index_draw, b.index_draw[:600])
    assert all(np.array_equal(a.sample(g), b.sample(g)) for g in range(0, 600, 37))
    other = _order(dataclasses.replace(m, seed=m.seed + 1), cache, 600)
    assert not all(np.array_equal(a.sample(g), other.sample(g)) for g in range(20))


def test_samples_are_windows_of_the_shuffled_stream(data):
    _, _, m, cache = data
    o = _order(m, cache, 1500)
    s = o.names.index("prose")
    st = o.streams[s]
    # Rebuild two epochs of the stream by hand from the cache.
    docs = []
    for e in range(2):
        for i in st.perm(_EPOCH, e):
            doc = int(st.train_docs[i])
            sh = int(np.searchsorted(st.shard_doc_start, doc, side="right")) - 1
            toks, offs = cache.open(st.src.shards[sh].sha256)
            row = doc - st.shard_doc_start[sh]
            docs.append(np.asarray(toks[offs[row]:offs[row + 1]], np.int64))
    stream = np.concatenate(docs)
    gs = np.flatnonzero(o.index_source == s)
    js = [st.stream_sequence(int(o.index_draw[g])) for g in gs]
    for g, j in list(zip(gs, js))[:60]:
        assert np.array_equal(o.sample(int(g)), stream[j * L:j * L + L + 1])
    # Within a block every stream sequence is drawn once: no repeats.
    first_block = [j for k, j in zip(o.index_draw[gs], js) if k < st.block]
    assert len(set(first_block)) == len(first_block)
    # Documents end with eos inside the stream, and a window is L + 1 tokens.
    assert o.sample(int(gs[0])).shape == (L + 1,)


def test_locate_traces_a_row_back_to_parquet(data):
    _, _, m, cache = data
    o = _order(m, cache, 200)
    G = 8
    for step, row in ((0, 0), (3, 5), (17, 7)):
        segs = o.locate(step, row, G)
        tokens = []
        for seg in segs:
            src = m.sources[seg.source]
            col = pq.read_table(src.shards[seg.shard].path, columns=["tokens"]).column("tokens")
            tokens += col[seg.row].as_py()[seg.start:seg.end]
            assert seg.shard_path == src.shards[seg.shard].rel_path
            ids = pq.read_table(src.shards[seg.shard].path, columns=["id"]).column("id")
            assert o.document_id(seg) == ids[seg.row].as_py()
        assert tokens == o.sample(step * G + row).tolist()


def test_validation_documents_are_held_out(data):
    _, _, m, cache = data
    o = _order(m, cache, 600, val=8)
    assert sorted(o.names[s] for s in o.val_sources) == ["prose", "wiki"]
    for st in o.streams:
        assert len(st.val_docs) and not set(st.val_docs) & set(st.train_docs)
        assert len(st.val_docs) + len(st.train_docs) == len(st.doc_lens)
    v = o.val_sample(0, 7)
    assert v.shape == (L + 1,)
    # No training sample touches a held-out document.
    for g in range(0, 600, 7):
        st, segs = o.segments(g)
        assert not {d for d, _, _ in segs} & set(st.val_docs.tolist())


def test_loader_rows_cover_the_global_batch_for_any_layout(data):
    _, _, m, cache = data
    o = _order(m, cache, 100)
    G = 8
    for mb, dp in ((8, 1), (2, 1), (2, 2), (1, 4), (2, 4)):
        rows = []
        for rank in range(dp):
            ld = Loader(o, G, mb, dp, rank)
            batches = list(ld.train(3))
            assert len(batches) == G // (mb * dp)
            for m_i, (x, y) in enumerate(batches):
                assert x.shape == (mb, L) and torch_equal_shift(x, y)
                rows += (ld.cursor(3) + ld.rows(m_i)).tolist()
        assert sorted(rows) == list(range(3 * G, 4 * G))


def torch_equal_shift(x, y):
    return bool((x[:, 1:] == y[:, :-1]).all())


def test_record_roundtrip_extension_and_tamper_check(data, tmp_path):
    _, _, m, cache = data
    rec = tmp_path / "data_order"
    o = DataOrder(m, cache, L, rec)
    o.hold_out(8)
    o.build(300)
    o.save()
    loaded = DataOrder.load(m, cache, rec)
    assert loaded.n_samples == 300 and all(np.array_equal(loaded.sample(g), o.sample(g)) for g in range(0, 300, 11))
    assert (rec / "perms" / "wiki" / "block_00000.npy").is_file()
    longer = DataOrder(m, cache, L, rec)
    longer.hold_out(8)
    longer.build(700)
    longer.save()                                          # prefix matches: accepted
    assert DataOrder.load(m, cache, rec).n_samples == 700
    idx = np.load(rec / "index_source.npy")
    idx[5] = 1 - idx[5]
    np.save(rec / "index_source.npy", idx)
    again = DataOrder(m, cache, L, rec)
    again.hold_out(8)
    again.build(700)
    with pytest.raises(RuntimeError, match="differs"):
        again.save()


def test_source_too_small_for_validation_gets_none_with_a_warning(data):
    _, _, m, cache = data
    o = DataOrder(m, cache, L)
    o.hold_out(2500)                        # 80k tokens: more than half of prose, less than half of wiki
    assert [o.names[s] for s in o.val_sources] == ["wiki"]
    assert len(o.streams[o.names.index("prose")].val_docs) == 0
    assert any("source prose: too small" in w for w in o.warnings)


def test_read_ahead_gives_the_same_batches_in_any_order_and_logs_only_what_is_taken(data, tmp_path):
    """Step t + 1 is read on a thread while t trains; a rollback asks for another step: same batches as a
    fresh loader, and the consumed log lists exactly the steps handed over."""
    _, _, m, cache = data
    o = _order(m, cache, 100)
    log = tmp_path / "consumed.jsonl"
    ahead = Loader(o, 8, 2, 1, 0, consumed_log=log)
    for step in (0, 1, 2, 1, 5, 6, 11):          # sequential, back (a rollback), forward, the last step
        fresh = list(Loader(o, 8, 2, 1, 0).train(step))
        got = list(ahead.train(step))
        assert len(got) == 4 and all(torch_equal(a, b) for a, b in zip(got, fresh))
    steps = [json.loads(x)["step"] for x in log.read_text().splitlines()]
    assert steps == [s for s in (0, 1, 2, 1, 5, 6, 11) for _ in range(4)]
    assert ahead._ahead is None                  # nothing read past the data order's end (100 samples: step 11)


def torch_equal(a, b):
    return all(bool((x == y).all()) for x, y in zip(a, b))
