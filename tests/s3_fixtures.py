"""A local S3-compatible server for the object-store tests: moto's standalone server on 127.0.0.1,
with authentication on, a user whose keys the tests use, and helpers to upload files."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

# The first requests (making the user and its key) run unauthenticated; every one after that
# must be signed with a key the server knows, so wrong credentials fail as on a real store.
SETUP_REQUESTS = 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    def __init__(self, endpoint: str, key: str, secret: str):
        self.endpoint, self.key, self.secret = endpoint, key, secret

    def env(self, **override) -> dict:
        """The standard variables boto3 and s3fs read (no proxies: the server is local)."""
        env = {"AWS_ACCESS_KEY_ID": self.key, "AWS_SECRET_ACCESS_KEY": self.secret,
               "AWS_ENDPOINT_URL": self.endpoint, "AWS_DEFAULT_REGION": "us-east-1",
               "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
        env.update(override)
        return env

    def client(self):
        import boto3
        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=self.key,
                            aws_secret_access_key=self.secret, region_name="us-east-1")

    def upload(self, bucket: str, files: dict[str, Path]) -> None:
        c = self.client()
        c.create_bucket(Bucket=bucket)
        for key, path in files.items():
            c.upload_file(str(path), bucket, key)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    import boto3

    port = _free_port()
    moto = Path(sys.executable).parent / "moto_server"
    log = tmp_path_factory.mktemp("moto") / "server.log"
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": str(SETUP_REQUESTS)}
    with open(log, "w") as fh:
        proc = subprocess.Popen([str(moto), "-H", "127.0.0.1", "-p", str(port)], stdout=fh,
                                stderr=subprocess.STDOUT, env=env)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"moto_server did not start: {log.read_text()[-2000:]}")
                time.sleep(0.2)
        iam = boto3.client("iam", endpoint_url=endpoint, aws_access_key_id="setup",
                           aws_secret_access_key="setup", region_name="us-east-1")
        iam.create_user(UserName="glassbox")
        key = iam.create_access_key(UserName="glassbox")["AccessKey"]
        iam.put_user_policy(UserName="glassbox", PolicyName="s3", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
        yield S3Server(endpoint, key["AccessKeyId"], key["SecretAccessKey"])
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def sample_bucket(s3_server):
    """The bundled sample in bucket `sample`: crawl/*.warc.gz, dumps/*.json.gz and books/*.jsonl.gz."""
    sample = Path(__file__).resolve().parents[1] / "examples" / "sample"
    files = {f"crawl/{p.name}": p for p in sample.glob("*.warc.gz")}
    files.update({f"dumps/{p.name}": p for p in (sample / "jsonl").glob("*.json.gz")})
    files.update({f"books/{p.name}": p for p in (sample / "books").glob("*.jsonl.gz")})
    files.update({f"zh/{p.name}": p for p in (sample / "zh").glob("*.jsonl.gz")})
    s3_server.upload("sample", files)
    return s3_server


def sample_config(path: Path, web: str, cc: str, extra: str = "", books: str | None = None) -> Path:
    """examples/sample.yaml with its sources at other paths (books and zh: the web path's folder's
    `../books/*.jsonl.gz` and `../zh/*.jsonl.gz` unless given; `extra` inserted in `extract:`)."""
    text = (Path(__file__).resolve().parents[1] / "examples" / "sample.yaml").read_text()
    text = text.replace('paths: ["examples/sample/*.warc.gz"]', f'paths: ["{web}"]')
    text = text.replace('paths: ["examples/sample/jsonl/*.json.gz"]', f'paths: ["{cc}"]')
    books = books or web.rsplit("/", 2)[0] + "/books/*.jsonl.gz"
    text = text.replace('paths: ["examples/sample/books/*.jsonl.gz"]', f'paths: ["{books}"]')
    text = text.replace('paths: ["examples/sample/zh/*.jsonl.gz"]', f'paths: ["{web.rsplit("/", 2)[0]}/zh/*.jsonl.gz"]')
    assert text.count("examples/sample") == 0, "a source of examples/sample.yaml was not moved"
    if extra:
        text = text.replace("extract:\n", f"extract:\n{extra}", 1)
    path.write_text(text)
    return path
