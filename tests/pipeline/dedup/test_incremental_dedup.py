"""Incremental dedup (`dedup.against`, issue 34 items 4-5) in plain Python: a new crawl deduplicated against
the index of a corpus already built decides as a full run over both would (the old corpus ranking first),
a later crawl against all earlier ones, the old corpus untouched; and every index that cannot serve is
refused by the config check with what to do. The Spark paths are in test_incremental_dedup_spark.py."""
import dataclasses
import json
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench.incremental_dedup import agreement, crawls, write_scored
from pipeline.config import ConfigError, parse_config
from pipeline.dedup.index import INDEX_DIR, MANIFEST, key_settings, open_index
from pipeline.dedup.local import dedup_files
from pipeline.dedup.settings import DedupConfig

REPO = Path(__file__).resolve().parents[3]


def dedup(data: Path, against: list[Path] = (), cfg: DedupConfig | None = None) -> dict:
    """The dedup stage's local path on data/scored, writing data/dedup, its rejected rows and its index."""
    cfg = cfg or DedupConfig()
    settings = key_settings(cfg)
    return dedup_files(sorted(str(p) for p in (data / "scored").glob("*.parquet")), str(data / "dedup"),
                       str(data / "rejected" / "stage=dedup"), cfg.exact, cfg.near if cfg.near.enabled else None,
                       2, against=[open_index(str(p), settings) for p in against], index_to=str(data),
                       settings=settings)


def removed(data: Path) -> dict[str, tuple[str, str]]:
    rows = pq.read_table(data / "rejected" / "stage=dedup", columns=["id", "reason", "duplicate_of"]).to_pylist()
    return {r["id"]: (r["reason"], r["duplicate_of"]) for r in rows}


def kept(data: Path) -> set[str]:
    return set(pq.read_table(data / "dedup", columns=["id"]).column("id").to_pylist())


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A (about 2,000 documents) built with its index; B (about 200) against it; the full run over both."""
    root = tmp_path_factory.mktemp("incremental")
    old, new = crawls(200, 10, seed=7)
    refetched = {d["id"] for d in new if d["id"].startswith("a")}
    write_scored(old, root / "A")
    write_scored(new, root / "B")
    write_scored(old + [d for d in new if d["id"] not in refetched], root / "full")
    dedup(root / "A")
    before = listing(root / "A")
    counts = dedup(root / "B", [root / "A"])
    dedup(root / "full")
    return root, old, new, refetched, before, counts


def test_incremental_decides_the_new_crawl_as_the_full_run(planted):
    root, old, new, refetched, _, counts = planted
    inc, full = removed(root / "B"), removed(root / "full")
    got = agreement(inc, full, {d["id"] for d in new} - refetched)
    print(got, counts["rejected"])
    assert got["removed_full"] > 30 and got["precision"] == got["recall"] == 1.0
    # the same duplicate_of but where the full run names a document it removed itself (the index holds what
    # the old corpus kept, so the incremental run names the kept one)
    assert got["pairs_other"] == got["other_named_by_full_removed"] and got["pairs"] >= 0.98
    assert all(d in kept(root / "A") | kept(root / "B") for _, d in inc.values())
    reasons = {r for r, _ in inc.values()}
    assert reasons == {"repeated_record", "exact_duplicate", "near_duplicate"}  # every kind was planted
    old_ids = {d["id"] for d in old}
    assert any(r == "near_duplicate" and d in old_ids for r, d in inc.values())    # near an old document
    assert any(r == "near_duplicate" and d not in old_ids for r, d in inc.values())  # inside the new crawl
    for i in refetched:  # a record of A fetched again: the same record, pointing at itself in A, or, when A
        # dropped it for another document, a duplicate of that one
        assert inc[i] == ("repeated_record", i) if i in kept(root / "A") else inc[i][1] in kept(root / "A")
    assert any(i in kept(root / "A") for i in refetched)
    assert counts["info"]["against"] == {"indexes": [str(root / "A" / INDEX_DIR)],
                                         "old_documents": len(kept(root / "A"))}


def test_the_old_corpus_is_not_rewritten_and_the_new_one_gets_its_index(planted):
    root, _, _, _, before, counts = planted
    assert listing(root / "A") == before
    manifest = json.loads((root / "B" / INDEX_DIR / MANIFEST).read_text())
    assert manifest["documents"] == counts["records_out"] == len(kept(root / "B"))
    assert [a["where"] for a in manifest["against"]] == [str(root / "A" / INDEX_DIR)]
    index = pq.read_table(root / "B" / INDEX_DIR)
    assert set(index.column("id").to_pylist()) == kept(root / "B")


def test_a_later_crawl_against_all_earlier_ones(planted, tmp_path):
    """C holds copies of documents kept in A and in B: against [A, B] both are found, against [A] only A's."""
    root, old, new, refetched, _, _ = planted
    a_kept, b_kept = kept(root / "A"), kept(root / "B")
    by_id = {d["id"]: d for d in old + new}
    picks = [by_id[i] for i in sorted(a_kept)[:5]] + [by_id[i] for i in sorted(b_kept - refetched)[:5]]
    later = [{**d, "id": "c" + d["id"], "text": d["text"].upper() + " !"} for d in picks]  # case and punctuation
    write_scored(later, tmp_path / "C")
    dedup(tmp_path / "C", [root / "A", root / "B"])
    got = removed(tmp_path / "C")
    assert {i: d for i, (r, d) in got.items()} == {"c" + d["id"]: d["id"] for d in picks}
    assert {r for r, _ in got.values()} == {"exact_duplicate"}
    write_scored(later, tmp_path / "C2")
    dedup(tmp_path / "C2", [root / "A"])
    assert {d for _, d in removed(tmp_path / "C2").values()} == {d["id"] for d in picks[:5]}


