"""A corpus's report: ``DATA/report.html``, one self-contained page of what the pipeline kept and dropped.

    python -m pipeline.report.corpus_report DATA [--out FILE] [--samples N]
    make corpus-report DATA=<d>

Read with polars from the stage outputs (Parquet) and ``stats/<stage>.json``, nothing recomputed:

- the funnel per stage (records in, out, rejected, unreadable, wall time: stats), per stage and source
  and per stage and language (counted in the Parquet: a stage's output folder and
  ``rejected/stage=<stage>/``), with every reason and its count per source;
- score distributions: ``quality`` (each language's own classifier) and ``perplexity`` per language and source
  (``scored/``), with the
  head / middle / tail cut-offs and the percentiles of ``stats/score.json``;
- duplicate clusters: the sizes of the groups that dedup collapsed (a survivor and the documents whose
  ``duplicate_of`` points at it), per reason (exact, near, semantic);
- a few documents per rejection reason (the first by id: deterministic), with their detail and the start
  of their text;
- the token counts (``tokenized/counts.json``) and the mixture manifests with their versions (a re-weighted
  version names its parent and the run it was read from).

Charts are PNGs drawn with matplotlib's Agg canvas and embedded as data URIs: no scripts, no external
resources. Stages that have not run yet are left out; an empty corpus folder is an error naming the fix.
"""
from __future__ import annotations

import argparse
import base64
import html
import io
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

from pipeline.rows import DUPLICATE_REASONS, LEGACY_QUALITY, QUALITY

# stage -> its output folder, in the pipeline's order
STAGES = {"extract": "extracted", "clean": "cleaned", "score": "scored", "dedup": "dedup",
          "decontaminate": "decontaminated", "tokenize": "tokenized"}
DUP_REASONS = DUPLICATE_REASONS
SNIPPET_CHARS = 400
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


class CorpusReportError(RuntimeError):
    pass


# ------------------------------------------------------------------------------------------------ reading

def parquet_files(folder: Path) -> list[str]:
    """The Parquet files of a stage folder (Spark's part files; temporary and hidden ones left out)."""
    if not folder.is_dir():
        return []
    return sorted(str(p) for p in folder.rglob("*.parquet") if not any(x.startswith((".", "_")) for x in p.parts[-2:])
                  and ".__writing" not in str(p))


def read_columns(folder: Path, columns: list[str]) -> pl.DataFrame | None:
    """The given columns (those that exist) of every Parquet file of a folder, or None when there is none."""
    files = parquet_files(folder)
    if not files:
        return None
    have = pl.read_parquet_schema(files[0])
    cols = [c for c in columns if c in have]
    return pl.scan_parquet(files).select(cols).collect()


def load_all_stats(data: Path) -> dict[str, dict]:
    """Each stage's stats/<stage>.json (the files with a `records_in`: stats/run.json is the command's timing)."""
    out = {}
    folder = data / "stats"
    if folder.is_dir():
        names = sorted(p.stem for p in folder.glob("*.json"))
        for name in [s for s in STAGES if s in names] + [n for n in names if n not in STAGES]:
            try:
                stats = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(stats, dict) and "records_in" in stats:
                out[name] = stats
    return out


def rejected(data: Path, stage: str, columns: list[str]) -> pl.DataFrame | None:
    return read_columns(data / "rejected" / f"stage={stage}", columns)


