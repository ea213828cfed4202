"""train.evaluate: held-out perplexity (equal to the run's own val_loss), lm-eval tasks on an export, and the
blind side-by-side sheet with its key, on real tiny runs (tests/export_fixtures.py)."""
from __future__ import annotations

import csv
import json
import math
import subprocess
import sys

import pytest

from export_fixtures import ENV, exported, tiny_runs
from train_fixtures import REPO


@pytest.fixture(scope="module")
def runs():
    return tiny_runs()


def evaluate_cli(*args):
    return subprocess.run([sys.executable, "-m", "train.evaluation.evaluate", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=600, env=ENV)


def _logged_val(run, step):
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    return [r for r in rows if r.get("kind") == "val" and r["step"] == step][-1]


@pytest.mark.trainer
def test_perplexity_of_a_run_is_its_validation_loss(runs):
    """Per source and overall, the held-out loss equals what the trainer logged as val_loss at that step (same
    documents, same sequences; fp32, summation order aside: 1e-5 relative, as across layouts)."""
    r = evaluate_cli("perplexity", runs["tp2pp2"])
    assert r.returncode == 0, r.stdout + r.stderr
    result = json.loads((runs["tp2pp2"] / "eval" / "perplexity.json").read_text())
    logged = _logged_val(runs["tp2pp2"], 4)
    assert result["kind"] == "run" and result["step"] == 4 and result["layout"] == {"tp": 2, "pp": 2, "dp": 1}
    assert set(result["per_source"]) == {"prose", "wiki"}
    for name, v in result["per_source"].items():
        assert v["loss"] == pytest.approx(logged[f"val_loss_{name}"], rel=1e-5)
        assert v["perplexity"] == pytest.approx(math.exp(v["loss"]))
        assert v["bpb"] == pytest.approx(logged[f"val_bpb_{name}"], rel=1e-5)      # summed nats / bytes, both ways
        assert v["tokens"] == 8 * 32 and v["sequences"] == 8
    assert result["overall"]["loss"] == pytest.approx(logged["val_loss"], rel=1e-5)
    assert result["logged_val_at_step"]["val_loss"] == logged["val_loss"]
    assert "overall" in r.stdout and "prose" in r.stdout


@pytest.mark.trainer
def test_perplexity_of_an_export_and_of_an_earlier_step(runs, tmp_path):
    from train.evaluation.heldout import perplexity

    exp = perplexity(exported("one"))
    run = perplexity(runs["one"])
    assert exp["kind"] == "export" and exp["step"] == run["step"] == 4
    for name in run["per_source"]:
        assert exp["per_source"][name]["loss"] == pytest.approx(run["per_source"][name]["loss"], rel=1e-6)
    early = perplexity(runs["one"], step=2)
    assert early["overall"]["loss"] == pytest.approx(_logged_val(runs["one"], 2)["val_loss"], rel=1e-5)
    assert early["overall"]["loss"] > run["overall"]["loss"]          # training lowered it


@pytest.mark.trainer
def test_perplexity_needs_held_out_documents(runs, tmp_path, capsys):
    import shutil

    from train.evaluation.evaluate import main

    run = tmp_path / "noval"
    shutil.copytree(runs["one"], run, ignore=shutil.ignore_patterns("zero_pp_*"))
    meta = json.loads((run / "data_order" / "meta.json").read_text())
    meta["val_sources"] = []
    (run / "data_order" / "meta.json").write_text(json.dumps(meta))
    assert main(["perplexity", str(run)]) == 2
    assert "held out no validation documents" in capsys.readouterr().err
    assert main(["perplexity", str(tmp_path / "nothing")]) == 2


@pytest.mark.trainer
def test_harness_on_an_export_records_what_shaped_the_scores(runs):
    out = exported("one")
    r = evaluate_cli("harness", out, "--tasks", "glassbox_cloze,glassbox_wikitext,glassbox_gsm8k", "--limit", "4",
                     "--gen-kwargs", "max_gen_toks=8", "--seed", "7")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    result = json.loads((out / "eval" / "harness.json").read_text())
    assert result["harness"] == {"package": "lm-eval", "version": "0.4.13"}
    assert result["model_dir"] == str(out.resolve()) and result["exported_from"]["step"] == 4
    assert result["tasks"] == ["glassbox_cloze", "glassbox_wikitext", "glassbox_gsm8k"]
    assert result["limit"] == 4 and result["seeds"] == {"random": 7, "numpy": 7, "torch": 7, "fewshot": 7}
    assert result["n_shot"] == {"glassbox_cloze": 0, "glassbox_wikitext": 0, "glassbox_gsm8k": 0}
    assert result["generation"]["gen_kwargs"] == "max_gen_toks=8"
    gen = result["generation"]["per_task"]["glassbox_gsm8k"]
    assert gen["max_gen_toks"] == 8 and gen["do_sample"] is False
    res = result["results"]
    assert 0 <= res["glassbox_cloze"]["acc,none"] <= 1
    assert res["glassbox_wikitext"]["byte_perplexity,none"] > 1
    assert "exact_match,strict-match" in res["glassbox_gsm8k"]
    assert all(v["effective"] == 4 for v in result["n_samples"].values())
    assert "glassbox_cloze" in r.stdout


@pytest.mark.trainer
def test_harness_without_lm_eval_says_what_to_install(runs, monkeypatch, capsys):
    from train.evaluation.evaluate import main

    monkeypatch.setitem(sys.modules, "lm_eval", None)            # import lm_eval -> ImportError
    assert main(["harness", str(exported("one"))]) == 3
    err = capsys.readouterr().err
    assert "lm-eval" in err and "pip install -e '.[eval]'" in err


@pytest.mark.trainer
def test_blind_side_by_side_and_tally(runs, tmp_path):
    from train.evaluation.compare import PROMPTS, compare, generate_answers, read_prompts, tally

    a, b = exported("one", step=2), exported("one")
    prompts = read_prompts(PROMPTS)
    files = compare(a, b, tmp_path / "cmp" / "sheet.csv", max_new_tokens=6, seed=3)
    key = json.loads(files["key"].read_text())
    with open(files["csv"], newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["id"] for r in rows] == [p["id"] for p in prompts]
    assert all(r["score_1"] == r["score_2"] == r["preferred"] == r["notes"] == "" for r in rows)
    # Blind: the sheet never names the models; half the prompts put A first.
    for f in (files["csv"], files["md"]):
        text = f.read_text()
        assert str(a) not in text and str(b) not in text and "one-2" not in text
    firsts = [key["items"][r["id"]]["answer_1"] for r in rows]
    assert firsts.count("A") == len(rows) // 2 + len(rows) % 2 and firsts.count("B") == len(rows) // 2
    assert key["models"]["A"]["step"] == 2 and key["models"]["B"]["step"] == 4
    assert key["generation"]["decoding"] == "greedy" and key["generation"]["max_new_tokens"] == 6
    again = compare(a, b, tmp_path / "again.csv", max_new_tokens=6, seed=3)
    assert again["csv"].read_text() == files["csv"].read_text()
    # The key is right: model A's own answers sit where the key says.
    direct = {x["id"]: x["text"] for x in generate_answers(a, prompts, max_new_tokens=6)}
    for r in rows:
        side = "1" if key["items"][r["id"]]["answer_1"] == "A" else "2"
        assert r[f"answer_{side}"] == direct[r["id"]]
    # People fill in the sheet; the tally unblinds it: every answer of A scored 5, of B 2, A preferred.
    for r in rows:
        a_side = "1" if key["items"][r["id"]]["answer_1"] == "A" else "2"
        r.update({f"score_{a_side}": "5", f"score_{'2' if a_side == '1' else '1'}": "2", "preferred": a_side})
    with open(files["csv"], "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    t = tally(files["csv"])
    assert t["mean_score"] == {"A": 5.0, "B": 2.0} and t["preferred"] == {"A": len(rows), "B": 0, "tie": 0}


def test_prompt_set_and_task_data_are_as_built():
    from train.evaluation.tasks import build
    from train.evaluation.compare import PROMPTS, read_prompts

    prompts = read_prompts(PROMPTS)
    assert 20 <= len(prompts) <= 50 and len({p["category"] for p in prompts}) >= 8
    items, docs = build.build()
    assert (build.HERE / "cloze.jsonl").read_text().splitlines() == [json.dumps(r, ensure_ascii=False) for r in items]
    assert (build.HERE / "wikitext.jsonl").read_text().splitlines() == [json.dumps(r, ensure_ascii=False) for r in docs]
    assert len(items) == 40 and all(len(set(i["choices"])) == 4 and 0 <= i["label"] < 4 for i in items)
    assert {i["label"] for i in items} == {0, 1, 2, 3}


def test_make_evaluate_reads_MODEL():
    """`make evaluate` evaluates MODEL (default RUN/export), through the glassbox command."""
    def dry(*args):
        p = subprocess.run(["make", "-n", "--no-print-directory", "evaluate", *args], cwd=REPO, capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return p.stdout
    out = dry("MODEL=exports/m", "BASELINE=exports/b")
    assert "glassbox evaluate perplexity exports/m" in out and "glassbox evaluate harness exports/m" in out
    assert "glassbox evaluate compare exports/m exports/b --out exports/m/eval/compare.csv" in out
    assert "glassbox evaluate perplexity runs/r/export" in dry("RUN=runs/r")
