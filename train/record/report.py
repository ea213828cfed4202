"""A run's report: one self-contained HTML page (charts as base64 PNG data URIs, no external resources).

    glassbox report RUN [--compare OTHER] [--out FILE] [--vocab-size N] [--format F] [--compare-format F]
                               [--tags FIELD=TAG,...]
    make report RUN=runs/<name> [COMPARE=<another run, in any format train/record/formats.py reads>]

The page (``RUN_DIR/report.html`` unless ``--out``): a run summary (from config.json / run.json where they
exist: model shape and size, tokens, steps, manifest and its hash, code version; it also works with nothing
but metrics.jsonl), the diagnosis table (train/record/diagnose/), training and validation loss against
steps and against tokens, learning rate and gradient norm, throughput (tokens/s, MFU, step time),
per-source validation loss, and a telemetry section that draws every other numeric field of the training
rows (``data_*``, ``share_*``, ``ce``, ``z_loss``, ... whatever the trainer adds; fields sharing a prefix
share a chart). ``--compare`` overlays a second run, aligned by tokens when both record them (else by steps);
either may be any trainer's record (a Hugging Face trainer_state.json, TensorBoard event files, a CSV, JSON
lines: train/record/formats.py). ``loss_curve.png`` is also written into the run directory. Charts are drawn
with matplotlib's Agg canvas (headless; no pyplot state).

A run that switched manifest versions (``run.json``'s timeline, train/data/timeline.py) gets a dashed line at
every switch on the loss, per-source validation and telemetry charts, labelled with the version it switched
to, and a "Data versions" table: per segment its steps, manifest, planned shares and the shares its trained
batches realized (counted in the segment's data order).
"""
from __future__ import annotations

import argparse
import base64
import html
import io
import math
import sys
import time
from pathlib import Path

import numpy as np

from train.record.diagnose import (DiagnoseConfig, Diagnosis, Finding, add_reader_args, assess_run,
                                   rolling_median, smooth_window)
from train.record.formats import FORMAT_NAMES, FORMATS, parse_tags
from train.record.formats import read_run
from train.record.load import RecordError, RunRecord, finite, series

# Fields of a training row that have their own chart (or are bookkeeping); everything else numeric is
# telemetry.
KNOWN_TRAIN = {"kind", "step", "tokens", "loss", "lr", "grad_norm", "tokens_per_s", "mfu", "step_s", "time",
               "samples_consumed", "manifest_version"}
SEVERITY_COLOR = {"critical": "#c62828", "warning": "#ef6c00", "info": "#1565c0"}
RUN_COLORS = ("#1f77b4", "#d62728")         # this run, the compared run
VAL_COLOR = "#2ca02c"
SWITCH_COLOR = "#6a1b9a"
MAX_TELEMETRY_CHARTS = 24


# ------------------------------------------------------------------------------------------------ charts

def _figure(rows: int, cols: int, width: float = 11.0, height: float = 3.4):
    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, height * rows), dpi=100, layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    return fig, axes


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _smooth(y: np.ndarray) -> np.ndarray:
    return rolling_median(y, smooth_window(len(y))) if len(y) >= 7 else y


def _style(ax, title: str, xlabel: str, ylabel: str = "") -> None:
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel, fontsize=9)
    if ylabel:
        ax.set_ylabel(ylabel, fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.tick_params(labelsize=8)


def _legend(ax) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)


# ------------------------------------------------------------------------------------------ manifest versions

def timeline(rec: RunRecord) -> list[dict]:
    """The manifest timeline of a Glassbox run (run.json), [] for other records and runs before timelines."""
    tl = (rec.run or {}).get("timeline")
    if not isinstance(tl, list):
        return []
    return [s for s in tl if isinstance(s, dict) and isinstance(s.get("first_step"), int)]


def _version(seg: dict) -> str:
    return f"v{seg['version']}" if seg.get("version") is not None else f"segment {seg.get('segment')}"