def source_funnel(data: Path, stats: dict[str, dict]) -> pl.DataFrame:
    """Per stage and source: records in, out, rejected, unreadable (counted in the Parquet)."""
    frames = []
    for stage, folder in STAGES.items():
        if stage not in stats:
            continue
        if stage == "tokenize":
            srcs = (_read_json(data / "tokenized" / "counts.json") or {}).get("sources", {})
            out = pl.DataFrame({"source": list(srcs),
                                "records_out": [int(v.get("documents", 0)) for v in srcs.values()]},
                               schema={"source": pl.String, "records_out": pl.Int64})
        else:
            df = read_columns(data / folder, ["source"])
            out = (df.group_by("source").agg(pl.len().cast(pl.Int64).alias("records_out")) if df is not None
                   else pl.DataFrame(schema={"source": pl.String, "records_out": pl.Int64}))
        rej = rejected(data, stage, ["source", "status"])
        if rej is not None and rej.height:
            dropped = rej.group_by("source").agg(
                (pl.col("status") != "unreadable").sum().cast(pl.Int64).alias("rejected"),
                (pl.col("status") == "unreadable").sum().cast(pl.Int64).alias("unreadable"))
        else:
            dropped = pl.DataFrame(schema={"source": pl.String, "rejected": pl.Int64, "unreadable": pl.Int64})
        f = out.join(dropped, on="source", how="full", coalesce=True).fill_null(0)
        f = f.with_columns(pl.lit(stage).alias("stage"),
                           (pl.col("records_out") + pl.col("rejected") + pl.col("unreadable")).alias("records_in"))
        frames.append(f.select("stage", "source", "records_in", "records_out", "rejected", "unreadable"))
    if not frames:
        return pl.DataFrame(schema={"stage": pl.String, "source": pl.String, "records_in": pl.Int64,
                                    "records_out": pl.Int64, "rejected": pl.Int64, "unreadable": pl.Int64})
    order = {s: i for i, s in enumerate(STAGES)}
    df = pl.concat(frames)
    df = df.with_columns(pl.col("stage").replace_strict(order, default=99).alias("_o"))
    return df.sort("_o", "source").drop("_o")


LANG_STAGES = ("clean", "score", "dedup", "decontaminate")  # the stages whose rows carry `lang`
NO_LANG = "-"  # a row without a language: the identifier gave none (or the clean stage dropped it first)


def language_funnel(data: Path, stats: dict[str, dict]) -> pl.DataFrame:
    """Per stage (from clean on, where documents have a language) and language: records in, out, rejected,
    unreadable (counted in the Parquet), then tokenize's documents per language (its fertility report)."""
    empty = {"stage": pl.String, "lang": pl.String, "records_in": pl.Int64, "records_out": pl.Int64,
             "rejected": pl.Int64, "unreadable": pl.Int64}
    frames = []
    for stage in (s for s in LANG_STAGES if s in stats):
        df = read_columns(data / STAGES[stage], ["lang"])
        out = (df.group_by("lang").agg(pl.len().cast(pl.Int64).alias("records_out")) if df is not None and
               "lang" in df.columns else pl.DataFrame(schema={"lang": pl.String, "records_out": pl.Int64}))
        rej = rejected(data, stage, ["lang", "status"])
        if rej is not None and rej.height and "lang" in rej.columns:
            dropped = rej.group_by("lang").agg(
                (pl.col("status") != "unreadable").sum().cast(pl.Int64).alias("rejected"),
                (pl.col("status") == "unreadable").sum().cast(pl.Int64).alias("unreadable"))
        else:
            dropped = pl.DataFrame(schema={"lang": pl.String, "rejected": pl.Int64, "unreadable": pl.Int64})
        f = (out.join(dropped, on="lang", how="full", coalesce=True).fill_null(0)
             .with_columns(pl.col("lang").fill_null(NO_LANG)).group_by("lang").sum())
        frames.append(f.with_columns(pl.lit(stage).alias("stage"),
                                     (pl.col("records_out") + pl.col("rejected") + pl.col("unreadable"))
                                     .alias("records_in")).select(list(empty)))
    rows = (((stats.get("tokenize") or {}).get("extra") or {}).get("fertility") or [])
    rows = [r for r in rows if r.get("lang") != "*"]
    if rows:
        n = [int(r["documents"]) for r in rows]
        frames.append(pl.DataFrame({"stage": ["tokenize"] * len(rows), "lang": [r["lang"] for r in rows],
                                    "records_in": n, "records_out": n, "rejected": [0] * len(rows),
                                    "unreadable": [0] * len(rows)}, schema=empty))
    if not frames:
        return pl.DataFrame(schema=empty)
    order = {s: i for i, s in enumerate(STAGES)}
    df = pl.concat(frames).with_columns(pl.col("stage").replace_strict(order, default=99).alias("_o"))
    return df.sort(["_o", "records_in", "lang"], descending=[False, True, False]).drop("_o")


