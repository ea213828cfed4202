"""Every optional switch of the pipeline once through `make`, as a user turns it on (spark-submit, the
pipeline zip): semantic dedup with the static model, the containment measure of near dedup, PII masking off,
a score threshold and a dropped perplexity bucket, decontamination that reports without removing. S3
inputs through make are tests/pipeline/read/test_s3_inputs.py and tests/pipeline/run/test_resume.py; MiniLM runs the same Spark step in
tests/pipeline/dedup/test_semantic_dedup.py (a second make run for it cost 35 s of the suite's time; once measured, in the
README)."""
import json
import re
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

    _ok(make("clean-dedup", *common))
    clean, score, dedup = (_stats(data, s) for s in ("clean", "score", "dedup"))
    kept = ds.dataset(str(data / "cleaned"), format="parquet").to_table(columns=["text", "pii_emails"]).to_pylist()
    assert not any(r["pii_emails"] for r in kept) and not any("<EMAIL>" in r["text"] for r in kept)
    assert any(EMAIL.search(r["text"]) for r in kept)  # the sample's addresses stay as they were
    assert score["rejected"].get("low_quality", 0) > 0 and score["rejected"].get("ppl_bucket_tail", 0) > 0
    assert score["records_out"] == clean["records_out"] - sum(score["rejected"].values())
    assert dedup["extra"]["path"] == "distributed" and dedup["extra"]["semantic"]["documents"] == \
        dedup["records_in"] - dedup["rejected"].get("exact_duplicate", 0) - dedup["rejected"].get("near_duplicate", 0)
    static_rate = dedup["extra"]["semantic"]["docs_per_s"]

    _ok(make("tokenize", *common))
    decon = _stats(data, "decontaminate")
    assert decon["records_out"] == decon["records_in"] and not decon["rejected"]  # reported, not removed

    print(f"\nsemantic dedup through make on local[2]: static model, {static_rate:.0f} docs/s over "
          f"{dedup['extra']['semantic']['documents']} documents")