def switches(rec: RunRecord) -> list[tuple[int, float | None, str]]:
    """(step, tokens, label) of every switch: the data changes after that step."""
    per_step = (rec.config or {}).get("tokens_per_step")
    out = []
    for seg in timeline(rec)[1:]:
        step = seg["first_step"] - 1
        tok = next((finite(r.get("tokens")) for r in rec.train_rows if r.get("step") == step), None)
        if tok is None and isinstance(per_step, int):
            tok = float(step * per_step)
        out.append((step, tok, _version(seg)))
    return out


def mark_switches(ax, marks: list[tuple[int, float | None, str]], x: str = "step") -> None:
    for step, tok, label in marks:
        pos = step if x == "step" else tok
        if pos is None:
            continue
        ax.axvline(pos, color=SWITCH_COLOR, lw=1.2, ls="--")
        ax.annotate(f"data {label}", (pos, 0.02), xycoords=("data", "axes fraction"), fontsize=7,
                    color=SWITCH_COLOR, rotation=90, va="bottom", ha="left")


def _draw_loss(ax, rec: RunRecord, x: str, color: str, label: str, faint: bool = True) -> None:
    xs, ys = series(rec.train_rows, "loss", x)
    if len(xs):
        if faint and len(xs) >= 7:
            ax.plot(xs, ys, color=color, alpha=0.25, lw=0.8)
        ax.plot(xs, _smooth(ys), color=color, lw=1.5, label=f"{label} train")
    vx, vy = series(rec.val_rows, "val_loss", x)
    if len(vx):
        ax.plot(vx, vy, marker="o", color=VAL_COLOR if faint else color, ms=3.5, lw=1.2,
                alpha=0.9 if faint else 0.6, label=f"{label} val", ls="-" if faint else "--")


def has_tokens(rec: RunRecord) -> bool:
    return len(series(rec.train_rows, "loss", "tokens")[0]) > 0


def align_axis(rec: RunRecord, other: RunRecord) -> str:
    """``tokens`` when both runs record token counts, else ``step``."""
    return "tokens" if has_tokens(rec) and has_tokens(other) else "step"


def loss_figure(rec: RunRecord, findings: list[Finding], other: RunRecord | None = None) -> bytes:
    """loss_curve.png: training (raw and smoothed) and validation loss against steps and against tokens;
    findings shaded on the steps panel; a compared run overlaid on the tokens panel (on the steps panel when
    one of the two has no token counts)."""
    fig, axes = _figure(1, 2, height=4.0)
    a_step, a_tok = axes[0]
    _draw_loss(a_step, rec, "step", RUN_COLORS[0], rec.name)
    _draw_loss(a_tok, rec, "tokens", RUN_COLORS[0], rec.name)
    if other is not None:
        x = align_axis(rec, other)
        _draw_loss(a_tok if x == "tokens" else a_step, other, x, RUN_COLORS[1], other.name, faint=False)
    for f in findings:
        color = SEVERITY_COLOR.get(f.severity, "#777777")
        if f.end_step > f.step:
            a_step.axvspan(f.step, f.end_step, color=color, alpha=0.12)
        a_step.axvline(f.step, color=color, lw=1, ls=":")
        a_step.annotate(f.kind, (f.step, 1.0), xycoords=("data", "axes fraction"), fontsize=7, color=color,
                        rotation=90, va="top", ha="right")
    mark_switches(a_step, switches(rec))
    mark_switches(a_tok, switches(rec), "tokens")
    _style(a_step, "loss against steps", "step", "loss (nats)")
    aligned = other is not None and align_axis(rec, other) == "tokens"
    _style(a_step, "loss against steps" + (" (runs aligned by steps)" if other is not None and not aligned else ""),
           "step", "loss (nats)")
    _style(a_tok, "loss against tokens" + (" (runs aligned by tokens)" if aligned else ""), "tokens")
    _legend(a_step)
    _legend(a_tok)
    return _png(fig)


