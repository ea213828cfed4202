"""Reading any trainer's curves (train/record/formats.py, tfevents.py): one curve written in every format gives
the same rows and the same diagnosis; a real Hugging Face Trainer run (trainer_state.json and its TensorBoard
events) and a real run of this trainer with log.tensorboard are read back equal to what they logged; the
report compares runs across formats."""
import csv
import json
import math
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from record_fixtures import write_run
from test_diagnose import inject_memorization, inject_overfitting
from train.record.diagnose import assess_run, diagnose
from train.record.formats import TB_DEFAULTS, parse_tags, read_any
from train.record.formats import read_run
from train.record.load import RecordError
from train.record.report import build_report
from train.record.tfevents import masked_crc, read_scalars
from train_fixtures import REPO, TEXT, launch, make_dataset

N = 300


def _tb_write(log_dir: Path, rows: list[dict], new_style: bool = False) -> None:
    """rows through this trainer's TensorBoard sink and the real SummaryWriter (torch + tensorboard)."""
    from torch.utils.tensorboard import SummaryWriter

    from train.monitor.telemetry import TensorBoardSink

    if not new_style:
        sink = TensorBoardSink(log_dir)
        for r in rows:
            sink.write(r)
        sink.close()
        return
    w = SummaryWriter(log_dir=str(log_dir))
    for r in rows:
        for k, v in r.items():
            if k not in ("kind", "step", "time") and isinstance(v, (int, float)) and not isinstance(v, bool):
                w.add_scalar(f"{r['kind']}/{k}", float(v), r["step"], new_style=True)
    w.close()


def _hf_state(rows: list[dict]) -> dict:
    """trainer_state.json as the Hugging Face Trainer writes it (losses rounded to 4 decimals as it does)."""
    hist, epoch = [], lambda s: round(s / N, 4)        # noqa: E731
    for r in rows:
        if r["kind"] == "train":
            hist.append({"epoch": epoch(r["step"]), "grad_norm": r["grad_norm"], "learning_rate": r["lr"],
                         "loss": round(r["loss"], 4), "num_input_tokens_seen": r["tokens"], "step": r["step"],
                         "train_runtime": 0.2 * r["step"], "train_tokens_per_second": 20480.0})   # as 5.x logs
        else:
            hist.append({"epoch": epoch(r["step"]), "eval_loss": r["val_loss"], "eval_runtime": 0.41,
                         "eval_samples_per_second": 156.1, "eval_steps_per_second": 4.9,
                         "num_input_tokens_seen": r["tokens"], "step": r["step"]})
    hist.append({"epoch": 1.0, "num_input_tokens_seen": N * 4096, "step": N, "total_flos": 1.2e12,
                 "train_loss": 3.1, "train_runtime": 61.2, "train_samples_per_second": 80.0,
                 "train_steps_per_second": 4.9})
    return {"best_metric": None, "best_model_checkpoint": None, "epoch": 1.0, "eval_steps": N // 40,
            "global_step": N, "is_hyper_param_search": False, "is_local_process_zero": True,
            "is_world_process_zero": True, "log_history": hist, "logging_steps": 1, "max_steps": N,
            "num_input_tokens_seen": N * 4096, "num_train_epochs": 1, "save_steps": 500, "total_flos": 1.2e12,
            "train_batch_size": 16, "trial_name": None, "trial_params": None}


def _csv(path: Path, rows: list[dict]) -> None:
    val = {r["step"]: r["val_loss"] for r in rows if r["kind"] == "val"}
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["step", "tokens", "loss", "val_loss", "lr", "grad_norm"])
        for r in rows:
            if r["kind"] == "train":
                w.writerow([r["step"], r["tokens"], repr(r["loss"]), repr(val[r["step"]]) if r["step"] in val else "",
                            repr(r["lr"]), repr(r["grad_norm"])])