def reason_counts(data: Path, stats: dict[str, dict]) -> pl.DataFrame:
    """stage, status, reason, source, count: every rejection reason."""
    frames = []
    for stage in stats:
        rej = rejected(data, stage, ["source", "status", "reason"])
        if rej is not None and rej.height:
            frames.append(rej.group_by("status", "reason", "source").agg(pl.len().cast(pl.Int64).alias("count"))
                          .with_columns(pl.lit(stage).alias("stage")))
    if not frames:
        return pl.DataFrame(schema={"stage": pl.String, "status": pl.String, "reason": pl.String,
                                    "source": pl.String, "count": pl.Int64})
    order = {s: i for i, s in enumerate(STAGES)}
    df = pl.concat([f.select("stage", "status", "reason", "source", "count") for f in frames])
    totals = df.group_by("stage", "reason").agg(pl.col("count").sum().alias("_t"))
    return (df.join(totals, on=["stage", "reason"])
            .with_columns(pl.col("stage").replace_strict(order, default=99).alias("_o"))
            .sort(["_o", "_t", "reason", "source"], descending=[False, True, False, False]).drop("_o", "_t"))


def scores(data: Path) -> pl.DataFrame | None:
    """lang, source, quality, perplexity, ppl_bucket of every scored document (quality read from quality_ft in a
    folder scored before per-language classifiers)."""
    df = read_columns(data / "scored", ["lang", "source", QUALITY, LEGACY_QUALITY, "perplexity", "ppl_bucket"])
    if df is None or "source" not in df.columns:
        return None
    if QUALITY not in df.columns and LEGACY_QUALITY in df.columns:
        df = df.rename({LEGACY_QUALITY: QUALITY})
    for c in ("lang", QUALITY, "perplexity", "ppl_bucket"):
        if c not in df.columns:
            df = df.with_columns(pl.lit(None).alias(c))
    return df


def duplicate_clusters(data: Path) -> pl.DataFrame:
    """reason, cluster size (the survivor and its duplicates), clusters of that size."""
    rej = rejected(data, "dedup", ["reason", "duplicate_of"])
    if rej is None or "duplicate_of" not in rej.columns:
        return pl.DataFrame(schema={"reason": pl.String, "size": pl.Int64, "clusters": pl.Int64})
    per = (rej.filter(pl.col("reason").is_in(DUP_REASONS) & pl.col("duplicate_of").is_not_null())
           .group_by("reason", "duplicate_of").agg((pl.len() + 1).cast(pl.Int64).alias("size")))
    return per.group_by("reason", "size").agg(pl.len().cast(pl.Int64).alias("clusters")).sort("reason", "size")


def samples(data: Path, reasons: pl.DataFrame, n: int) -> dict[tuple[str, str], list[dict]]:
    """(stage, reason) -> the first n rejected records by id, in the order of the reasons table."""
    out: dict[tuple[str, str], list[dict]] = {}
    for stage in dict.fromkeys(reasons["stage"].to_list()):
        rej = rejected(data, stage, ["id", "source", "status", "reason", "detail", "url", "input_file",
                                     "duplicate_of", "text"])
        if rej is None or not rej.height:
            continue
        if "text" in rej.columns:
            rej = rej.with_columns(pl.col("text").str.slice(0, SNIPPET_CHARS + 1))
        firsts = rej.sort("id").group_by("reason", maintain_order=True).head(n)
        picked = {}
        for row in firsts.iter_rows(named=True):
            picked.setdefault(row["reason"], []).append(row)
        for reason in dict.fromkeys(reasons.filter(pl.col("stage") == stage)["reason"].to_list()):
            if reason in picked:
                out[(stage, reason or "(none)")] = picked[reason]
    return out


def manifests(data: Path) -> list[dict]:
    out = []
    folder = data / "manifests"
    if folder.is_dir():
        for p in sorted(folder.glob("*.json")):
            m = _read_json(p)
            if m and isinstance(m.get("sources"), dict):
                out.append({"file": p.name, **m})
    return sorted(out, key=lambda m: (str(m.get("name")), int(m.get("version") or 1)))


def _read_json(path: Path) -> dict | None:
    try:
        v = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return v if isinstance(v, dict) else None


# ------------------------------------------------------------------------------------------------ charts