def _line_panels(panels: list[tuple[str, list[tuple[RunRecord, str, str]], str, str]], cols: int = 2) -> bytes | None:
    """One chart per panel: (title, [(record, field, label)], x field, y label). Empty panels are dropped."""
    drawn = []
    for title, lines, x, ylabel in panels:
        data = [(series(r.train_rows, key, x), label) for r, key, label in lines]
        data = [(xy, label) for xy, label in data if len(xy[0])]
        if data:
            drawn.append((title, data, x, ylabel))
    if not drawn:
        return None
    rows = math.ceil(len(drawn) / cols)
    fig, axes = _figure(rows, cols, height=3.0)
    for ax in axes.flat[len(drawn):]:
        ax.set_visible(False)
    for ax, (title, data, x, ylabel) in zip(axes.flat, drawn):
        for i, ((xs, ys), label) in enumerate(data):
            ax.plot(xs, ys, lw=1.1, label=label, color=RUN_COLORS[i] if len(data) <= 2 else None)
        _style(ax, title, x, ylabel)
        if len(data) > 1:
            _legend(ax)
    return _png(fig)


def optimizer_figure(rec: RunRecord) -> bytes | None:
    return _line_panels([("learning rate", [(rec, "lr", "lr")], "step", "lr"),
                         ("gradient norm (before clipping)", [(rec, "grad_norm", "grad_norm")], "step", "")])


def throughput_figure(rec: RunRecord) -> bytes | None:
    return _line_panels([("tokens per second", [(rec, "tokens_per_s", "tokens/s")], "step", ""),
                         ("model FLOPs utilization", [(rec, "mfu", "mfu")], "step", ""),
                         ("step time", [(rec, "step_s", "step_s")], "step", "seconds")])


def val_sources(rec: RunRecord, prefix: str | None = None) -> list[str]:
    """The per-source validation fields: ``val_bpb_<source>`` (bits per byte, which compare across sources and
    tokenizers) when the record has them, else ``val_loss_<source>`` (nats per token)."""
    if prefix is None:
        prefix = "val_bpb_" if val_sources(rec, "val_bpb_") else "val_loss_"
    keys: dict[str, None] = {}
    for r in rec.val_rows:
        for k in r:
            if k.startswith(prefix) and finite(r.get(k)) is not None:
                keys[k] = None
    return list(keys)


def val_source_figure(rec: RunRecord) -> bytes | None:
    keys = val_sources(rec)
    if not keys:
        return None
    bpb = keys[0].startswith("val_bpb_")
    prefix, overall = ("val_bpb_", "val_bpb") if bpb else ("val_loss_", "val_loss")
    fig, axes = _figure(1, 1, width=11.0, height=3.6)
    ax = axes[0][0]
    for k in keys:
        xs, ys = series(rec.val_rows, k)
        ax.plot(xs, ys, "o-", ms=3, lw=1.2, label=k[len(prefix):])
    xs, ys = series(rec.val_rows, overall)
    if len(xs):
        ax.plot(xs, ys, "k--", lw=1.4, label=f"{overall} (weighted)")
    mark_switches(ax, switches(rec))
    _style(ax, "validation per source" + (" in bits per byte (comparable across sources)" if bpb else ""),
           "step", "bits per byte" if bpb else "loss (nats)")
    ax.legend(fontsize=8, ncol=min(4, len(keys) + 1))
    return _png(fig)


def _flatten(row: dict) -> dict:
    """Numeric fields of a row; one level of nested dicts becomes ``outer.inner``."""
    out = {}
    for k, v in row.items():
        if isinstance(v, dict):
            for k2, v2 in v.items():
                if num_ok(v2):
                    out[f"{k}.{k2}"] = float(v2)
        elif num_ok(v):
            out[k] = float(v)
    return out


def num_ok(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))


def telemetry_fields(rec: RunRecord) -> dict[str, list[str]]:
    """Extra numeric fields of the training rows grouped by prefix (``share_web``, ``share_code`` ->
    ``share``); a prefix with one field is its own group."""
    fields: dict[str, None] = {}
    for r in rec.train_rows:
        for k in _flatten(r):
            if k not in KNOWN_TRAIN:
                fields[k] = None
    prefix = {k: k.replace(".", "_").split("_")[0] for k in fields}
    counts: dict[str, int] = {}
    for p in prefix.values():
        counts[p] = counts.get(p, 0) + 1
    groups: dict[str, list[str]] = {}
    for k in fields:
        g = prefix[k] + "_*" if counts[prefix[k]] > 1 else k
        groups.setdefault(g, []).append(k)
    return groups