@pytest.fixture(scope="module", params=["overfitting", "memorization"])
def every_format(request, tmp_path_factory):
    rows, t0 = (inject_overfitting if request.param == "overfitting" else inject_memorization)(N, 0)
    root = tmp_path_factory.mktemp(request.param)
    paths = {"glassbox": write_run(root / "glassbox", rows, vocab_size=None)}
    bare = root / "bare.jsonl"
    bare.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "kind"}) + "\n" for r in rows))
    paths["jsonl"] = bare
    (root / "hf").mkdir()
    (root / "hf" / "trainer_state.json").write_text(json.dumps(_hf_state(rows), indent=2))
    paths["hf"] = root / "hf"
    _tb_write(root / "tb", rows)
    paths["tensorboard"] = root / "tb"
    _tb_write(root / "tb-tensor", rows, new_style=True)
    paths["tensorboard (tensor protos)"] = root / "tb-tensor"
    _csv(root / "curve.csv", rows)
    paths["csv"] = root / "curve.csv"
    return request.param, rows, paths


TOLERANCE = {"glassbox": 0.0, "jsonl": 0.0, "csv": 0.0, "hf": 5e-5, "tensorboard": 1e-6,
             "tensorboard (tensor protos)": 1e-6}


def test_the_same_curve_in_every_format_reads_and_diagnoses_alike(every_format):
    kind, rows, paths = every_format
    want = [(f.kind, f.step, f.end_step) for f in diagnose(rows)]
    assert kind in [k for k, _, _ in want]
    train = {r["step"]: r for r in rows if r["kind"] == "train"}
    val = {r["step"]: r["val_loss"] for r in rows if r["kind"] == "val"}
    for name, path in paths.items():
        rec = read_run(path)
        assert rec.format == name.split(" ")[0], name
        got_train = {r["step"]: r for r in rec.train_rows}
        got_val = {r["step"]: r["val_loss"] for r in rec.val_rows}
        assert sorted(got_train) == sorted(train) and sorted(got_val) == sorted(val), name
        tol = TOLERANCE[name]
        for s, r in train.items():
            assert got_train[s]["loss"] == pytest.approx(r["loss"], rel=tol, abs=tol), (name, s)
            assert got_train[s]["lr"] == pytest.approx(r["lr"], rel=1e-6), (name, s)
            assert got_train[s]["tokens"] == r["tokens"], (name, s)
        for s, v in val.items():
            assert got_val[s] == pytest.approx(v, rel=tol, abs=tol), (name, s)
        got = [(f.kind, f.step, f.end_step) for f in assess_run(rec).findings]
        assert got == want, (name, got, want)


