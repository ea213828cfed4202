"""The mixture search's one self-contained page (mix-searches/<name>/report.html), in the ablation report's style:
the weights natural / DoReMi / proposed, predicted against measured bits per byte for every proxy of the swarm
(held-out predictions: each row's law fitted without it) and for the proposal's verify proxies, and the verify
verdicts. Inline SVG, no script and nothing fetched: it opens offline.
"""
from __future__ import annotations

import json
import os

from ablation.report import COLORS, STYLE, esc, fmt

VERDICT_CLASS = {"better": "better", "worse": "worse", "noise": "noise"}


def _read(path: str):
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def weight_bars(mixes: dict[str, dict[str, float]], chart_id: str = "weights", width: int = 900) -> str:
    """Grouped horizontal bars: one group per domain, one bar per mixture."""
    names = list(mixes)
    domains = sorted({d for m in mixes.values() for d in m})
    bar, gap, left = 12, 10, 150
    height = len(domains) * (len(names) * bar + gap) + 40
    scale = (width - left - 80) / max(1e-9, max(v for m in mixes.values() for v in m.values()))
    parts = [f'<svg id="{chart_id}" width="{width}" height="{height}" role="img" aria-label="mixture weights">']
    y = 10
    for d in domains:
        parts.append(f'<text x="{left - 8}" y="{y + len(names) * bar / 2 + 4}" text-anchor="end">{esc(d)}</text>')
        for i, n in enumerate(names):
            v = mixes[n].get(d, 0.0)
            parts.append(f'<rect x="{left}" y="{y}" width="{max(0.5, v * scale):.1f}" height="{bar - 2}" '
                         f'fill="{COLORS[i % len(COLORS)]}"><title>{esc(n)} {esc(d)} {v:.4f}</title></rect>'
                         f'<text x="{left + v * scale + 4:.1f}" y="{y + bar - 3}">{v:.3f}</text>')
            y += bar
        y += gap
    for i, n in enumerate(names):
        parts.append(f'<rect x="{left + i * 140}" y="{height - 18}" width="10" height="10" fill="{COLORS[i % len(COLORS)]}"/>'
                     f'<text x="{left + i * 140 + 14}" y="{height - 9}">{esc(n)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def scatter(points: list[dict], chart_id: str, width: int = 460, height: int = 420) -> str:
    """Predicted (x) against measured (y), the diagonal drawn; points {"x", "y", "label", "color"}."""
    if not points:
        return '<p class="note">No points.</p>'
    lo = min(min(p["x"], p["y"]) for p in points)
    hi = max(max(p["x"], p["y"]) for p in points)
    pad = (hi - lo) * 0.08 or 0.01
    lo, hi = lo - pad, hi + pad
    m = 50

    def sx(v):
        return m + (v - lo) / (hi - lo) * (width - m - 15)

    def sy(v):
        return height - m - (v - lo) / (hi - lo) * (height - m - 15)

    parts = [f'<svg id="{chart_id}" width="{width}" height="{height}" role="img" aria-label="predicted vs measured">',
             f'<rect x="{m}" y="15" width="{width - m - 15}" height="{height - m - 15}" fill="none" stroke="#999"/>',
             f'<line x1="{sx(lo)}" y1="{sy(lo)}" x2="{sx(hi)}" y2="{sy(hi)}" stroke="#bbb" stroke-dasharray="4,3"/>']
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        parts.append(f'<text x="{sx(v):.1f}" y="{height - m + 16}" text-anchor="middle">{v:.3f}</text>'
                     f'<text x="{m - 4}" y="{sy(v) + 4:.1f}" text-anchor="end">{v:.3f}</text>')
    parts.append(f'<text x="{(width + m) / 2}" y="{height - 8}" text-anchor="middle">predicted bits per byte</text>'
                 f'<text x="12" y="{height / 2}" transform="rotate(-90 12 {height / 2})" text-anchor="middle">'
                 "measured bits per byte</text>")
    for p in points:
        r = 6 if p.get("big") else 4
        parts.append(f'<circle cx="{sx(p["x"]):.1f}" cy="{sy(p["y"]):.1f}" r="{r}" fill="{p["color"]}" '
                     f'fill-opacity="0.8"><title>{esc(p["label"])}: predicted {p["x"]:.4f}, measured {p["y"]:.4f}'
                     "</title></circle>")
    parts.append("</svg>")
    return "".join(parts)


def _verify_table(ver: dict, targets: list[str]) -> str:
    conf = int(round(ver["confidence"] * 100))
    rows = [f"<table id=\"verdicts\"><tr><th class=l>target</th><th class=l>comparison</th><th>diff (bpb)</th>"
            f"<th>{conf}% paired interval</th><th class=l>verdict</th></tr>"]
    for comp, per in ver["comparisons"].items():
        for t in targets + ["mean"]:
            p = per[t]
            rows.append(f"<tr><td class=l>{esc(t)}</td><td class=l>{esc(comp)}</td><td>{p['diff']:+.4f}</td>"
                        f"<td>[{p['low']:+.4f}, {p['high']:+.4f}]</td>"
                        f"<td class=\"l {VERDICT_CLASS.get(p['verdict'], '')}\">{esc(p['verdict'])}</td></tr>")
    rows.append("</table>")
    return "".join(rows)


def build_page(name: str, meta: dict | None, fit: dict | None, prop: dict | None, ver: dict | None) -> str:
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>Mixture search {esc(name)}</title><style>{STYLE}</style></head><body>",
             f"<h1>Mixture search {esc(name)}</h1>"]
    if meta:
        sw = meta["swarm"]
        parts.append(f'<p>{sw["n"]} proxies on mixtures drawn from a Dirichlet (concentration {sw["concentration"]:g}, '
                     f'seed {sw["seed"]}) around the natural token shares of {esc(", ".join(meta["domains"]))}; '
                     f'{meta["tokens"]:,} tokens per proxy ({meta["steps"]} steps); losses in bits per byte on the '
                     f'targets {esc(", ".join(meta["targets"]))}.</p>')
    if prop:
        f = prop["fit"]
        parts.append(f'<p>Fit: <b>{esc(f["kind"])}</b> law per target; {esc(f["cv_scheme"])} rank correlation '
                     f'(Spearman) of held-out predictions with the measured losses: <b>{fmt(f["cv_spearman"], 3)}</b> '
                     "(" + ", ".join(f"{esc(k)} {fmt(v, 3)}" for k, v in f["cv_spearman_by_kind"].items()) + ").</p>")
        if f.get("warning"):
            parts.append(f'<p class="note"><b>Warning:</b> {esc(f["warning"])}.</p>')
        mixes = {"natural": prop["natural"]}
        if ver:
            mixes["DoReMi step"] = ver["mixtures"].get("doremi_search") or ver["mixtures"]["doremi"]
        mixes["proposed"] = prop["weights"]
        parts += ["<h2>Weights</h2>", weight_bars(mixes)]
        b = prop["constraints"]["binding"]
        parts.append('<p class="note">Bounds the proposal sits on: '
                     + (esc(", ".join(f"{d} ({w})" for d, w in b.items())) if b else "none")
                     + (f'; repetition cap at a budget of {prop["constraints"]["budget"]:,} tokens, max_epochs '
                        f'{prop["constraints"]["max_epochs"]:g}' if prop["constraints"]["budget"] else "")
                     + ". Predicted: " + esc(", ".join(f"{t} {v:.4f}" for t, v in prop["predicted"].items()))
                     + " bits per byte.</p>")
    if fit:
        parts.append("<h2>Predicted against measured, every proxy</h2>")
        targets = fit["fit"]["targets"]
        for i, t in enumerate(targets):
            pts = [{"x": r["cv_predicted"][t], "y": r["measured"][t], "label": r["run"], "color": COLORS[0]}
                   for r in fit["rows"]]
            if ver and prop:
                c = ver["predicted_vs_measured"].get(t)
                if c:
                    pts.append({"x": c["predicted"], "y": c["measured"], "label": "proposal (verify, mean)",
                                "color": COLORS[1], "big": True})
            parts.append(f"<h3>{esc(t)}</h3>" + scatter(pts, f"scatter-{i}"))
        parts.append('<p class="note">Blue: swarm proxies, each predicted by the law fitted without its own row. Red: '
                     "the proposal, predicted by the law fitted on every row, measured by the verify proxies (mean "
                     "over seeds). The dashed line is predicted = measured.</p>")
    if ver:
        targets = [t for t in ver["predicted_vs_measured"]]
        parts += ["<h2>Verify: the proposal against the natural mix and the DoReMi step</h2>",
                  f'<p>{len(ver["seeds"])} paired seeds per arm ({esc(", ".join(map(str, ver["seeds"])))}), '
                  f'{ver["tokens"]:,} tokens each. Difference in bits per byte (lower is better); better or worse '
                  "when the whole interval is on one side of zero, else noise.</p>", _verify_table(ver, targets),
                  "<table id=\"predicted\"><tr><th class=l>target</th><th>predicted</th><th>measured</th>"
                  "<th>interval</th></tr>"
                  + "".join(f"<tr><td class=l>{esc(t)}</td><td>{c['predicted']:.4f}</td><td>{c['measured']:.4f}</td>"
                            f"<td>[{c['low']:.4f}, {c['high']:.4f}]</td></tr>"
                            for t, c in ver["predicted_vs_measured"].items()) + "</table>"]
    else:
        parts.append('<p class="note" id="no-verify">The proposal has not been verified yet '
                     "(glassbox mix-search verify SPEC).</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(spec) -> str:
    out = spec.out_dir
    meta = _read(os.path.join(out, "swarm.json"))
    if meta is not None:
        meta = {**meta, "targets": list(meta.get("targets") or {})}
    page = build_page(spec.name, meta, _read(os.path.join(out, "fit", "fit.json")),
                      _read(os.path.join(out, "fit", "proposal.json")), _read(os.path.join(out, "verify", "results.json")))
    path = os.path.join(out, "report.html")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(page)
    return path