def telemetry_figure(rec: RunRecord) -> tuple[bytes | None, dict[str, list[str]]]:
    groups = telemetry_fields(rec)
    if not groups:
        return None, groups
    flat = [(r["step"], _flatten(r)) for r in rec.train_rows]
    names = list(groups)[:MAX_TELEMETRY_CHARTS]
    cols = 3 if len(names) > 4 else 2
    rows = math.ceil(len(names) / cols)
    fig, axes = _figure(rows, cols, height=2.8)
    for ax in axes.flat[len(names):]:
        ax.set_visible(False)
    marks = switches(rec)
    for ax, g in zip(axes.flat, names):
        for k in groups[g]:
            pts = [(s, f[k]) for s, f in flat if k in f]
            if pts:
                xs, ys = zip(*pts)
                ax.plot(xs, ys, lw=1.0, label=k)
        mark_switches(ax, marks)
        _style(ax, g, "step")
        if len(groups[g]) > 1:
            ax.legend(fontsize=7, ncol=2)
    return _png(fig), groups


def compare_figure(rec: RunRecord, other: RunRecord) -> bytes:
    """Both runs against tokens (steps when one has no token counts): training loss, validation loss,
    learning rate, gradient norm."""
    x = align_axis(rec, other)
    fig, axes = _figure(2, 2, height=3.2)
    pairs = ((rec, RUN_COLORS[0]), (other, RUN_COLORS[1]))
    for (r, color) in pairs:
        xs, ys = series(r.train_rows, "loss", x)
        if len(xs):
            axes[0][0].plot(xs, _smooth(ys), color=color, lw=1.3, label=r.name)
        vx, vy = series(r.val_rows, "val_loss", x)
        if len(vx):
            axes[0][1].plot(vx, vy, "o-", color=color, ms=3, lw=1.2, label=r.name)
        for ax, key in ((axes[1][0], "lr"), (axes[1][1], "grad_norm")):
            xs, ys = series(r.train_rows, key, x)
            if len(xs):
                ax.plot(xs, ys, color=color, lw=1.0, label=r.name)
    for ax, title in zip(axes.flat, ("training loss (smoothed)", "validation loss", "learning rate",
                                     "gradient norm")):
        _style(ax, title, x)
        _legend(ax)
    return _png(fig)


# ------------------------------------------------------------------------------------------------ summary

def _fmt_count(n: float) -> str:
    for unit, div in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= div:
            return f"{n / div:.2f}{unit}"
    return f"{n:g}"