def test_diagnose_cli_names_the_format(every_format):
    kind, _, paths = every_format
    for name, expect in (("hf", "Hugging Face trainer_state.json"), ("tensorboard", "TensorBoard event files"),
                         ("csv", "CSV"), ("jsonl", "JSON lines")):
        p = subprocess.run([sys.executable, "-m", "train.record.diagnose", str(paths[name])], cwd=REPO,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        assert expect in p.stdout.splitlines()[0] and kind in p.stdout, p.stdout


def test_tensorboard_tags_flag_and_damaged_files(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(log_dir=str(tmp_path / "custom"))
    for s in range(1, 31):
        w.add_scalar("my/objective", 5.0 - 0.05 * s, s)
        if s % 5 == 0:
            w.add_scalar("holdout/objective", 5.1 - 0.04 * s, s)
    w.close()
    with pytest.raises(RecordError, match="my/objective"):         # the error lists the tags there are
        read_run(tmp_path / "custom")
    rec = read_run(tmp_path / "custom", tags=parse_tags("loss=my/objective,val_loss=holdout/objective"))
    assert len(rec.train_rows) == 30 and len(rec.val_rows) == 6
    assert rec.val_rows[-1]["val_loss"] == pytest.approx(5.1 - 1.2, rel=1e-6)
    with pytest.raises(RecordError, match="unknown field"):
        parse_tags("los=my/objective")
    with pytest.raises(RecordError, match="no such scalar tag"):
        read_run(tmp_path / "custom", tags={"loss": "nope"})
    # A torn last record (a writer killed mid-write) is dropped; a flipped byte fails its CRC and is skipped.
    (f,) = (tmp_path / "custom").glob("events.out.tfevents.*")
    data = f.read_bytes()
    scalars, bad = read_scalars(f)
    assert bad == 0 and len(scalars) == 36
    torn = tmp_path / "torn" / f.name
    torn.parent.mkdir()
    torn.write_bytes(data[:-7])
    assert len(read_scalars(torn)[0]) == 35
    flipped, at = bytearray(data), 0
    for _ in range(20):                                   # to the payload of the 21st record
        at += 12 + struct.unpack("<Q", data[at:at + 8])[0] + 4
    flipped[at + 12 + 3] ^= 0xFF
    bad_file = tmp_path / "flipped" / f.name
    bad_file.parent.mkdir()
    bad_file.write_bytes(bytes(flipped))
    got, bad = read_scalars(bad_file)
    assert bad == 1 and len(got) == 35
    assert masked_crc(b"") == 0xA282EAD8 and all(isinstance(t, str) for ts in TB_DEFAULTS.values() for t in ts)


def test_keras_layout_same_tag_in_two_folders(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    for sub, off in (("train", 0.0), ("validation", 0.3)):
        w = SummaryWriter(log_dir=str(tmp_path / "logs" / sub))
        for epoch in range(1, 11):
            w.add_scalar("epoch_loss", 3.0 / math.sqrt(epoch) + off * epoch / 10, epoch)
        w.close()
    rec = read_run(tmp_path / "logs")
    assert rec.format == "tensorboard" and len(rec.train_rows) == 10 and len(rec.val_rows) == 10
    assert rec.val_rows[-1]["val_loss"] == pytest.approx(3.0 / math.sqrt(10) + 0.3, rel=1e-6)
    assert "loss <- train/epoch_loss" in rec.notes[0] and "val_loss <- validation/epoch_loss" in rec.notes[0]


def test_csv_and_hf_edge_cases(tmp_path):
    # CSV: validation on rows of its own, an alias header, a ragged row, an empty file.
    p = tmp_path / "run.csv"
    p.write_text("iter,train_loss,eval_loss,learning_rate\n1,5.0,,0.001\n2,4.5,,0.001\n2,,4.7,\n3,4.1,,0.001,9\n")
    rec = read_run(p)
    assert [(r["kind"], r["step"]) for r in rec.rows] == [("train", 1), ("train", 2), ("val", 2)]
    assert rec.skipped_lines == 1 and rec.name == "run" and rec.train_rows[0]["lr"] == 0.001
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(RecordError, match="no header"):
        read_run(tmp_path / "empty.csv")
    (tmp_path / "nostep.csv").write_text("epoch,loss\n1,2.0\n")
    with pytest.raises(RecordError, match="no step column"):
        read_run(tmp_path / "nostep.csv")
    # HF: two evaluation datasets become per-source validation losses; the newest checkpoint is read when
    # the output folder has no trainer_state.json of its own.
    out = tmp_path / "hf-out"
    for step in (10, 20):
        ck = out / f"checkpoint-{step}"
        ck.mkdir(parents=True)
        hist = [{"step": s, "loss": 5.0 - 0.1 * s, "learning_rate": 1e-3, "grad_norm": 1.0} for s in range(1, step + 1)]
        hist += [{"step": step, "eval_wiki_loss": 4.0, "eval_code_loss": 2.0, "eval_wiki_runtime": 0.1}]
        (ck / "trainer_state.json").write_text(json.dumps({"log_history": hist, "global_step": step}))
    (out / "config.json").write_text(json.dumps({"model_type": "llama", "vocab_size": 50257}))
    rec = read_run(out)
    assert rec.format == "hf" and len(rec.train_rows) == 20 and rec.vocab_size == 50257
    assert rec.val_rows == [{"step": 20, "val_loss_wiki": 4.0, "val_loss_code": 2.0, "val_loss": 3.0, "kind": "val"}]
    assert "checkpoint-20" in rec.notes[0]
    with pytest.raises(RecordError, match="no such run directory"):
        read_any(tmp_path / "missing")
    (tmp_path / "empty-dir").mkdir()
    with pytest.raises(RecordError, match="trainer_state.json or TensorBoard"):
        read_any(tmp_path / "empty-dir")


# ---------------------------------------------------------------------------------------- real trainers

@pytest.fixture(scope="module")
def hf_run(tmp_path_factory):
    """A tiny LlamaForCausalLM trained 40 steps by the Hugging Face Trainer on WikiText-2 bytes, evaluated every
    5 steps, logging to trainer_state.json and to TensorBoard (its own callback)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments

    out = tmp_path_factory.mktemp("hf") / "out"
    seq = 32
    ids = torch.tensor(list(TEXT.read_bytes()[:120_000]), dtype=torch.long)
    blocks = ids[: len(ids) // seq * seq].view(-1, seq)
    train = [{"input_ids": b, "labels": b} for b in blocks[:-64]]
    held = [{"input_ids": b, "labels": b} for b in blocks[-64:]]
    cfg = LlamaConfig(vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                      num_key_value_heads=2, max_position_embeddings=seq)
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg)
    args = TrainingArguments(output_dir=str(out), max_steps=40, per_device_train_batch_size=8,
                             per_device_eval_batch_size=64, learning_rate=3e-3, lr_scheduler_type="cosine",
                             warmup_steps=4, logging_steps=1, eval_strategy="steps", eval_steps=5, save_strategy="no",
                             report_to=["tensorboard"], include_num_input_tokens_seen=True, use_cpu=True, seed=0,
                             remove_unused_columns=False, dataloader_num_workers=0, disable_tqdm=True)
    trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=held)
    trainer.train()
    trainer.save_state()
    model.config.save_pretrained(out)
    return out


def test_a_real_hugging_face_run_reads_from_both_of_its_records(hf_run):
    state = json.loads((hf_run / "trainer_state.json").read_text())
    logged = [e for e in state["log_history"] if "loss" in e]
    evals = [e for e in state["log_history"] if "eval_loss" in e]
    rec = read_run(hf_run)
    assert rec.format == "hf" and rec.vocab_size == 256
    assert [r["loss"] for r in rec.train_rows] == [e["loss"] for e in logged]
    assert [r["val_loss"] for r in rec.val_rows] == [e["eval_loss"] for e in evals] and len(evals) == 8
    assert [r["tokens"] for r in rec.train_rows] == [e["num_input_tokens_seen"] for e in logged]
    assert rec.train_rows[-1]["tokens"] == 40 * 8 * 32
    # The TensorBoard events of the same run (the Trainer's callback, under runs/<date>_<host>/).
    (tb,) = {p.parent for p in hf_run.rglob("events.out.tfevents.*")}
    tbrec = read_run(tb)
    assert tbrec.format == "tensorboard" and "loss <- train/loss" in tbrec.notes[0]
    assert [r["step"] for r in tbrec.train_rows] == [r["step"] for r in rec.train_rows]
    np.testing.assert_allclose([r["loss"] for r in tbrec.train_rows], [r["loss"] for r in rec.train_rows], rtol=1e-6)
    np.testing.assert_allclose([r["val_loss"] for r in tbrec.val_rows], [r["val_loss"] for r in rec.val_rows],
                               rtol=1e-6)
    np.testing.assert_allclose([r["lr"] for r in tbrec.train_rows], [r["lr"] for r in rec.train_rows], rtol=1e-6)
    assert [r["tokens"] for r in tbrec.train_rows] == [r["tokens"] for r in rec.train_rows]
    # Diagnosed alike; the output folder (no metrics.jsonl) is found as what it is.
    kinds = lambda r: [(f.kind, f.step) for f in assess_run(r).findings]         # noqa: E731
    assert kinds(rec) == kinds(tbrec)
    p = subprocess.run([sys.executable, "-m", "train.record.diagnose", str(hf_run), "--json"], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "findings" in json.loads(p.stdout), p.stderr


@pytest.fixture(scope="module")
def glassbox_tb_run(tmp_path_factory):
    """A real run of this trainer with log.tensorboard on."""
    root = tmp_path_factory.mktemp("gb-tb")
    manifest = make_dataset(root / "data", total_tokens=40_000, max_paragraphs=600)
    cfg = root / "tb.yaml"
    cfg.write_text("model: {n_layers: 2, d_model: 64, n_heads: 4, ffn_hidden: 128, vocab_multiple: 64}\n"
                   "data: {seq_len: 32}\ntrain: {steps: 16, micro_batch_size: 4, global_batch_size: 8, seed: 3}\n"
                   "optimizer: {lr: 3.0e-3, min_lr: 3.0e-4}\nschedule: {kind: cosine, warmup_steps: 2}\n"
                   "log: {every: 4, tensorboard: true, sample_every: 0}\neval: {every: 4, samples_per_source: 4}\n"
                   "checkpoint: {every: 0}\n")
    run = root / "run"
    launch(manifest, cfg, run)
    return run


@pytest.mark.trainer
def test_this_trainers_tensorboard_equals_its_metrics(glassbox_tb_run):
    run = glassbox_tb_run
    rec = read_run(run)
    tb = read_run(run / "tensorboard")
    assert rec.format == "glassbox" and tb.format == "tensorboard"
    assert [r["step"] for r in tb.train_rows] == [r["step"] for r in rec.train_rows] == list(range(1, 17))
    for a, b in zip(tb.train_rows, rec.train_rows):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-6) and a["tokens"] == b["tokens"]
        assert a["lr"] == pytest.approx(b["lr"], rel=1e-6)
    for a, b in zip(tb.val_rows, rec.val_rows, strict=True):
        for k in ("val_loss", "val_loss_wiki", "val_loss_prose"):
            assert a[k] == pytest.approx(b[k], rel=1e-6), k
    # Telemetry fields come through as training fields (share_*, doc_*), as the report draws them.
    assert any(k.startswith("share_") for r in tb.train_rows for k in r)


@pytest.mark.trainer
def test_report_compares_runs_across_formats(glassbox_tb_run, hf_run, every_format, tmp_path):
    _, rows, paths = every_format
    page = build_report(glassbox_tb_run, compare=hf_run, out=tmp_path / "vs-hf.html")
    text = page.read_text()
    assert ">Comparison (aligned by tokens)</h2>" in text and "Hugging Face trainer_state.json" in text
    assert 'id="compare-img"' in text
    # A CSV without token counts: aligned by steps, and the page says why.
    p = tmp_path / "published.csv"
    p.write_text("step,loss,val_loss\n" + "".join(f"{r['step']},{r['loss']},\n" for r in rows if r["kind"] == "train"))
    text = build_report(glassbox_tb_run, compare=p, out=tmp_path / "vs-csv.html").read_text()
    assert "Comparison (aligned by steps: published records no token counts)" in text
    # The command line, as `make report RUN=... COMPARE=...` runs it, with a TensorBoard folder to compare.
    r = subprocess.run([sys.executable, "-m", "train.record.report", str(glassbox_tb_run), "--compare",
                        str(paths["tensorboard"]), "--out", str(tmp_path / "vs-tb.html")], cwd=REPO,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "TensorBoard event files" in (tmp_path / "vs-tb.html").read_text()
