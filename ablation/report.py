"""The ablation's one self-contained page (report.html) from its results.json: verdicts, tokens kept, epochs per
source, the training curves overlaid, the held-out losses per seed, and every proxy's run directory.

Charts are inline SVG written here: no script, no stylesheet link, no font or image from anywhere else, so the
page opens offline and can be mailed as one file.
"""
from __future__ import annotations

import html
import json
import math
import sys

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
VERDICT_CLASS = {"better": "better", "worse": "worse", "within noise": "noise"}

STYLE = """
body{font-family:system-ui,sans-serif;margin:24px;max-width:1100px;color:#222}
h1{font-size:1.5em} h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:8px 0} td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3} td.l,th.l{text-align:left}
.better{background:#d8f0d8;font-weight:bold} .worse{background:#f6d5d5;font-weight:bold} .noise{background:#eee}
.note{color:#555;font-size:.92em} code{background:#f5f5f5;padding:0 3px}
svg text{font-size:11px;font-family:system-ui,sans-serif}
"""


def esc(x) -> str:
    return html.escape(str(x), quote=True)


def fmt(x, digits: int = 4) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 5, 10) if m * mag >= raw), default=raw)
    start = math.ceil(lo / step) * step
    return [start + i * step for i in range(int((hi - start) / step) + 1)]


def line_chart(series: list[dict], x_label: str, y_label: str, width: int = 900, height: int = 380,
               chart_id: str = "chart") -> str:
    """series: [{"label", "color", "dash" (an SVG dash pattern or ""), "points": [[x, y], ...]}] -> an <svg>."""
    pts = [p for s in series for p in s["points"] if all(math.isfinite(v) for v in p)]
    if not pts:
        return '<p class="note">no points to draw</p>'
    x0, x1 = min(p[0] for p in pts), max(p[0] for p in pts)
    ys = sorted(p[1] for p in pts)
    # the first steps' loss (log of the vocabulary) would flatten the rest: clip the top at the 98th percentile
    y0, y1 = ys[0], ys[min(len(ys) - 1, int(0.98 * len(ys)))]
    if y1 <= y0:
        y1 = y0 + 1
    if x1 <= x0:
        x1 = x0 + 1
    left, right, top, bottom = 60, 190, 12, 40
    pw, ph = width - left - right, height - top - bottom
    sx = lambda x: left + (x - x0) / (x1 - x0) * pw
    sy = lambda y: top + (1 - (min(max(y, y0), y1) - y0) / (y1 - y0)) * ph
    out = [f'<svg id="{esc(chart_id)}" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img">',
           f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="#fff" stroke="#999"/>']
    for t in _ticks(y0, y1):
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{sy(t):.1f}" y2="{sy(t):.1f}" stroke="#eee"/>'
                   f'<text x="{left - 6}" y="{sy(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
    for t in _ticks(x0, x1):
        out.append(f'<text x="{sx(t):.1f}" y="{top + ph + 16}" text-anchor="middle">{t:,.0f}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 6}" text-anchor="middle">{esc(x_label)}</text>'
               f'<text x="14" y="{top + ph / 2}" transform="rotate(-90 14 {top + ph / 2})" '
               f'text-anchor="middle">{esc(y_label)}</text>')
    for i, s in enumerate(series):
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in s["points"] if math.isfinite(x) and math.isfinite(y))
        dash = f' stroke-dasharray="{s["dash"]}"' if s.get("dash") else ""
        out.append(f'<polyline fill="none" stroke="{s["color"]}" stroke-width="1.4"{dash} points="{path}">'
                   f'<title>{esc(s["label"])}</title></polyline>')
        ly = top + 14 + 16 * i
        out.append(f'<line x1="{left + pw + 10}" x2="{left + pw + 34}" y1="{ly - 4}" y2="{ly - 4}" '
                   f'stroke="{s["color"]}" stroke-width="2"{dash}/>'
                   f'<text x="{left + pw + 40}" y="{ly}">{esc(s["label"])}</text>')
    out.append("</svg>")
    return "".join(out)