def _fmt_s(s: float) -> str:
    h, rem = divmod(int(s), 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h{m:02d}m{sec:02d}s" if h else f"{m}m{sec:02d}s"


def summary(rec: RunRecord, findings: list[Finding], not_judged: list[dict] | None = None) -> list[tuple[str, str]]:
    """(label, value) pairs, from whatever parts of the record exist."""
    out: list[tuple[str, str]] = [("run", rec.name), ("directory", str(rec.path))]
    if rec.format != "glassbox":
        out.append(("read as", FORMAT_NAMES.get(rec.format, rec.format)
                    + "".join(f"; {n}" for n in rec.notes)))
    cfg = rec.plan.to_json() if rec.plan else {}          # a Glassbox run's plan (train/plan.py)
    if rec.plan:
        m = rec.plan.model
        out.append(("model", f"n_layers {m.n_layers}, d_model {m.d_model}, n_heads {m.n_heads}, n_kv_heads "
                             f"{m.n_kv_heads}, ffn_hidden {m.ffn_hidden}"))
        out.append(("parameters", _fmt_count(m.num_params())))
    if rec.vocab_size:
        out.append(("vocabulary", str(rec.vocab_size)))
    for key, label in (("seq_len", "sequence length"), ("tokens_per_step", "tokens per step"),
                       ("world_size", "processes")):
        if key in cfg:
            out.append((label, str(cfg[key])))
    c = cfg.get("config") or {}
    if isinstance(c, dict):
        o, s, t = c.get("optimizer") or {}, c.get("schedule") or {}, c.get("train") or {}
        if o or s:
            out.append(("optimizer", f"lr {o.get('lr')}, min_lr {o.get('min_lr')}, schedule {s.get('kind')} "
                                     f"(warmup {s.get('warmup_steps')}), weight decay {o.get('weight_decay')}"))
        if t:
            out.append(("planned steps", f"{t.get('steps')} (global batch {t.get('global_batch_size')}, "
                                         f"{t.get('precision')})"))
    train, val = rec.train_rows, rec.val_rows
    if train:
        out.append(("steps logged", f"{len(train)} (steps {train[0]['step']} to {train[-1]['step']})"))
        tok = finite(train[-1].get("tokens"))
        if tok is not None:
            out.append(("tokens", _fmt_count(tok)))
        xs, ys = series(train, "loss")
        if len(ys):
            out.append(("final training loss", f"{float(np.median(ys[-max(1, len(ys) // 50):])):.4f} "
                                                f"(median of the last {max(1, len(ys) // 50)} steps)"))
        tps = [v for r in train if (v := finite(r.get("tokens_per_s"))) is not None]
        if tps:
            out.append(("tokens/s (median)", f"{np.median(tps):,.0f}"))
        mfu = [v for r in train if (v := finite(r.get("mfu"))) is not None]
        if mfu:
            out.append(("MFU (median)", f"{np.median(mfu):.1%}"))
        secs = [v for r in train if (v := finite(r.get("step_s"))) is not None]
        if secs:
            out.append(("time in steps", _fmt_s(sum(secs))))
    vx, vy = series(val, "val_loss")
    if len(vy):
        i = int(np.argmin(vy))
        out.append(("validation loss", f"{vy[-1]:.4f} at step {int(vx[-1])} (best {vy[i]:.4f} at step {int(vx[i])}; "
                                       f"{len(vy)} evaluations)"))
    run = rec.run or {}
    man = run.get("manifest") if isinstance(run.get("manifest"), dict) else None
    if man:
        out.append(("manifest", f"{man.get('name') or ''} {man.get('path') or ''}".strip()))
        if man.get("content_hash"):
            out.append(("manifest content_hash", str(man["content_hash"])))
    inv = run.get("invocations") if isinstance(run.get("invocations"), list) else []
    if inv and isinstance(inv[-1], dict):
        code = inv[-1].get("code") or {}
        if code.get("git_commit"):
            out.append(("code", f"{code['git_commit']}" + (" (train/ modified)" if code.get("git_dirty") else "")))
        out.append(("invocations", str(len(inv))))
    if rec.skipped_lines:
        out.append(("unreadable lines skipped", str(rec.skipped_lines)))
    counts = {s: sum(f.severity == s for f in findings) for s in ("critical", "warning", "info")}
    out.append(("diagnosis", (", ".join(f"{n} {s}" for s, n in counts.items() if n) or "no findings")
                + (f" ({len(not_judged)} checks not judged on this record)" if not_judged else "")))
    return out


# ------------------------------------------------------------------------------------------------ HTML

CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 24px auto; max-width: 1160px;
       color: #222; line-height: 1.4; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 13px; }
td, th { border: 1px solid #ddd; padding: 4px 8px; vertical-align: top; text-align: left; }
th { background: #f4f4f4; }
table.summary td:first-child { color: #555; white-space: nowrap; }
.sev-critical { color: #c62828; font-weight: bold; } .sev-warning { color: #ef6c00; font-weight: bold; }
.sev-info { color: #1565c0; }
img { max-width: 100%; display: block; margin: 8px 0; }
.muted { color: #777; } code { font-size: 12px; }
"""


def _e(x) -> str:
    return html.escape(str(x), quote=True)


def _img(png: bytes, alt: str, ident: str) -> str:
    return (f'<img id="{_e(ident)}" alt="{_e(alt)}" '
            f'src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">')


def _fmt_ev(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def not_judged_list(not_judged: list[dict]) -> str:
    if not not_judged:
        return ""
    items = "".join(f"<li><b>{_e(n['check'])}</b>: {_e(n['reason'])}</li>" for n in not_judged)
    return f'<p class="muted">Not judged on this record:</p><ul class="not-judged">{items}</ul>'


def diagnosis_table(findings: list[Finding], not_judged: list[dict] | None = None) -> str:
    tail = not_judged_list(not_judged or [])
    if not findings:
        if not_judged:
            return ('<p id="diagnosis-none">No findings among the checks that could be judged.</p>' + tail)
        return '<p id="diagnosis-none">No findings: the curves show none of the patterns the diagnosis looks for.</p>'
    rows = []
    for f in findings:
        ev = "<br>".join(f"{_e(k)} = {_e(_fmt_ev(v))}" for k, v in f.evidence.items())
        steps = f"{f.step}" if f.end_step == f.step else f"{f.step}&ndash;{f.end_step}"
        rows.append(f'<tr class="finding"><td class="sev-{_e(f.severity)}">{_e(f.severity)}</td><td>{_e(f.kind)}</td>'
                    f"<td>{steps}</td><td>{_e(f.message)}</td><td><code>{ev}</code></td><td>{_e(f.advice)}</td></tr>")
    return ('<table id="diagnosis-table"><tr><th>severity</th><th>kind</th><th>steps</th><th>what</th>'
            "<th>evidence</th><th>advice</th></tr>" + "".join(rows) + "</table>" + tail)


def _shares(shares: dict | None) -> str:
    if not shares:
        return "-"
    return ", ".join(f"{k} {v:.3f}" for k, v in sorted(shares.items()))


def versions_table(rec: RunRecord) -> str:
    """The Data versions table of a run that switched manifests: one row per segment of the timeline."""
    from train.data.timeline import realized_shares

    segs = timeline(rec)
    G = ((((rec.config or {}).get("config") or {}).get("train") or {}).get("global_batch_size"))
    rows = []
    for seg in segs:
        last = seg.get("last_step")
        trained = [r for r in rec.train_rows if seg["first_step"] <= r["step"] <= (last or r["step"])
                   and not r.get("update_skipped") and isinstance(r.get("samples_consumed"), int)]
        realized = (realized_shares(rec.path, seg, [r["samples_consumed"] // G - 1 for r in trained], G)
                    if isinstance(G, int) and trained else None)
        end = last if last is not None else (trained[-1]["step"] if trained else "")
        attrs = {"segment": seg.get("segment"), "first-step": seg["first_step"],
                 "last-step": "" if last is None else last, "version": seg.get("version"),
                 "content-hash": seg.get("content_hash")}
        cells = [seg.get("segment"), f"{seg['first_step']}-{end}", f"{seg.get('name')} {_version(seg)}",
                 str(seg.get("content_hash"))[:12], str(seg.get("parent"))[:12] if seg.get("parent") else "-",
                 _shares(seg.get("planned_shares")), _shares(realized), f"{seg.get('data_order')}/"]
        rows.append('<tr class="segment"' + "".join(f' data-{k}="{_e(v)}"' for k, v in attrs.items()) + ">"
                    + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    tail = "".join(f'<p class="muted">Discarded: segment {_e(s.get("segment"))} ({_e(s.get("name"))} '
                   f'{_e(_version(s))}, from step {_e(s.get("first_step"))}): {_e(s.get("discarded"))}.</p>'
                   for s in (rec.run or {}).get("timeline_discarded") or [] if isinstance(s, dict))
    return ('<table id="manifest-timeline"><tr><th>segment</th><th>steps</th><th>manifest</th><th>content_hash</th>'
            "<th>parent</th><th>planned shares</th><th>realized shares (trained batches)</th><th>data order</th></tr>"
            + "".join(rows) + "</table>" + tail)


def _summary_table(items: list[tuple[str, str]], other: list[tuple[str, str]] | None = None) -> str:
    if other is None:
        body = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in items)
        return f'<table class="summary" id="summary">{body}</table>'
    a, b = dict(items), dict(other)
    keys = list(dict.fromkeys([k for k, _ in items] + [k for k, _ in other]))
    body = "".join(f"<tr><td>{_e(k)}</td><td>{_e(a.get(k, ''))}</td><td>{_e(b.get(k, ''))}</td></tr>" for k in keys)
    return ('<table class="summary" id="summary-compare"><tr><th></th><th>this run</th><th>compared</th></tr>'
            f"{body}</table>")


def render_html(rec: RunRecord, diag: Diagnosis, charts: dict[str, bytes | None],
                telemetry: dict[str, list[str]], other: RunRecord | None = None,
                other_diag: Diagnosis | None = None) -> str:
    findings = diag.findings
    other_findings = other_diag.findings if other_diag else []
    axis = align_axis(rec, other) if other is not None else "tokens"
    parts = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_e(rec.name)}: run report"
             f"</title><style>{CSS}</style></head><body>",
             f"<h1>Run report: {_e(rec.name)}</h1>",
             f'<p class="muted">Generated {_e(time.strftime("%Y-%m-%d %H:%M:%S"))} from {_e(rec.path)} by '
             "<code>glassbox report</code>"
             + (f"; compared with {_e(other.path)}" if other is not None else "") + ".</p>",
             '<h2 id="summary-h">Summary</h2>', _summary_table(summary(rec, findings, diag.not_judged))]
    parts += ['<h2 id="diagnosis">Diagnosis</h2>',
              '<p class="muted">Findings of <code>glassbox diagnose</code> (thresholds in '
              "train/record/diagnose/); steps are where each pattern starts and ends.</p>",
              diagnosis_table(findings, diag.not_judged)]
    if diag.reading:
        parts.insert(-1, '<p>What the curves did:</p><ul id="reading">'
                     + "".join(f"<li>{_e(x)}</li>" for x in diag.reading) + "</ul>")

    def section(key: str, title: str, note: str = "", missing: str = "") -> None:
        parts.append(f'<h2 id="{_e(key)}-h">{_e(title)}</h2>')
        if note:
            parts.append(f'<p class="muted">{_e(note)}</p>')
        png = charts.get(key)
        if png:
            parts.append(_img(png, title, key))
        else:
            parts.append(f'<p class="muted" id="{_e(key)}-none">{_e(missing or "Nothing to draw in this record.")}</p>')

    if len(timeline(rec)) > 1:
        parts += ['<h2 id="versions">Data versions</h2>',
                  '<p class="muted">The run switched manifest versions (run.json\'s timeline): each segment trained on '
                  "one manifest from its first step; the dashed lines on the charts mark the switches. Realized shares "
                  "are counted in the segment's data order over the batches its applied updates trained on.</p>",
                  versions_table(rec)]
    section("loss", "Loss", "Training loss (faint: every step; solid: rolling median) and validation loss, against "
            "steps and against tokens; shaded: diagnosis findings." + (f" The compared run is overlaid on the {axis} "
                                                                       "panel." if other is not None else ""),
            "No finite training loss in this record.")
    section("optimizer", "Learning rate and gradient norm", missing="No lr or grad_norm fields in this record.")
    section("throughput", "Throughput", missing="No tokens_per_s, mfu or step_s fields in this record.")
    section("val_sources", "Validation loss per source", (
        "Bits per byte (val_bpb_<source>): nats summed over the held-out tokens / (ln 2 x the UTF-8 bytes they "
        "decode to), so sources that the tokenizer cuts into more or fewer tokens per byte compare." if
        val_sources(rec) and val_sources(rec)[0].startswith("val_bpb_") else ""), "No per-source validation loss "
            "(val_loss_<source>) in this record.")
    section("telemetry", "Telemetry", ("Every other numeric field of the training rows, one chart per prefix: "
                                       + "; ".join(f"{g}: {', '.join(ks)}" if len(ks) > 1 else g
                                                   for g, ks in telemetry.items()) + ".") if telemetry else "",
            "No telemetry fields in this record (the training rows hold only the standard fields).")
    if other is not None:
        why = "" if axis == "tokens" else (": " + " and ".join(r.name for r in (rec, other) if not has_tokens(r))
                                           + " records no token counts")
        parts.append(f'<h2 id="compare">Comparison (aligned by {"tokens" if axis == "tokens" else "steps"}'
                     f'{_e(why)})</h2>')
        parts.append(_summary_table(summary(rec, findings, diag.not_judged),
                                    summary(other, other_findings, other_diag.not_judged if other_diag else None)))
        if charts.get("compare"):
            parts.append(_img(charts["compare"], f"comparison against {axis}", "compare-img"))
        parts.append(f"<h3>Diagnosis of {_e(other.name)}</h3>")
        parts.append(diagnosis_table(other_findings, other_diag.not_judged if other_diag else None)
                     .replace('id="diagnosis-table"', 'id="compare-diagnosis"')
                     .replace('id="diagnosis-none"', 'id="compare-diagnosis-none"'))
    parts.append("</body></html>\n")
    return "\n".join(parts)


def build_report(run: str | Path, compare: str | Path | None = None, out: str | Path | None = None,
                 vocab_size: int | None = None, cfg: DiagnoseConfig | None = None, fmt: str = "auto",
                 compare_fmt: str = "auto", tags: dict[str, str] | None = None) -> Path:
    """Write the report page (and loss_curve.png in the run's directory); returns the page's path. Either run
    may be any trainer's record (train/record/formats.py). Raises RecordError."""
    rec = read_run(run, fmt, tags)
    other = read_run(compare, compare_fmt, tags) if compare else None
    diag = assess_run(rec, vocab_size=vocab_size, cfg=cfg)
    other_diag = assess_run(other, vocab_size=vocab_size, cfg=cfg) if other else None
    tele_png, tele_groups = telemetry_figure(rec)
    charts = {"loss": loss_figure(rec, diag.findings, other), "optimizer": optimizer_figure(rec),
              "throughput": throughput_figure(rec), "val_sources": val_source_figure(rec), "telemetry": tele_png,
              "compare": compare_figure(rec, other) if other is not None else None}
    (rec.path / "loss_curve.png").write_bytes(charts["loss"])
    page = Path(out) if out else rec.path / "report.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    tmp = page.with_name(f".{page.name}.tmp")
    tmp.write_text(render_html(rec, diag, charts, tele_groups, other, other_diag), encoding="utf-8")
    tmp.replace(page)
    return page


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="glassbox report", description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="a run directory (nothing but metrics.jsonl is needed), or another trainer's record "
                                "(train/record/formats.py)")
    ap.add_argument("--compare", metavar="OTHER", default=None,
                    help="overlay another run (any format), aligned by tokens when both record them")
    ap.add_argument("--compare-format", default="auto", choices=FORMATS,
                    help="how to read --compare (default: decided from the path)")
    ap.add_argument("--out", default=None, help="the HTML file to write (default RUN/report.html)")
    add_reader_args(ap)
    ap.add_argument("--vocab-size", type=int, default=None,
                    help="vocabulary size for the diagnosis (default: each run's config.json)")
    ap.add_argument("--spike-z", type=float, default=None,
                    help="diagnosis: robust z of a loss spike (default: the run's train.spike_loss_z)")
    ap.add_argument("--floor", type=float, default=None, help="diagnosis: expected loss floor in nats")
    a = ap.parse_args(argv)
    try:
        page = build_report(a.run, a.compare, a.out, a.vocab_size,
                            DiagnoseConfig(expected_floor=a.floor) if a.spike_z is None else
                            DiagnoseConfig(spike_z=a.spike_z, spike_from_run=False, expected_floor=a.floor), a.format, a.compare_format,
                            parse_tags(a.tags))
    except RecordError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {page} (and loss_curve.png in the run's directory)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