def test_without_near_dedup_only_exact_keys_are_indexed_and_compared(planted, tmp_path):
    root, old, _, _, _, _ = planted
    cfg = DedupConfig(near=dataclasses.replace(DedupConfig().near, enabled=False))
    target = next(d for d in old if d["id"] == sorted(kept(root / "A"))[0])
    write_scored([{**target, "id": "z1", "text": target["text"] + " ."}], tmp_path / "X")
    dedup(tmp_path / "X", [root / "A"], cfg)  # A has MinHash keys too: a run without near dedup reads its exact keys
    assert removed(tmp_path / "X") == {"z1": ("exact_duplicate", target["id"])}
    write_scored([{**target, "id": "z2"}, {**old[1], "id": "z3"}], tmp_path / "Y")
    dedup(tmp_path / "Y", [], cfg)
    index = pq.read_table(tmp_path / "Y" / INDEX_DIR)
    assert index.num_rows == 2 and index.column("bands").null_count == index.column("shingles").null_count == 2


# ---- what cannot serve is refused before Spark starts ------------------------------------------------

def config(against: list, **dedup) -> dict:
    return {"sources": {"web": {"format": "jsonl", "paths": [str(REPO / "examples" / "sample" / "jsonl" / "*")]}},
            "dedup": {"against": [str(a) for a in against], **dedup}}


def refused(raw: dict, *needles: str) -> str:
    with pytest.raises(ConfigError) as e:
        parse_config(raw)
    message = str(e.value)
    assert message.startswith(("dedup.against[0]: ", "dedup.against[1]: ", "dedup.against: ")), message
    for needle in needles:
        assert needle in message, message
    return message


def test_an_index_made_with_other_settings_is_refused(planted):
    root = planted[0]
    parse_config(config([root / "A"]))  # the settings it was made with: fine
    refused(config([root / "A"], near={"num_perm": 128, "bands": 16, "rows": 8}),
            "dedup.near.num_perm 112, dedup.near.bands 14 (this config: 128, 16)", "rebuild it")
    refused(config([root / "A"], near={"ngram": 4}), "dedup.near.ngram 5 (this config: 4)")
    refused(config([root / "A"], near={"seed": 1}), "dedup.near.seed 42")


