"""How a variant's corpus folder starts (ablation/corpus.py): the base corpus's finished stages offered by hard
link (records copied, since the stage runner rewrites them), a partly built folder left to resume, and the
natural mixture weights. Files only: no Spark."""
import json
import os

from ablation.corpus import natural_weights, seed_from


def finished_stage(root, stage, output):
    (root / "_state").mkdir(parents=True, exist_ok=True)
    (root / "_state" / f"{stage}.json").write_text(json.dumps({"stage": stage, "fingerprint": stage * 2}))
    (root / "stats").mkdir(exist_ok=True)
    (root / "stats" / f"{stage}.json").write_text("{}")
    (root / output).mkdir()
    (root / output / "part-00000.parquet").write_bytes(b"PAR1" + stage.encode())
    (root / "rejected" / f"stage={stage}").mkdir(parents=True)
    (root / "rejected" / f"stage={stage}" / "part-00000.parquet").write_bytes(b"PAR1")


def test_finished_stages_are_linked_in_order_and_records_copied(tmp_path):
    base, target = tmp_path / "base", tmp_path / "variant"
    finished_stage(base, "extract", "extracted")
    finished_stage(base, "clean", "cleaned")
    finished_stage(base, "dedup", "dedup")          # score is missing: dedup is not offered either
    assert seed_from(str(base), str(target)) == ["extract", "clean"]
    same = lambda rel: os.path.samefile(base / rel, target / rel)
    assert same("extracted/part-00000.parquet") and same("rejected/stage=clean/part-00000.parquet")
    assert not same("_state/clean.json") and (target / "_state/clean.json").read_text() == \
        (base / "_state/clean.json").read_text()
    assert not (target / "dedup").exists() and not (target / "_state/dedup.json").exists()
    # a folder with stage records of its own (a killed build) is not seeded again: the runner resumes it
    (target / "_state/clean.json").write_text(json.dumps({"stage": "clean", "fingerprint": "variant"}))
    assert seed_from(str(base), str(target)) == []
    assert json.loads((target / "_state/clean.json").read_text())["fingerprint"] == "variant"


def test_natural_weights_are_the_tokens_kept_and_empty_sources_drop_out():
    counts = {"sources": {"web": {"tokens": 300}, "spam": {"tokens": 0}, "books": {"tokens": 700}}}
    assert natural_weights(counts) == {"books": 700, "web": 300}
