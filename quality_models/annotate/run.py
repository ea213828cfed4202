"""`glassbox annotate`: grade N documents of a corpus with a large model, into a label file.

    glassbox annotate DATA --url http://127.0.0.1:8000/v1 --n 2000 --out annotations/edu [--lang en --source web]
    make annotate DATA=data/sample URL=https://api.example.com/v1 NAME=some-model N=2000 OUT=annotations/edu

INPUT is what `glassbox train-classifier` reads (quality_models/inputs.py): a pipeline DATA folder's kept
documents, JSONL or Parquet files, with the same ``:source=,lang=`` options. N documents are sampled stratified
by (source, lang) (sample.py), each is put into its language's rubric (rubric.py) and sent to the endpoint's
/v1/chat/completions by train/serving/batch.py, which bounds concurrency, retries with backoff (honouring
Retry-After), paces to --rpm, appends and flushes each result, and skips ids already answered. OUT holds:

- requests.jsonl: the sample as batch requests (rewritten only if identical: another sample needs another OUT);
- results.jsonl: batch's results, the resume state: a killed run rerun with the same command sends only the
  documents without a result, so no document is paid for twice;
- labels.jsonl: the annotation contract (docs/quality.md), derived from the two at the end of every run;
- summary.json: counts by status, the grade histogram, per stratum (also printed).

Exit status as batch's: 1 while some documents have no result yet (rerun), else 0; 2 with one line for a
mistake in the inputs (no such file, nothing left after the filters, a rubric without ``{document}``).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections import Counter, defaultdict
from dataclasses import asdict
from pathlib import Path

from quality_models.annotate import grades, rubric, sample
from quality_models.inputs import InputError, parse_spec, read_input


def _split(values: list[str] | None) -> list[str]:
    return [v for arg in values or [] for v in arg.split(",") if v]


def documents(args, rubrics: dict, skipped: Counter) -> list:
    """Every document of the inputs that passes the filters and has a rubric for its language."""
    docs = []
    for arg in args.inputs:
        docs += read_input(parse_spec(arg), skipped)
    if rubric.ANY not in rubrics:
        from quality_models.train import keep_languages   # a document without a language gets lid.176's

        docs = keep_languages(docs, sorted(rubrics), skipped)
    docs = sample.select(docs, _split(args.lang), _split(args.source), skipped)
    if not docs:
        filters = ", ".join(f"--{k} {','.join(_split(getattr(args, k)))}" for k in ("lang", "source")
                            if getattr(args, k))
        why = "; ".join(f"{k}: {v}" for k, v in sorted(skipped.items())) or "no documents with text"
        raise InputError(f"{' '.join(args.inputs)}: no document to annotate{' with ' + filters if filters else ''} "
                         f"({why})")
    return docs


def requests_of(picked: list, rubrics: dict, max_chars: int, max_tokens: int, temperature: float) -> list[dict]:
    out = []
    for d in picked:
        text, cut = rubric.truncate(d.text, max_chars)
        r = rubric.for_language(rubrics, d.lang)
        out.append({"id": sample.key(d), "messages": [{"role": "user", "content": r.prompt(text)}],
                    "max_tokens": max_tokens, "temperature": temperature,
                    "annotate": {"source": d.source, "lang": d.lang, "text": text, "truncated": cut,
                                 "rubric": r.identity}})
    return out


def write_requests(path: Path, requests: list[dict]) -> None:
    """Written once; a rerun must ask for the same sample, or its results would answer other prompts."""
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in requests).encode("utf-8")
    if path.exists():
        if path.read_bytes() != data:
            raise InputError(f"{path}: written by an annotation with another sample or prompt (inputs, --n, --seed, "
                             "--lang, --source, --rubric, --max-chars, --max-tokens or --temperature differ); "
                             "rerun with the same arguments to continue it, or give another --out")
        return
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue                      # a torn last line: batch cuts it off on the next run
        if isinstance(rec, dict) and "id" in rec:
            rows.append(rec)
    return rows


def label_rows(requests: list[dict], results: list[dict], model: str | None) -> list[dict]:
    """One row in the annotation contract per request with a result, in the sample's order."""
    by_id = {json.dumps(r["id"]): r for r in results}
    rows = []
    for req in requests:
        res = by_id.get(json.dumps(req["id"]))
        if res is None:
            continue
        meta = req["annotate"]
        row = {"id": req["id"], "source": meta["source"], "lang": meta["lang"], "text": meta["text"]}
        if "error" in res:
            row.update(grade=None, status=grades.ERROR, reply=None, error=res["error"])
        else:
            reply = res.get("output")
            grade, status = grades.parse_grade(reply)
            row.update(grade=grade, status=status, reply=reply)
        row.update(model=res.get("model") or model, rubric=meta["rubric"], truncated=meta["truncated"],
                   attempts=res.get("attempts"))
        rows.append(row)
    return rows


