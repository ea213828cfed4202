"""`make tokenize`'s first process (jobs/tokens.py) on a DATA folder whose dedup/ is missing or empty: the error
names the folder and the command to run, before any engine starts (a Spark session reading an empty folder would
only say it cannot infer a schema)."""
from jobs import tokens


def test_missing_or_empty_dedup_is_named_before_any_engine(tmp_path, capsys):
    args = ["--config", "examples/sample.yaml", "--data", str(tmp_path), "--or-submit", "false"]
    assert tokens.main(args) == 2
    assert f"{tmp_path / 'dedup'} not found; run `make clean-dedup DATA={tmp_path}` first" in capsys.readouterr().err
    (tmp_path / "dedup").mkdir()
    (tmp_path / "dedup" / "_SUCCESS").write_text("")
    assert tokens.main(args) == 2
    assert f"{tmp_path / 'dedup'} holds no Parquet files; run `make clean-dedup" in capsys.readouterr().err
    assert not (tmp_path / "tokenized").exists() and not (tmp_path / "spark-events").exists()