def dot_chart(domain: str, entries: dict, colors: dict, width: int = 900, chart_id: str = "dots") -> str:
    """Each variant's per-seed losses as dots on one row, its mean as a bar: the spread at a glance."""
    rows = list(entries.items())
    vals = [v for _, e in rows for v in e["spread"]["values"]]
    lo, hi = min(vals), max(vals)
    pad = (hi - lo) * 0.1 or 0.01
    lo, hi = lo - pad, hi + pad
    left, right, top, rh = 150, 30, 10, 26
    height = top + rh * len(rows) + 30
    pw = width - left - right
    sx = lambda x: left + (x - lo) / (hi - lo) * pw
    out = [f'<svg id="{esc(chart_id)}" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img">']
    for t in _ticks(lo, hi):
        out.append(f'<line x1="{sx(t):.1f}" x2="{sx(t):.1f}" y1="{top}" y2="{top + rh * len(rows)}" stroke="#eee"/>'
                   f'<text x="{sx(t):.1f}" y="{top + rh * len(rows) + 14}" text-anchor="middle">{t:.3f}</text>')
    for i, (name, e) in enumerate(rows):
        y = top + rh * i + rh / 2
        c = colors[name]
        out.append(f'<text x="{left - 8}" y="{y + 4}" text-anchor="end">{esc(name)}</text>')
        m = e["spread"]["mean"]
        out.append(f'<line x1="{sx(m):.1f}" x2="{sx(m):.1f}" y1="{y - 9}" y2="{y + 9}" stroke="{c}" stroke-width="3"/>')
        for v in e["spread"]["values"]:
            out.append(f'<circle cx="{sx(v):.1f}" cy="{y:.1f}" r="4" fill="{c}" fill-opacity="0.6">'
                       f'<title>{esc(name)}: {v:.4f}</title></circle>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 2}" text-anchor="middle">held-out loss on {esc(domain)} '
               '(nats per token)</text></svg>')
    return "".join(out)


def _verdicts(res: dict, evaluations: dict | None = None, table_id: str = "verdicts") -> str:
    """The verdict table of the held-out evaluations (or of lm-eval metrics, given as `evaluations`)."""
    conf = int(round(res["confidence"] * 100))
    rows = []
    for dom, e in (evaluations or res["evaluations"]).items():
        for name, v in e["variants"].items():
            s = v["spread"]
            if "vs_base" not in v:
                rows.append(f'<tr><td class="l">{esc(dom)}</td><td class="l">{esc(name)}</td><td>{fmt(s["mean"])}</td>'
                            f'<td>{fmt(s["std"])}</td><td>{s["n"]}</td><td></td><td></td><td class="l">base</td></tr>')
                continue
            p = v["vs_base"]
            cls = VERDICT_CLASS[p["verdict"]]
            rows.append(f'<tr class="verdict"><td class="l">{esc(dom)}</td><td class="l">{esc(name)}</td>'
                        f'<td>{fmt(s["mean"])}</td><td>{fmt(s["std"])}</td><td>{s["n"]}</td><td>{p["diff"]:+.4f}</td>'
                        f'<td>[{p["low"]:+.4f}, {p["high"]:+.4f}]</td><td class="l {cls}">{esc(p["verdict"])}</td></tr>')
            for other, q in (v.get("vs") or {}).items():   # the variant against another one (spec: against)
                cls = VERDICT_CLASS[q["verdict"]]
                rows.append(f'<tr class="against"><td class="l">{esc(dom)}</td><td class="l">{esc(name)} vs '
                            f'{esc(other)}</td><td></td><td></td><td>{q["n"]}</td><td>{q["diff"]:+.4f}</td>'
                            f'<td>[{q["low"]:+.4f}, {q["high"]:+.4f}]</td><td class="l {cls}">{esc(q["verdict"])}</td>'
                            '</tr>')
    table = (f'<table id="{table_id}"><tr><th class="l">{"domain" if evaluations is None else "task/metric"}</th>'
             f'<th class="l">variant</th><th>mean</th><th>sd</th><th>seeds</th><th>diff vs base</th>'
             f'<th>{conf}% interval</th><th class="l">verdict</th></tr>{"".join(rows)}</table>')
    if evaluations is not None:
        return table + ('<p class="note">lm-eval scores of each proxy\'s export; higher is better except for '
                        'perplexities and losses, and the verdicts follow that direction.</p>')
    return (table + f'<p class="note">Loss is the mean cross entropy per token (nats) on held-out text, the same '
            f'tokens for every proxy (one fixed tokenizer). A difference is the variant minus the base, paired seed by '
            f'seed in list order when both ran on the same seeds, else (the null control) Welch\'s two-sample '
            f'interval; <b>better</b> means the whole {conf}% t-interval of the mean difference is below '
            f'zero, <b>worse</b> above zero, else <b>within noise</b>. A row "A vs B" pairs variant A with variant B '
            f'the same way (the spec\'s <code>against</code>).</p>')