def test_an_index_of_other_code_or_without_minhash_keys_is_refused(planted, tmp_path):
    root = planted[0]
    for name, change, needle in (
            ("norm", lambda m: m["settings"].update(exact_key="0000"), "normalises text differently"),
            ("sketch", lambda m: m["settings"]["near"].update(sketch="0000"), "shingle hashes or MinHash differ"),
            ("exact-only", lambda m: m["settings"].update(near=None), "dedup.near.enabled: false")):
        copy = tmp_path / name
        shutil.copytree(root / "A" / INDEX_DIR, copy / INDEX_DIR)
        manifest = json.loads((copy / INDEX_DIR / MANIFEST).read_text())
        change(manifest)
        (copy / INDEX_DIR / MANIFEST).write_text(json.dumps(manifest))
        refused(config([copy]), needle)
    parse_config(config([tmp_path / "exact-only"], near={"enabled": False}))  # exact keys alone serve an exact run


def test_a_half_written_or_incomplete_index_is_refused(planted, tmp_path):
    root = planted[0]
    killed = tmp_path / "killed"  # a run stopped while writing its index
    shutil.copytree(root / "A" / INDEX_DIR, killed / (INDEX_DIR + ".__writing"))
    (killed / (INDEX_DIR + ".__writing") / MANIFEST).unlink()
    (killed / "stats").mkdir()
    refused(config([killed]), "half-written", "make clean-dedup")
    cut = tmp_path / "cut"
    shutil.copytree(root / "A" / INDEX_DIR, cut / INDEX_DIR)
    part = sorted((cut / INDEX_DIR).glob("*.parquet"))[0]
    part.write_bytes(part.read_bytes()[:100])
    refused(config([cut]), f"{part.name} holds 100 bytes", "incomplete")
    part.unlink()
    refused(config([cut]), f"{part.name} is missing")
    named = tmp_path / "named"  # an index folder named directly (a copy of one, uploaded anywhere)
    shutil.copytree(root / "A" / INDEX_DIR, named)
    assert parse_config(config([named])).dedup.against == [str(named)]


def test_a_folder_that_is_no_glassbox_corpus_is_refused(tmp_path, planted):
    refused(config([tmp_path / "nothing"]), "no such folder")
    (tmp_path / "empty").mkdir()
    refused(config([tmp_path / "empty"]), "not a Glassbox corpus")
    old = tmp_path / "old"  # a corpus built before indexes (or whose dedup stage did not finish)
    (old / "stats").mkdir(parents=True)
    (old / "stats" / "extract.json").write_text("{}")
    refused(config([old]), "a Glassbox corpus without a dedup index", f"DATA={old}")
    root = planted[0]
    refused(config([root / "A", root / "A"]), "listed twice")
    with pytest.raises(ConfigError, match="semantic dedup cannot run against earlier corpora"):
        parse_config(config([root / "A"], semantic={"enabled": True}))


def test_a_run_against_its_own_folder_is_refused_before_spark(planted, tmp_path, capsys):
    from jobs.common import parse_args

    root = planted[0]
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(config([root / "A"])))
    with pytest.raises(SystemExit) as e:
        parse_args("x", ["--config", str(cfg), "--data", str(root / "A")])
    assert e.value.code == 2 and "is this run's own --data folder" in capsys.readouterr().err
    assert os.path.isdir(root / "A" / INDEX_DIR)


def test_a_corpus_folder_named_with_glob_characters_is_read_as_named(planted, tmp_path):
    """`dedup.against: [/corpora/cc[2024-10]]` names a folder, not a pattern (issue 41 item 4): it was refused as
    'not a Glassbox corpus', its `[2024-10]` read as a glob character class."""
    root, _, new, _, _, _ = planted
    dated = tmp_path / "cc[2024-10]"
    shutil.copytree(root / "A", dated)
    assert parse_config(config([dated])).dedup.against == [str(dated)]
    assert parse_config(config([dated / INDEX_DIR])).dedup.against == [str(dated / INDEX_DIR)]
    write_scored(new, tmp_path / "B")
    dedup(tmp_path / "B", [dated])  # the index's files are found and read under the literal name
    assert removed(tmp_path / "B") == removed(root / "B")
    # a folder whose name only looks like a pattern is still checked whole
    part = sorted((dated / INDEX_DIR).glob("*.parquet"))[0]
    part.unlink()
    refused(config([dated]), f"{part.name} is missing")
