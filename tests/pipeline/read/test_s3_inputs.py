"""Inputs in an object store (moto's S3 server on 127.0.0.1, authentication on): a missing bucket
or wrong credentials are config errors before Spark starts. The whole command on s3:// paths,
killed and resumed, is tests/pipeline/run/test_resume.py."""
import pytest

from tests.conftest import make
from tests.s3_fixtures import s3_server, sample_bucket, sample_config  # noqa: F401  (fixtures)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("case", ["missing bucket", "wrong secret", "unknown key"])
def test_store_errors_are_config_errors_before_spark(sample_bucket, tmp_path, case):  # noqa: F811
    bucket = "no-such-bucket" if case == "missing bucket" else "sample"
    config = sample_config(tmp_path / "s3.yaml", f"s3://{bucket}/crawl/*.warc.gz", f"s3://{bucket}/dumps/*.json.gz")
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
