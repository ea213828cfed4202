"""epochs_beyond_plan: more tokens trained than the manifest planned, so its sources repeat more often than the
mixture decided (needs the run's manifest.json)."""
from __future__ import annotations

from train.record.diagnose.curves import Curves
from train.record.diagnose.finding import Finding
from train.record.diagnose.kind import Facts, Kind
from train.record.diagnose.settings import DiagnoseConfig, EpochsSettings
from train.record.load import finite, num


ADVICE = ("The run trained past the manifest's token plan, so its sources repeat more often than "
          "the mixture decided (max_epochs). Add data, stop at the planned step, or build a "
          "manifest whose total_tokens covers this run (make mix with total_tokens).")


def detect(c: Curves, cfg: DiagnoseConfig, facts: Facts) -> list[Finding]:
    """Tokens trained against the manifest's total_tokens; per source, the passes that makes over its tokens
    (realized share_<source> telemetry where logged, else the manifest's weight)."""
    manifest = facts.manifest
    if not manifest or not c.train:
        return []
    planned = num(manifest.get("total_tokens"))
    sources = manifest.get("sources") if isinstance(manifest.get("sources"), dict) else {}
    tok = [(r["step"], finite(r.get("tokens"))) for r in c.train]
    tok = [(st, t) for st, t in tok if t is not None]
    if not planned or not tok or tok[-1][1] <= planned * (1 + cfg.epochs_tol):
        return []
    trained = tok[-1][1]
    start = next(st for st, t in tok if t > planned)
    last_share = {}
    for r in c.train:
        for name in sources:
            if finite(r.get(f"share_{name}")) is not None:
                last_share[name] = finite(r.get(f"share_{name}"))
    max_epochs = finite(manifest.get("max_epochs"))
    ev: dict = {"planned_tokens": int(planned), "trained_tokens": int(trained), "ratio": trained / planned}
    if max_epochs is not None:
        ev["max_epochs"] = max_epochs
    worst, worst_name = 0.0, None
    for name, src in sorted(sources.items()):
        avail = num((src or {}).get("available_tokens"))
        share = last_share.get(name, num((src or {}).get("weight")))
        if not avail or share is None:
            continue
        ep = trained * share / avail
        ev[f"epochs_{name}"] = ep
        if num(src.get("epochs")) is not None:
            ev[f"planned_epochs_{name}"] = float(src["epochs"])
        if ep > worst:
            worst, worst_name = ep, name
    over_cap = max_epochs is not None and worst > max_epochs * (1 + cfg.epochs_tol)
    msg = (f"trained {trained:,.0f} tokens, {trained / planned:.2g}x the manifest's plan of {planned:,.0f} (step "
           f"{start} on)")
    if worst_name:
        msg += (f": {worst_name} is repeated {worst:.2g} times"
                + (f", past max_epochs {max_epochs:g}" if over_cap else ""))
    return [Finding("epochs_beyond_plan", int(start), int(c.train[-1]["step"]), "warning" if over_cap else "info",
                    msg, ev, ADVICE)]


def needs(c: Curves, cfg: DiagnoseConfig, facts: Facts) -> str | None:
    if not facts.manifest:
        return "no manifest in the record (a Glassbox run directory holds manifest.json)"
    if not any(finite(r.get("tokens")) is not None for r in c.train):
        return "no token counts in the training rows"
    return None


KIND = Kind("epochs_beyond_plan", detect, ADVICE, settings=(EpochsSettings,), needs=needs)
