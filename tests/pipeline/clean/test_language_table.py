"""The built-in calibration table is data (pipeline/clean/language_table.json), written by
`python -m pipeline.clean.calibrate` and read at run time, from a checkout or from the executors' zip.
Plain Python; the row check recomputes a few rows from their recorded inputs (a few seconds)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, shared
from pipeline.clean import calibrate
from pipeline.clean.languages import Profiles, builtin_table
from pipeline.clean.settings import DEFAULT_RULES, CleanConfig

TABLE_FILE = REPO / "pipeline" / "clean" / "language_table.json"


def test_the_table_is_a_data_file_in_its_canonical_form():
    text = TABLE_FILE.read_text(encoding="utf-8")
    table = json.loads(text)
    assert calibrate.table_text(table) == text              # as calibrate writes it: one language a line
    assert text.count("\n") == len(table["languages"]) + len(table["confusable"]) + len(table["method"]) + 8
    assert not list(TABLE_FILE.parent.glob("language_table*.py"))  # no generated code beside it
    assert builtin_table() == table


def test_every_row_is_well_formed_and_loads_into_a_profile():
    table = builtin_table()
    reasons = {r["reason"]: r for r in DEFAULT_RULES}
    profiles = Profiles(CleanConfig(languages=None))
    for lang, row in table["languages"].items():
        assert row["stopwords"] and all(isinstance(w, str) and w for w in row["stopwords"]), lang
        for reason, value in row.get("rules", {}).items():
            assert reason in reasons and isinstance(value, (int, float)), (lang, reason)
        prof = profiles.get(lang)
        assert prof.calibrated and prof.stopwords == frozenset(row["stopwords"])
        assert 0 <= prof.min_lang_score <= CleanConfig().min_lang_score
        assert {r: v for r, (_, v) in prof.changed.items()} == \
            {r: v for r, v in row.get("rules", {}).items() if v != reasons[r]["value"]}
    assert all(len(g) >= 2 for g in table["confusable"])


@pytest.fixture(scope="module")
def identifier():
    from pipeline.clean.langid import default_model_path, get_identifier
    if not default_model_path().is_file():
        pytest.skip("lid.176.ftz missing: run `make setup`")
    return get_identifier()


def test_sentence_rows_are_what_calibrate_writes_from_their_recorded_inputs(identifier):
    """Rows calibrated on the lingua sentences, recomputed from the inputs the table's method names."""
    table = builtin_table()
    method = table["method"]
    ref = shared("langid", "lingua", method["reference"])
    docs = calibrate.sentence_documents(ref, method["lines"], method["docs_per_language"], ["en", "de", "th"])
    density_en = calibrate.words_per_sentence(docs["en"], "en")
    source = calibrate.sentence_source(method["reference"], method["lines"], method["docs_per_language"])
    for lang in ("de", "th"):
        row = calibrate.language_row(lang, docs[lang], density_en, method["pass_share"], identifier,
                                     table["confusable"], source)
        assert row == table["languages"][lang], lang


def test_the_chinese_row_is_what_calibrate_writes_from_the_prose(identifier):
    """The zh row, recomputed from the calibration half of the reference prose (and the English row's units)."""
    table = builtin_table()
    method = table["method"]["prose"]
    prose = shared(method["reference"])
    kinds = calibrate.prose_kinds(prose, "zh", CleanConfig(languages=None, calibration="none"), method["half"],
                                  tuple(method["not_reference"].get("zh", ())))
    row = calibrate.prose_row("zh", kinds, table["languages"]["en"], method["pass_share_per_kind"], identifier,
                              table["confusable"])
    assert row == table["languages"]["zh"]
    assert row["source"].startswith("prose/zh") and "literature_classical" not in row["source"]


def test_the_table_is_read_from_the_executors_zip(tmp_path):
    """Under spark-submit, pipeline/ is imported from build/pipeline.zip: the table is package data."""
    archive = tmp_path / "pipeline.zip"
    subprocess.run([sys.executable, str(REPO / "scripts" / "executor_zip.py"), str(archive), "pipeline", "glassbox"],
                   cwd=REPO, check=True)
    code = ("import pipeline.clean.languages as m; assert '.zip' in m.__file__, m.__file__; "
            "print(len(m.load_table('builtin')['languages']))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": str(archive), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout) == len(builtin_table()["languages"])
