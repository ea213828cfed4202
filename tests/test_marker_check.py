"""The suite's own check that a test starting a trainer or a JVM carries the marker for it (tests/conftest.py),
run on a small suite of its own in a pytest subprocess: the check must follow each fixture to where it is defined,
since two modules may each define a fixture of the same name and only one of them starts a trainer."""
import shutil
import subprocess
import sys
import textwrap

from conftest import REPO

# `train.pretrain` in a command line is what the check classifies as a trainer; the process itself only exits
STARTS_TRAINER = 'subprocess.run([sys.executable, "-c", "pass", "train.pretrain"], check=True)'


def run_suite(tmp_path, files: dict[str, str]):
    for name in ("conftest.py", "once.py"):
        shutil.copy(REPO / "tests" / name, tmp_path / name)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    trainer\n    slow\n    spark\n")
    for name, body in files.items():
        (tmp_path / name).write_text("import subprocess, sys\nimport pytest\n" + textwrap.dedent(body))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           str(tmp_path)], cwd=tmp_path, capture_output=True, text=True, timeout=120)


def test_a_fixture_of_the_same_name_elsewhere_does_not_taint_a_test(tmp_path):
    proc = run_suite(tmp_path, {
        "test_a_trains.py": f"""
            @pytest.fixture(scope="module")
            def reference():
                {STARTS_TRAINER}

            @pytest.mark.trainer
            def test_trains(reference):
                pass
            """,
        "test_b_reads.py": """
            @pytest.fixture(scope="module")
            def reference():
                return 1

            def test_reads(reference):
                assert reference == 1
            """})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout


def test_an_unmarked_test_whose_fixture_starts_a_trainer_errors(tmp_path):
    proc = run_suite(tmp_path, {
        "test_c_unmarked.py": f"""
            @pytest.fixture(scope="module")
            def reference():
                {STARTS_TRAINER}

            def test_unmarked(reference):
                pass
            """})
    assert proc.returncode != 0
    assert "test_unmarked starts trainer processes without a marker" in proc.stdout