def _figure(rows: int, cols: int, width: float = 11.0, height: float = 3.2):
    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, height * rows), dpi=100, layout="constrained")
    return fig, fig.subplots(rows, cols, squeeze=False)


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _colors(sources: list[str]) -> dict[str, str]:
    return {s: COLORS[i % len(COLORS)] for i, s in enumerate(sorted(sources))}


def funnel_figure(funnel: pl.DataFrame) -> bytes | None:
    """Per stage, kept documents stacked by source, and what the stage dropped."""
    if not funnel.height:
        return None
    stages = list(dict.fromkeys(funnel["stage"].to_list()))
    sources = sorted(set(funnel["source"].to_list()))
    color = _colors(sources)
    fig, axes = _figure(1, 1, height=0.5 + 0.55 * len(stages))
    ax = axes[0][0]
    y = np.arange(len(stages))[::-1]
    left = np.zeros(len(stages))
    for s in sources:
        vals = np.array([funnel.filter((pl.col("stage") == st) & (pl.col("source") == s))["records_out"].sum()
                         for st in stages], dtype=float)
        ax.barh(y, vals, left=left, color=color[s], label=f"{s} kept")
        left += vals
    dropped = np.array([funnel.filter(pl.col("stage") == st).select(pl.col("rejected") + pl.col("unreadable")).sum()
                        .item() for st in stages], dtype=float)
    ax.barh(y, dropped, left=left, color="#cccccc", hatch="//", label="dropped at this stage")
    ax.set_yticks(y, stages)
    ax.set_xlabel("records", fontsize=9)
    ax.set_title("records out of each stage, by source (grey: dropped there)", fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return _png(fig)


def score_figure(df: pl.DataFrame | None, cutoffs: dict) -> bytes | None:
    """quality and perplexity histograms per language (rows) and source (colours); cut-offs as lines."""
    if df is None or not df.height:
        return None
    langs = sorted(x for x in set(df["lang"].to_list()) if x is not None)
    if not langs:
        return None
    color = _colors(sorted(set(df["source"].to_list())))
    fig, axes = _figure(len(langs), 2, height=3.0)
    for row, lang in zip(axes, langs):
        sub = df.filter(pl.col("lang") == lang)
        qa, pa = row
        for s in sorted(set(sub["source"].to_list())):
            part = sub.filter(pl.col("source") == s)
            q = part[QUALITY].drop_nulls().drop_nans().to_numpy() if part[QUALITY].dtype.is_float() \
                else np.array([])
            p = part["perplexity"].drop_nulls().drop_nans().to_numpy() if part["perplexity"].dtype.is_float() \
                else np.array([])
            if len(q):
                qa.hist(q, bins=np.linspace(0, 1, 21), histtype="step", lw=1.5, color=color[s], label=f"{s} ({len(q)})")
            p = p[p > 0]
            if len(p):
                lo, hi = math.log10(p.min()), math.log10(p.max())
                bins = np.logspace(lo - 0.05, hi + 0.05, 25)
                pa.hist(p, bins=bins, histtype="step", lw=1.5, color=color[s], label=f"{s} ({len(p)})")
        pa.set_xscale("log")
        cut = cutoffs.get(lang) or {}
        for key, ls in (("head_max", "--"), ("middle_max", ":")):
            if isinstance(cut.get(key), (int, float)):
                pa.axvline(cut[key], color="black", ls=ls, lw=1, label=f"{key.replace('_max', '')} | "
                                                                      f"{'middle' if key == 'head_max' else 'tail'} "
                                                                      f"{cut[key]:.0f}")
        for ax, title in ((qa, f"quality [{lang}]"), (pa, f"perplexity [{lang}] (KenLM, log scale)")):
            ax.set_title(title, fontsize=10)
            ax.set_ylabel("documents", fontsize=9)
            ax.grid(True, alpha=0.3)
            ax.tick_params(labelsize=8)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=7)
    return _png(fig)


# ------------------------------------------------------------------------------------------------ HTML

CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 24px auto; max-width: 1160px;
       color: #222; line-height: 1.4; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ddd; }
