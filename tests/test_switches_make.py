"""Every optional switch of the pipeline once through `make`, as a user turns it on (spark-submit, the
pipeline zip): semantic dedup with the static model, then with MiniLM (the same data folder with only the model
changed: the runner reruns the dedup stage alone), the containment measure of near dedup, PII masking off, a
score threshold and a dropped perplexity bucket, decontamination that reports without removing. S3 inputs
through make are tests/pipeline/read/test_s3_inputs.py and tests/pipeline/run/test_resume.py."""
import json
import re
import resource
import time
from pathlib import Path

import pyarrow.dataset as ds
import pytest
import yaml

from tests.conftest import REPO, make

pytestmark = pytest.mark.slow
EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")


def _stats(data: Path, stage: str) -> dict:
    return json.loads((data / "stats" / f"{stage}.json").read_text())


def _ok(proc) -> str:
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in out, out[-4000:]
    return proc.stdout


def test_every_optional_switch_through_make(tmp_path):
    raw = yaml.safe_load((REPO / "examples" / "sample.yaml").read_text())
    raw["clean"]["mask_pii"] = False
    raw["score"].update(min_quality=0.002, drop_buckets=["tail"])
    raw["dedup"].update(near={"measure": "containment"},
                        semantic={"enabled": True, "model": "static"})
    raw["decontaminate"]["remove"] = False
    config = tmp_path / "switches.yaml"
    config.write_text(yaml.safe_dump(raw))
    data = tmp_path / "data"
    common = (f"CONFIG={config}", f"DATA={data}", "SPARK_MASTER=local[2]")

    first = make("clean-dedup", *common)
    _ok(first)
    clean, score, dedup = (_stats(data, s) for s in ("clean", "score", "dedup"))
    # extract, clean and score ran without the JVM; the dedup stage started Spark for its semantic step
    run = _stats(data, "run")
    assert run["executor"] == "local" and "dedup starts Spark for its semantic step" in run["executor_reason"], run
    log = first.stdout + first.stderr
    assert "and a Spark session" in run["master"] and "dedup/" in log.split("starting a Spark session")[0][-200:], \
        log[-3000:]
    kept = ds.dataset(str(data / "cleaned"), format="parquet").to_table(columns=["text", "pii_emails"]).to_pylist()
    assert not any(r["pii_emails"] for r in kept) and not any("<EMAIL>" in r["text"] for r in kept)
    assert any(EMAIL.search(r["text"]) for r in kept)  # the sample's addresses stay as they were
    assert score["rejected"].get("low_quality", 0) > 0 and score["rejected"].get("ppl_bucket_tail", 0) > 0
    assert score["records_out"] == clean["records_out"] - sum(score["rejected"].values())
    assert dedup["extra"]["path"] == "distributed" and dedup["extra"]["semantic"]["documents"] == \
        dedup["records_in"] - dedup["rejected"].get("exact_duplicate", 0) - dedup["rejected"].get("near_duplicate", 0)
    static_rate = dedup["extra"]["semantic"]["docs_per_s"]

    # MiniLM: only dedup.semantic changes, so extract, clean and score are reused and only dedup reruns. The
    # transformer reads the first 256 characters of each document (max_chars), a fifth of its default, so the
    # suite pays for loading it on the executors and embedding, not for long forward passes.
    raw["dedup"]["semantic"].update(model="minilm", max_chars=256)
    config.write_text(yaml.safe_dump(raw))
    t0, cpu0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    out = _ok(make("clean-dedup", *common))
    minilm_s, cpu1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    minilm_cpu = cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime
    for stage in ("extract", "clean", "score"):
        assert f"{stage}: finished earlier with the same inputs and config; skipped" in out, out[-3000:]
    assert "dedup: running" in out
    again = _stats(data, "dedup")
    sem = again["extra"]["semantic"]
    assert again["extra"]["path"] == "distributed" and sem["documents"] == dedup["extra"]["semantic"]["documents"]
    assert sem["removed"] == again["rejected"].get("semantic_duplicate", 0)
    assert again["records_in"] == dedup["records_in"]                       # the same scored/ input
    for reason in ("exact_duplicate", "near_duplicate"):                     # the steps before it unchanged
        assert again["rejected"].get(reason, 0) == dedup["rejected"].get(reason, 0)
    assert again["records_out"] == again["records_in"] - sum(again["rejected"].values())
    rejected = ds.dataset(str(data / "rejected" / "stage=dedup"), format="parquet").to_table(
        columns=["reason", "duplicate_of"]).to_pylist()
    assert sum(r["reason"] == "semantic_duplicate" and r["duplicate_of"] is not None for r in rejected) == sem["removed"]

    _ok(make("tokenize", *common))
    decon = _stats(data, "decontaminate")
    assert decon["records_out"] == decon["records_in"] and not decon["rejected"]  # reported, not removed
    assert _stats(data, "tokenize")["extra"]["executor"] == "local"   # a corpus this small: no JVM

    print(f"\nsemantic dedup through make on local[2] over {sem['documents']} documents: static model "
          f"{static_rate:.0f} docs/s, MiniLM {sem['docs_per_s']:.1f} docs/s; the MiniLM make run {minilm_s:.1f} s "
          f"(dedup stage {again['wall_s']:.1f} s), {minilm_cpu:.1f} s CPU")
