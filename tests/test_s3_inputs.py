"""Inputs in an object store: `make clean-dedup` on s3:// paths (a real S3-protocol server on
127.0.0.1, moto's) gives the same documents as on the local files; a missing bucket or wrong
credentials are config errors before Spark starts."""
import pytest

from tests.conftest import REPO, make
from tests.s3_fixtures import s3_server  # noqa: F401  (fixture)
from tests.test_resume import corpus_result

pytestmark = pytest.mark.slow
SAMPLE = REPO / "examples" / "sample"


def _config(tmp_path, web: str, cc: str):
    text = (REPO / "examples" / "sample.yaml").read_text()
    text = text.replace('paths: ["examples/sample/*.warc.gz"]', f'paths: ["{web}"]')
    text = text.replace('paths: ["examples/sample/jsonl/*.json.gz"]', f'paths: ["{cc}"]')
    path = tmp_path / "s3.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def sample_bucket(s3_server):  # noqa: F811
    files = {f"crawl/{p.name}": p for p in SAMPLE.glob("*.warc.gz")}
    files.update({f"dumps/{p.name}": p for p in (SAMPLE / "jsonl").glob("*.json.gz")})
    s3_server.upload("sample", files)
    return s3_server


def test_clean_dedup_on_s3_paths_equals_local_run(sample_bucket, sample_local_run, tmp_path):
    reference, proc = sample_local_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    config = _config(tmp_path, "s3://sample/crawl/*.warc.gz", "s3://sample/dumps/*.json.gz")
    data = tmp_path / "data"
    run = make("clean-dedup", f"CONFIG={config}", f"DATA={data}", "SPARK_MASTER=local[2]",
               env_extra=sample_bucket.env())
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "source web: warc, 5 file(s)" in run.stdout
    assert corpus_result(data) == corpus_result(reference)
    import pyarrow.dataset as ds
    files = set(ds.dataset(str(data / "extracted"), format="parquet").to_table(columns=["input_file"])
                .column("input_file").to_pylist())
    assert files and all(f.startswith("s3://sample/") for f in files)


@pytest.mark.parametrize("case", ["missing bucket", "wrong secret", "unknown key"])
def test_store_errors_are_config_errors_before_spark(sample_bucket, tmp_path, case):
    bucket = "no-such-bucket" if case == "missing bucket" else "sample"
    config = _config(tmp_path, f"s3://{bucket}/crawl/*.warc.gz", f"s3://{bucket}/dumps/*.json.gz")
    env = sample_bucket.env(**({"AWS_SECRET_ACCESS_KEY": "wrong"} if case == "wrong secret" else
                               {"AWS_ACCESS_KEY_ID": "AKIAUNKNOWN0000000000"} if case == "unknown key" else {}))
    data = tmp_path / "data"
    run = make("clean-dedup", f"CONFIG={config}", f"DATA={data}", env_extra=env)
    assert run.returncode != 0
    err = run.stderr
    assert "config error:" in err and "sources.web.paths: s3://" in err, err[-2000:]
    if case == "missing bucket":
        assert "bucket 'no-such-bucket' does not exist" in err
    else:
        assert "refused the credentials" in err and "AWS_ACCESS_KEY_ID" in err, err[-2000:]
    assert "SparkContext" not in err and not data.exists()
