"""``glassbox diagnose RUN``: the findings as a table (or JSON), with the reading and what was not judged."""
from __future__ import annotations

import argparse
import json
import math
import sys

from glassbox.schema import ConfigError, validate
from train.record.diagnose.assess import assess_run
from train.record.diagnose.finding import Finding
from train.record.diagnose.registry import DiagnoseConfig
from train.record.formats import read_run
from train.record.load import RecordError

DESCRIPTION = "Diagnosis of a run's loss curves: findings with the numbers behind them and what to do."


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}" if math.isfinite(v) else str(v)
    return str(v)


def format_not_judged(not_judged: list[dict]) -> str:
    return "\n".join(f"not judged: {n['check']}: {n['reason']}" for n in not_judged)


def format_table(findings: list[Finding], not_judged: list[dict] | None = None) -> str:
    tail = ("\n" + format_not_judged(not_judged)) if not_judged else ""
    if not findings:
        return ("no findings among the checks that could be judged" if not_judged else "no findings") + tail
    head = ("severity", "kind", "steps", "what")
    body = [(f.severity, f.kind, f"{f.step}-{f.end_step}" if f.end_step != f.step else str(f.step), f.message)
            for f in findings]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(3)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head[:3], widths)) + "  " + head[3]]
    for f, r in zip(findings, body):
        lines.append("  ".join(x.ljust(w) for x, w in zip(r[:3], widths)) + "  " + r[3])
        pad = " " * (sum(widths) + 6)
        lines.append(pad + "evidence: " + ", ".join(f"{k}={_fmt(v)}" for k, v in f.evidence.items()))
        lines.append(pad + "advice: " + f.advice)
    return "\n".join(lines) + tail


def add_reader_args(ap: argparse.ArgumentParser) -> None:
    """--format and --tags, shared with glassbox report."""
    from train.record.formats import FORMATS

    ap.add_argument("--format", default="auto", choices=FORMATS,
                    help="how to read RUN (default: decided from the path; train/record/formats.py)")
    ap.add_argument("--tags", default=None, metavar="FIELD=TAG,...",
                    help="TensorBoard: which scalar tag is which field, e.g. loss=train/loss,val_loss=eval/loss "
                         "(fields: loss, val_loss, lr, grad_norm, tokens, val_loss_<source>)")


def parse_args(argv=None) -> argparse.Namespace:
    d = DiagnoseConfig()
    ap = argparse.ArgumentParser(prog="glassbox diagnose", description=DESCRIPTION)
    ap.add_argument("run", help="a run directory (or its metrics.jsonl), a JSON-lines or CSV file, a Hugging Face "
                                "trainer_state.json or output directory, or TensorBoard event files")
    ap.add_argument("--json", action="store_true", help="print {findings, not_judged, reading} as JSON")
    add_reader_args(ap)
    ap.add_argument("--vocab-size", type=int, default=None,
                    help="vocabulary size for low_initial_loss (default: the run's config.json)")
    ap.add_argument("--spike-z", type=float, default=None,
                    help=f"robust z of a loss spike (default: the run's train.spike_loss_z, else {d.spike_z})")
    ap.add_argument("--spike-window", type=int, default=None,
                    help=f"accepted points that set the noise (default: the run's train.spike_window, "
                         f"else {d.spike_window})")
    ap.add_argument("--divergence-rise", type=float, default=d.divergence_rise,
                    help=f"relative rise above the running minimum (default {d.divergence_rise})")
    ap.add_argument("--flat-frac", type=float, default=d.flat_min_frac,
                    help=f"share of the run a plateau/stall must last (default {d.flat_min_frac})")
    ap.add_argument("--flat-tol", type=float, default=d.flat_tol,
                    help=f"relative change under which a stretch is flat (default {d.flat_tol})")
    ap.add_argument("--floor", type=float, default=None,
                    help="expected loss floor in nats: flat stretches within 0.3 of it are not findings")
    ap.add_argument("--val-noisy-ratio", type=float, default=d.val_noisy_ratio,
                    help=f"validation/training noise ratio for val_noisy (default {d.val_noisy_ratio})")
    return ap.parse_args(argv)


def config_from_args(a: argparse.Namespace) -> DiagnoseConfig:
    d = DiagnoseConfig()
    spike = {} if a.spike_z is None and a.spike_window is None else {
        "spike_from_run": False, "spike_z": d.spike_z if a.spike_z is None else a.spike_z,
        "spike_window": d.spike_window if a.spike_window is None else a.spike_window}
    return validate(DiagnoseConfig(**spike, divergence_rise=a.divergence_rise,
                                   flat_min_frac=a.flat_frac, flat_tol=a.flat_tol, expected_floor=a.floor,
                                   val_noisy_ratio=a.val_noisy_ratio))


def describe(rec, vocab: int | None) -> str:
    """One line: what was read."""
    from train.record.formats import FORMAT_NAMES

    train, val = rec.train_rows, rec.val_rows
    return (f"{rec.path if rec.format == 'glassbox' else rec.name} ({FORMAT_NAMES.get(rec.format, rec.format)}): "
            f"{len(train)} training rows (steps {train[0]['step'] if train else '-'}-"
            f"{train[-1]['step'] if train else '-'}), {len(val)} validation rows, vocabulary "
            f"{vocab if vocab else 'unknown (low_initial_loss not checked; pass --vocab-size)'}"
            + (f"; {rec.skipped_lines} unreadable lines skipped" if rec.skipped_lines else "")
            + "".join(f"; {n}" for n in rec.notes))


def main(argv=None) -> int:
    a = parse_args(argv)
    try:
        from train.record.formats import parse_tags

        rec = read_run(a.run, a.format, parse_tags(a.tags))
    except RecordError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    vocab = a.vocab_size or rec.vocab_size
    try:
        cfg = config_from_args(a)
    except ConfigError as e:  # a flag out of its range, named by its setting (--flat-frac: flat_min_frac)
        print(f"error: {e}", file=sys.stderr)
        return 2
    result = assess_run(rec, vocab_size=vocab, cfg=cfg)
    if a.json:
        print(json.dumps(result.to_dict(), indent=1))
        return 0
    print(describe(rec, vocab))
    print("".join(f"reading: {line}\n" for line in result.reading) + format_table(result.findings, result.not_judged))
    return 0