def _kept(res: dict) -> str:
    sources = sorted({s for v in res["variants"].values() for s in v["kept"]["sources"]})
    head = "".join(f"<th>{esc(s)}</th>" for s in sources)
    rows = []
    for name, v in res["variants"].items():
        k = v["kept"]
        cells = "".join(f'<td>{k["sources"].get(s, {}).get("tokens", 0):,}</td>' for s in sources)
        stages = ", ".join(f'{st["stage"]} {st["status"]}' for st in v["stages"])
        rows.append(f'<tr><td class="l">{esc(name)}</td><td class="l"><code>{esc(json.dumps(v["overrides"]))}</code>'
                    f'</td><td>{k["documents"]:,}</td><td>{k["tokens"]:,}</td>{cells}'
                    f'<td class="l note">{esc(v["corpus"])}: {esc(stages)}</td></tr>')
    return (f'<table id="kept"><tr><th class="l">variant</th><th class="l">overrides</th><th>documents</th>'
            f'<th>tokens</th>{head}<th class="l">corpus and its stages (this run)</th></tr>{"".join(rows)}</table>'
            '<p class="note">Tokens per source after the variant\'s pipeline, with the fixed tokenizer. Variants with '
            'the same config share one corpus; "skipped" stages were reused from the base corpus unchanged.</p>')


def _epochs(res: dict) -> str:
    rows = []
    for name, v in res["variants"].items():
        p = v["proxies"][0]
        for src, e in p["epochs"].items():
            rows.append(f'<tr><td class="l">{esc(name)}</td><td class="l">{esc(src)}</td><td>{e["available_tokens"]:,}</td>'
                        f'<td>{e["share"]:.3f}</td><td>{e["planned_epochs"]:.2f}</td><td>{fmt(e["realized_epochs"], 2)}</td></tr>')
    tokens = res["proxy"]["tokens"]
    return (f'<table id="epochs"><tr><th class="l">variant</th><th class="l">source</th><th>tokens kept</th>'
            f'<th>share of the budget</th><th>epochs planned</th><th>epochs trained</th></tr>{"".join(rows)}</table>'
            f'<p class="note">Every proxy trains on {tokens:,} tokens whatever its variant kept: a smaller corpus is '
            'repeated more. Sources are weighted by the tokens the variant kept; "epochs trained" comes from the '
            "run's own telemetry (its realized share of the tokens).</p>")