h3 { font-size: 14px; margin-top: 18px; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0; }
td, th { border: 1px solid #ddd; padding: 3px 8px; vertical-align: top; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f4f4f4; }
img { max-width: 100%; display: block; margin: 8px 0; }
.muted { color: #777; } code { font-size: 12px; }
pre.doc { white-space: pre-wrap; background: #fafafa; border: 1px solid #eee; padding: 6px; font-size: 12px;
          max-height: 10em; overflow: hidden; margin: 4px 0; }
"""


def _e(x) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def _img(png: bytes, alt: str, ident: str) -> str:
    return (f'<img id="{_e(ident)}" alt="{_e(alt)}" '
            f'src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">')


def _num(v) -> str:
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1e4 else f"{v:,.0f}"
    if isinstance(v, int):
        return f"{v:,}"
    return _e(v)


def _table(ident: str, head: list[str], rows: list[list], numeric: set[int] = frozenset()) -> str:
    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f'<td class="n">{_num(c)}</td>' if i in numeric else f"<td>{_e(c)}</td>"
                                    for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f'<table id="{_e(ident)}"><tr>{th}</tr>{body}</table>'


def _stage_table(stats: dict[str, dict]) -> str:
    rows = []
    for stage, s in stats.items():
        rej, unr = s.get("rejected") or {}, s.get("unreadable") or {}
        rows.append([stage, s.get("records_in"), s.get("records_out"), sum(rej.values()), sum(unr.values()),
                     round(float(s.get("bytes_out") or 0) / 1e6, 3), round(float(s.get("wall_s") or 0), 1)])
    return _table("stage-funnel", ["stage", "records in", "records out", "rejected", "unreadable", "MB out",
                                   "wall s"], rows, {1, 2, 3, 4, 5, 6})


def _language_section(funnel: pl.DataFrame) -> str:
    if not funnel.height:
        return '<p class="muted" id="languages-none">No stage with languages has run (clean sets them).</p>'
    rows = [[r["stage"], r["lang"], r["records_in"], r["records_out"], r["rejected"], r["unreadable"]]
            for r in funnel.iter_rows(named=True)]
    return ('<p class="muted">The language each document was identified as (clean\'s <code>lang</code>; '
            f"<code>{NO_LANG}</code>: none), counted in the Parquet; tokenize: documents per language of its "
            "fertility report.</p>"
            + _table("language-funnel", ["stage", "language", "records in", "records out", "rejected", "unreadable"],
                     rows, {2, 3, 4, 5}))


def _reason_table(reasons: pl.DataFrame) -> str:
    if not reasons.height:
        return '<p class="muted" id="reasons-none">No record was rejected.</p>'
    sources = sorted(set(reasons["source"].to_list()))
    rows = []
    for (stage, status, reason), part in reasons.group_by(["stage", "status", "reason"], maintain_order=True):
        per = {r["source"]: r["count"] for r in part.iter_rows(named=True)}
        rows.append([stage, reason, status, sum(per.values())] + [per.get(s, 0) for s in sources])
    return _table("reasons", ["stage", "reason", "status", "total"] + sources, rows,
                  set(range(3, 4 + len(sources))))


def _score_tables(score_stats: dict | None, df: pl.DataFrame | None) -> str:
    parts = []
    extra = (score_stats or {}).get("extra") or {}
    dists = extra.get("distributions") or []
    if dists:
        rows = []
        for d in dists:
            for key in (QUALITY, LEGACY_QUALITY, "perplexity"):   # quality_ft: stats written before quality
                pct = d.get(key) or {}
                if pct:
                    rows.append([d.get("lang"), d.get("source"), key, d.get(f"{key}_scored", d.get("documents"))]
                                + [pct.get(p) for p in ("p5", "p10", "p25", "p50", "p75", "p90", "p95")])
        parts.append(_table("score-percentiles", ["lang", "source", "score", "scored", "p5", "p10", "p25", "p50",
                                                  "p75", "p90", "p95"], rows, set(range(3, 11))))
    cut = extra.get("ppl_bucket_cutoffs") or {}
    if cut:
        parts.append("<p>Perplexity buckets (per language, at percentiles "
                     f"{_e(extra.get('bucket_percentiles'))}): "
                     + "; ".join(f"<b>{_e(lang)}</b>: head &le; {_num(c.get('head_max'))} &lt; middle &le; "
                                 f"{_num(c.get('middle_max'))} &lt; tail" for lang, c in cut.items()) + ".</p>")
    if df is not None and df.height and "ppl_bucket" in df.columns:
        b = (df.filter(pl.col("ppl_bucket").is_not_null()).group_by("lang", "source", "ppl_bucket")
             .agg(pl.len().alias("n")).sort("lang", "source"))
        rows = []
        for (lang, source), part in b.group_by(["lang", "source"], maintain_order=True):
            per = {r["ppl_bucket"]: r["n"] for r in part.iter_rows(named=True)}
            rows.append([lang, source] + [per.get(k, 0) for k in ("head", "middle", "tail")])
        if rows:
            parts.append(_table("bucket-counts", ["lang", "source", "head", "middle", "tail"], rows, {2, 3, 4}))
    return "".join(parts)


def _cluster_section(clusters: pl.DataFrame) -> str:
    if not clusters.height:
        return '<p class="muted" id="clusters-none">Dedup removed no duplicates (or has not run).</p>'
    rows = [[r["reason"], r["size"], r["clusters"], r["clusters"] * (r["size"] - 1)]
            for r in clusters.iter_rows(named=True)]
    note = ('<p class="muted">A cluster is one kept document (the survivor) and every removed document whose '
            "<code>duplicate_of</code> points at it.</p>")
    return note + _table("clusters", ["reason", "cluster size", "clusters", "documents removed"], rows, {1, 2, 3})


def _samples_section(picked: dict[tuple[str, str], list[dict]]) -> str:
    if not picked:
        return '<p class="muted" id="samples-none">No rejected documents to show.</p>'
    parts = []
    for (stage, reason), docs in picked.items():
        parts.append(f'<h3 class="sample-reason">{_e(stage)}: {_e(reason)}</h3>')
        for d in docs:
            where = d.get("url") or d.get("input_file") or ""
            meta = (f"<code>{_e(d.get('id'))}</code> &middot; {_e(d.get('source'))} &middot; {_e(where)}"
                    + (f" &middot; detail: {_e(d.get('detail'))}" if d.get("detail") else "")
                    + (f" &middot; duplicate of <code>{_e(d.get('duplicate_of'))}</code>" if d.get("duplicate_of")
                       else ""))
            text = d.get("text") or ""
            snippet = (text[:SNIPPET_CHARS] + " ...") if len(text) > SNIPPET_CHARS else text
            parts.append(f'<div class="sample"><div>{meta}</div>'
                         + (f'<pre class="doc">{_e(snippet)}</pre>' if snippet else
                            '<p class="muted">(no text: dropped before extraction)</p>') + "</div>")
    return "".join(parts)


def _manifest_section(mans: list[dict], counts: dict | None) -> str:
    parts = []
    if counts and isinstance(counts.get("sources"), dict):
        rows = [[k, v.get("documents"), v.get("tokens"), len(v.get("shards") or [])]
                for k, v in counts["sources"].items()]
        tok = counts.get("tokenizer") or {}
        parts.append(f"<p>Tokenizer: vocabulary {_num(tok.get('vocab_size'))}, sha256 "
                     f"<code>{_e(str(tok.get('sha256'))[:16])}</code>.</p>")
        parts.append(_table("tokens", ["source", "documents", "tokens", "shards"], rows, {1, 2, 3}))
    if mans:
        rows = []
        for m in mans:
            srcs = m["sources"]
            weights = ", ".join(f"{k} {float(v.get('weight', 0)):.3f}" for k, v in srcs.items())
            epochs = ", ".join(f"{k} {float(v.get('epochs', 0)):.2f}" for k, v in srcs.items())
            rw = m.get("reweight") or {}
            origin = (f"re-weighted from {rw['run'].get('path')} at step {rw['run'].get('step')}"
                      + (f" against {rw['reference'].get('path')}" if rw.get("reference") else "")
                      if isinstance(rw.get("run"), dict) else "from the mix file")
            rows.append([m["file"], m.get("version", 1), str(m.get("content_hash", ""))[:12],
                         str(m.get("parent") or "")[:12], m.get("total_tokens"), weights, epochs, origin])
        parts.append(_table("manifests", ["manifest", "version", "content_hash", "parent", "tokens", "weights",
                                          "epochs", "origin"], rows, {1, 4}))
    return "".join(parts) or '<p class="muted" id="manifests-none">Not tokenized yet (make tokenize, make mix).</p>'


def build_page(data: Path, n_samples: int = 3) -> str:
    stats = load_all_stats(data)
    if not stats:
        raise CorpusReportError(f"{data}: no stats/<stage>.json; run the pipeline first "
                                f"(make clean-dedup DATA={data})")
    funnel = source_funnel(data, stats)
    reasons = reason_counts(data, stats)
    sc = scores(data)
    cutoffs = ((stats.get("score") or {}).get("extra") or {}).get("ppl_bucket_cutoffs") or {}
    charts = {"funnel": funnel_figure(funnel), "scores": score_figure(sc, cutoffs)}
    first = next(iter(stats.values()))
    last = stats[list(stats)[-1]]
    parts = [f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(data.name)}: corpus report'
             f"</title><style>{CSS}</style></head><body>",
             f"<h1>Corpus report: {_e(data.name)}</h1>",
             f'<p class="muted">Generated {_e(time.strftime("%Y-%m-%d %H:%M:%S"))} from {_e(data)} by '
             "<code>python -m pipeline.report.corpus_report</code> (polars over the stage Parquet and stats).</p>",
             f"<p id=\"headline\">{_num(first.get('records_in'))} records in, {_num(last.get('records_out'))} out of "
             f"the last stage that ran ({_e(list(stats)[-1])}).</p>",
             '<h2 id="funnel-h">Funnel per stage</h2>', _stage_table(stats)]
    if charts["funnel"]:
        parts.append(_img(charts["funnel"], "records per stage and source", "funnel"))
    rows = [[r["stage"], r["source"], r["records_in"], r["records_out"], r["rejected"], r["unreadable"]]
            for r in funnel.iter_rows(named=True)]
    parts += ['<h2 id="sources-h">Funnel per stage and source</h2>',
              '<p class="muted">Counted in the Parquet: the stage\'s output folder and '
              "rejected/stage=&lt;stage&gt;/.</p>",
              _table("source-funnel", ["stage", "source", "records in", "records out", "rejected", "unreadable"],
                     rows, {2, 3, 4, 5}),
              '<h2 id="languages-h">Funnel per stage and language</h2>', _language_section(language_funnel(data, stats)),
              '<h2 id="reasons-h">Every reason, with counts per source</h2>', _reason_table(reasons),
              '<h2 id="scores-h">Score distributions</h2>',
              '<p class="muted">quality: the probability of reference-quality text from the fastText classifier of '
              "the document's language (score.classifiers); perplexity: KenLM, "
              "lower is closer to the reference text; both per language and source, over every scored document "
              "(scored/).</p>"]
    parts.append(_img(charts["scores"], "score distributions", "scores") if charts["scores"] else
                 '<p class="muted" id="scores-none">No scored documents (the score stage has not run).</p>')
    parts.append(_score_tables(stats.get("score"), sc))
    parts += ['<h2 id="clusters-h">Duplicate clusters</h2>', _cluster_section(duplicate_clusters(data)),
              f'<h2 id="samples-h">Sample documents per rejection reason (first {n_samples} by id)</h2>',
              _samples_section(samples(data, reasons, n_samples)),
              '<h2 id="tokens-h">Tokens and mixture manifests</h2>',
              _manifest_section(manifests(data), _read_json(data / "tokenized" / "counts.json")),
              "</body></html>\n"]
    return "\n".join(parts)


def write_report(data: str | Path, out: str | Path | None = None, n_samples: int = 3) -> Path:
    data = Path(data)
    if not data.is_dir():
        raise CorpusReportError(f"{data}: no such corpus folder (make clean-dedup DATA={data} writes one)")
    page = Path(out) if out else data / "report.html"
    text = build_page(data, n_samples)
    page.parent.mkdir(parents=True, exist_ok=True)
    tmp = page.with_name(f".{page.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(page)
    return page


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.report.corpus_report", description=__doc__.split("\n\n")[0])
    ap.add_argument("data", help="a corpus folder (make clean-dedup's DATA)")
    ap.add_argument("--out", default=None, help="the HTML file (default DATA/report.html)")
    ap.add_argument("--samples", type=int, default=3, help="documents shown per rejection reason (default 3)")
    a = ap.parse_args(argv)
    try:
        page = write_report(a.data, a.out, a.samples)
    except CorpusReportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
