"""lm-eval scores of proxies (ablation/harness.py): which metrics are losses, and a proxy's scores read from its
export's harness.json, which is reused while the tasks and limit match. No process is started here: the slow
path (export, then glassbox evaluate harness) is the one `glassbox ablate` runs."""
import json

from ablation.harness import lower_is_better, proxy_scores


def test_perplexities_and_losses_are_lower_is_better():
    assert lower_is_better("word_perplexity,none") and lower_is_better("bits_per_byte")
    assert not lower_is_better("acc,none") and not lower_is_better("acc_norm") and not lower_is_better("exact_match")


def test_scores_come_from_the_export_of_the_finished_step(tmp_path):
    run = tmp_path / "base-s1"
    (run / "export-step40" / "eval").mkdir(parents=True)
    (run / "export-step40" / "eval" / "harness.json").write_text(json.dumps({
        "tasks": ["glassbox_cloze"], "limit": 40,
        "results": {"glassbox_cloze": {"name": "glassbox_cloze", "alias": "glassbox_cloze", "sample_len": 40,
                                       "acc,none": 0.125, "acc_stderr,none": 0.05, "acc_norm,none": 0.15}}}))
    got = proxy_scores(str(run), 40, ["glassbox_cloze"], 40, str(tmp_path / "log"))
    assert got == {"glassbox_cloze/acc": 0.125, "glassbox_cloze/acc_norm": 0.15}
    assert not (tmp_path / "log").exists()                    # nothing ran