def _proxies(res: dict) -> str:
    rows = []
    for name, v in res["variants"].items():
        for p in v["proxies"]:
            ev = " ".join(f"{esc(k)} {fmt(x)}" for k, x in p["evals"].items())
            rows.append(f'<tr><td class="l">{esc(name)}</td><td>{p["seed"]}</td><td class="l"><code>{esc(p["run"])}</code>'
                        f'</td><td class="l">{esc(p["status"])}</td><td>{fmt(p["final_train_loss"])}</td>'
                        f'<td class="l">{ev}</td></tr>')
    return (f'<table id="proxies"><tr><th class="l">variant</th><th>seed</th><th class="l">run directory</th>'
            f'<th class="l">this invocation</th><th>last training loss</th><th class="l">held-out loss</th></tr>'
            f'{"".join(rows)}</table><p class="note">Each proxy is an ordinary run: <code>glassbox report RUN</code>, '
            '<code>glassbox diagnose RUN</code> and <code>glassbox trace RUN --step N</code> read it.</p>')


def build_page(res: dict) -> str:
    names = list(res["variants"])
    colors = {n: COLORS[i % len(COLORS)] for i, n in enumerate(names)}
    dashes = ("", "6,3", "2,2")     # a variant's seeds: solid, dashed, dotted (then again)
    series = [{"label": f"{n} s{p['seed']}", "color": colors[n], "dash": dashes[j % 3], "points": p["curve"]}
              for n in names for j, p in enumerate(res["variants"][n]["proxies"])]
    px = res["proxy"]
    params = f'{px["params"]:,} parameters, ' if px.get("params") else ""
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Ablation {esc(res['name'])}</title><style>{STYLE}</style></head><body>",
        f"<h1>Ablation {esc(res['name'])}</h1>",
        f'<p>Spec <code>{esc(res["spec"])}</code>, base pipeline config <code>{esc(res["base_config"])}</code>. '
        f'{len(names)} variants x {len(res["variants"]["base"]["seeds"])} seeds; every proxy '
        f'(<code>{esc(px["config"])}</code>, {params}{px["steps"]} steps of {px["global_batch_size"]} x '
        f'{px["seq_len"]} tokens) trains on exactly {px["tokens"]:,} tokens. Fixed tokenizer '
        f'<code>{esc(res["tokenizer"])}</code>. Wall time of this invocation: {res["wall_s"]:.0f} s.</p>',
        "<h2>Verdicts</h2>", _verdicts(res),
    ]
    h = res.get("harness")
    if h and h.get("ran"):
        parts += ["<h2>lm-eval tasks</h2>", _verdicts(res, h["metrics"], "harness")]
    elif h:
        parts.append(f'<p class="note">lm-eval tasks {esc(", ".join(h["tasks"]))}: not run; {esc(h["why"])}.</p>')
    parts += ["<h2>Held-out loss per seed</h2>"]
    for i, (dom, e) in enumerate(res["evaluations"].items()):
        parts.append(f"<h3>{esc(dom)} ({e['tokens']:,} tokens)</h3>" + dot_chart(dom, e["variants"], colors,
                                                                                   chart_id=f"dots-{i}"))
    parts += ["<h2>Tokens each variant kept</h2>", _kept(res),
              "<h2>Epochs per source</h2>", _epochs(res),
              "<h2>Training curves</h2>",
              line_chart(series, "tokens trained", "training loss (on the variant's own data)", chart_id="curves"),
              '<p class="note">Training loss is measured on each variant\'s own data, so curves of different variants '
              'are not a comparison of quality: the held-out losses above are. A variant\'s first seed is drawn solid, '
              'its second dashed, its third dotted.</p>',
              "<h2>Proxies</h2>", _proxies(res), "</body></html>"]
    return "\n".join(parts)


def write_report(results: dict, path: str) -> str:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(build_page(results))
    return path


def main(argv=None) -> int:
    """python -m ablation.report ablations/<name>/results.json: the page again, from the results alone."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m ablation.report ablations/<name>/results.json", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as fh:
        res = json.load(fh)
    import os

    print(write_report(res, os.path.join(os.path.dirname(argv[0]) or ".", "report.html")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