def summarize(requests: list[dict], rows: list[dict], skipped: Counter, batch_summary: dict | None) -> dict:
    status = Counter(r["status"] for r in rows)
    hist = Counter(str(r["grade"]) for r in rows if r["grade"] is not None)
    strata: dict[str, dict] = defaultdict(lambda: {"documents": 0, "results": 0, "status": Counter(), "grades": []})
    for req in requests:
        strata[f"{req['annotate']['source']}/{req['annotate']['lang']}"]["documents"] += 1
    for r in rows:
        s = strata[f"{r['source']}/{r['lang']}"]
        s["results"] += 1
        s["status"][r["status"]] += 1
        if r["grade"] is not None:
            s["grades"].append(r["grade"])
    per_stratum = {k: {"documents": v["documents"], "results": v["results"], "status": dict(sorted(v["status"].items())),
                       "mean_grade": round(sum(v["grades"]) / len(v["grades"]), 3) if v["grades"] else None}
                   for k, v in sorted(strata.items())}
    return {"documents": len(requests), "results": len(rows), "pending": len(requests) - len(rows),
            "status": dict(sorted(status.items())), "grades": dict(sorted(hist.items(), key=lambda kv: float(kv[0]))),
            "strata": per_stratum, "skipped": dict(sorted(skipped.items())), "batch": batch_summary}


def report_lines(s: dict) -> list[str]:
    lines = [f"annotate: {s['documents']} documents, {s['results']} with a result, {s['pending']} pending; "
             + ", ".join(f"{k} {v}" for k, v in s["status"].items()),
             "annotate: grades " + (", ".join(f"{k}: {v}" for k, v in s["grades"].items()) or "none")]
    for name, st in s["strata"].items():
        mean = "-" if st["mean_grade"] is None else f"{st['mean_grade']:g}"
        lines.append(f"annotate:   {name}: {st['results']}/{st['documents']}, mean grade {mean}, "
                     + ", ".join(f"{k} {v}" for k, v in st["status"].items()))
    return lines


def write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def finish(out: Path, requests: list[dict], model: str | None, skipped: Counter, batch_summary: dict | None) -> dict:
    """labels.jsonl and summary.json from requests and results: rerunnable at any time, the same bytes."""
    rows = label_rows(requests, read_jsonl(out / "results.jsonl"), model)
    write_atomically(out / "labels.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    s = summarize(requests, rows, skipped, batch_summary)
    write_atomically(out / "summary.json", json.dumps(s, indent=2, ensure_ascii=False) + "\n")
    for line in report_lines(s):
        print(line, file=sys.stderr)
    return s


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="glassbox annotate", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="a DATA folder, JSONL or Parquet files (inputs.py)")
    p.add_argument("--out", required=True, type=Path, help="folder for requests, results, labels and summary")
    p.add_argument("--url", required=True, help="the endpoint's OpenAI base URL, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--model", default=None, help="default: the first model the endpoint lists")
    p.add_argument("--api-key-env", default=None, metavar="NAME",
                   help="environment variable holding the API key, sent as Authorization: Bearer "
                        "(default: OPENAI_API_KEY when it is set, else none)")
    p.add_argument("--n", type=int, default=1000, help="documents to grade (default 1000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lang", action="append", help="only these languages (repeat or comma-separate)")
    p.add_argument("--source", action="append", help="only these sources (repeat or comma-separate)")
    p.add_argument("--rubric", action="append", metavar="[LANG=]FILE",
                   help="a rubric of your own with a {document} placeholder, for every language or for LANG")
    p.add_argument("--max-chars", type=int, default=6000, help="a document is cut to this many characters")
    p.add_argument("--max-tokens", type=int, default=512, help="reply length limit (default 512)")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per attempt")
    p.add_argument("--retries", type=int, default=8)
    p.add_argument("--backoff", type=float, default=1.0)
    p.add_argument("--max-backoff", type=float, default=30.0)
    p.add_argument("--rpm", type=float, default=0.0, help="at most this many requests a minute (default: no limit)")
    p.add_argument("--retry-errors", action="store_true", help="ask again for documents whose answer was an error")
    return p


def main(argv=None) -> int:
    from train.serving import batch

    p = parser()
    args = p.parse_args(argv)
    if args.n < 1 or args.max_chars < 1 or args.max_tokens < 1 or args.concurrency < 1:
        p.error("--n, --max-chars, --max-tokens and --concurrency must be >= 1")
    try:
        headers = batch.auth_headers(args.api_key_env or "OPENAI_API_KEY", required=bool(args.api_key_env))
        rubrics = rubric.choose(args.rubric)
        skipped: Counter = Counter()
        picked = sample.stratified(documents(args, rubrics, skipped), args.n, args.seed)
        requests = requests_of(picked, rubrics, args.max_chars, args.max_tokens, args.temperature)
        args.out.mkdir(parents=True, exist_ok=True)
        write_requests(args.out / "requests.jsonl", requests)
    except (InputError, rubric.RubricError, ValueError) as e:
        print(f"annotate: {e}", file=sys.stderr)
        return 2
    print(f"annotate: {len(requests)} documents from {len({sample.stratum(d) for d in picked})} strata "
          f"(source, lang) -> {args.out}", file=sys.stderr)
    settings = batch.Settings(args.out / "requests.jsonl", args.out / "results.jsonl", batch.normalize_url(args.url),
                              args.model, args.concurrency, args.timeout, args.retries, args.backoff,
                              args.max_backoff, retry_errors=args.retry_errors, headers=headers, rpm=args.rpm)
    try:
        result = asyncio.run(batch.run(settings))
    except SystemExit as e:               # the endpoint never answered: the labels so far, then batch's message
        finish(args.out, requests, args.model, skipped, None)
        print(f"annotate: {e}", file=sys.stderr)
        return 1
    s = finish(args.out, requests, result.model, skipped, asdict(result))
    for what in result.problems:
        print(f"annotate:   {what}", file=sys.stderr)
    print(f"annotate: labels in {args.out / 'labels.jsonl'}", file=sys.stderr)
    return 1 if result.failed or result.invalid or s["pending"] else 0


if __name__ == "__main__":
    sys.exit(main())
