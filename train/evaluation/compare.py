"""A blind side-by-side of two exported models on a fixed prompt set, as files people can score.

``compare EXPORT_A EXPORT_B --out eval/compare.csv`` generates an answer from each model for every prompt of
``train/evaluation/prompts.jsonl`` (``{"id", "category", "prompt"}`` per line; ``--prompts`` for another set) and
writes:

- ``compare.csv``: one row per prompt: id, category, prompt, ``answer_1``, ``answer_2`` and empty columns
  ``score_1``, ``score_2`` (1-5), ``preferred`` (1, 2 or tie) and ``notes`` for the raters;
- ``compare.md``: the same as a readable sheet with blanks to fill in;
- ``compare.key.json``: which model is answer 1 and which is answer 2 for each prompt, the two model
  directories, the generation parameters and the shuffle seed. Keep it away from the raters.

Which model appears as answer 1 is shuffled per prompt with ``--seed``: exactly half the prompts (rounded) put
model A first, in a seeded order, so position bias cancels and the sheet alone does not say which is which.
``tally SHEET.csv`` reads the filled sheet with its key and reports each model's mean score and wins.

Generation is plain continuation of the prompt text (the models are base models), which follows the
end-of-document token as every document does in the packed training stream: greedy by default
(``--temperature 0``), or sampled with ``--temperature``/``--top-p`` and a fixed seed per prompt, for at most
``--max-new-tokens`` tokens, ending at the end-of-document token or a ``--stop`` string. A prompt longer than
the model's context keeps its last tokens; the room left bounds the answer. All of it is recorded in the key.
"""
from __future__ import annotations

import csv
import json
import random
import time
from pathlib import Path

import torch

from train.loop.prompts import PROMPTS, read_prompts  # noqa: F401  (the bundled prompt set)
SCORE_COLUMNS = ["score_1", "score_2", "preferred", "notes"]


@torch.no_grad()
def generate_answers(model_dir: str | Path, prompts: list[dict], *, max_new_tokens: int = 64,
                     temperature: float = 0.0, top_p: float = 1.0, seed: int = 0, stop: list[str] = (),
                     doc_start: bool = True) -> list[dict]:
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    ctx = int(getattr(model.config, "max_position_embeddings", 2048))
    eos = model.config.eos_token_id
    eos = eos[0] if isinstance(eos, list) else eos
    pad = model.config.pad_token_id if model.config.pad_token_id is not None else eos
    out = []
    for i, p in enumerate(prompts):
        # A document starts after an end-of-document token in the packed training stream: so does the prompt.
        ids = ([eos] if doc_start and eos is not None else []) + tok.encode(p["prompt"], verbose=False)
        truncated = len(ids) > ctx - max(1, min(max_new_tokens, ctx // 2))
        if truncated:
            ids = ids[-(ctx - max(1, min(max_new_tokens, ctx // 2))):]
        room = min(max_new_tokens, ctx - len(ids))
        cfg = GenerationConfig(max_new_tokens=room, do_sample=temperature > 0, eos_token_id=eos, pad_token_id=pad,
                               **({"temperature": temperature, "top_p": top_p} if temperature > 0 else {}))
        torch.manual_seed(seed + i)          # per prompt: the same answer whatever else is generated
        x = torch.tensor([ids])
        new = model.generate(x, attention_mask=torch.ones_like(x), generation_config=cfg)[0, len(ids):].tolist()
        text = tok.decode(new, skip_special_tokens=True)
        finish = "stop" if eos is not None and new and new[-1] == eos else "length"
        cut = [text.find(s) for s in stop if s and text.find(s) >= 0]
        if cut:
            text, finish = text[:min(cut)], "stop"
        out.append({"id": p["id"], "text": text.strip(), "prompt_tokens": len(ids), "new_tokens": len(new),
                    "prompt_truncated": truncated, "finish_reason": finish})
    del model
    return out


def assign_sides(ids: list[str], seed: int) -> dict[str, bool]:
    """id -> True when model A is answer 1. Half the prompts each way, in a seeded order."""
    flips = [i % 2 == 0 for i in range(len(ids))]
    random.Random(seed).shuffle(flips)
    return dict(zip(ids, flips))


def paths_for(out: str | Path) -> dict[str, Path]:
    out = Path(out)
    stem = out.with_suffix("") if out.suffix else out
    return {"csv": stem.with_suffix(".csv"), "md": stem.with_suffix(".md"), "key": stem.with_suffix(".key.json")}


def _md_block(text: str) -> str:
    text = text if text.strip() else "(empty answer)"
    return "\n".join("    " + line for line in text.splitlines()) or "    "


def write_sheet(prompts, answers_a, answers_b, a_first: dict[str, bool], out, meta: dict) -> dict[str, Path]:
    files = paths_for(out)
    files["csv"].parent.mkdir(parents=True, exist_ok=True)
    by_a = {r["id"]: r for r in answers_a}
    by_b = {r["id"]: r for r in answers_b}
    rows, key_items = [], {}
    for p in prompts:
        first, second = (by_a, by_b) if a_first[p["id"]] else (by_b, by_a)
        rows.append({"id": p["id"], "category": p["category"], "prompt": p["prompt"],
                     "answer_1": first[p["id"]]["text"], "answer_2": second[p["id"]]["text"],
                     **{c: "" for c in SCORE_COLUMNS}})
        key_items[p["id"]] = {"answer_1": "A" if a_first[p["id"]] else "B",
                              "answer_2": "B" if a_first[p["id"]] else "A",
                              "A": {k: v for k, v in by_a[p["id"]].items() if k != "text"},
                              "B": {k: v for k, v in by_b[p["id"]].items() if k != "text"}}
    with open(files["csv"], "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=["id", "category", "prompt", "answer_1", "answer_2", *SCORE_COLUMNS])
        w.writeheader()
        w.writerows(rows)
    lines = ["# Blind side-by-side", "",
             f"{len(rows)} prompts, two answers each from two models; which model wrote answer 1 changes from "
             "prompt to prompt. Score each answer from 1 (useless) to 5 (excellent) for correctness, coherence "
             "and fluency, and mark the one you prefer (1, 2 or tie). Fill in the same columns of "
             f"`{files['csv'].name}` (score_1, score_2, preferred, notes) to have them tallied.", ""]
    for r in rows:
        lines += [f"## {r['id']} ({r['category']})" if r["category"] else f"## {r['id']}", "", "Prompt:", "",
                  _md_block(r["prompt"]), "", "Answer 1:", "", _md_block(r["answer_1"]), "", "Answer 2:", "",
                  _md_block(r["answer_2"]), "", "Score 1: ____   Score 2: ____   Preferred (1 / 2 / tie): ____", "",
                  "Notes:", "", "---", ""]
    files["md"].write_text("\n".join(lines), encoding="utf-8")
    key = {**meta, "sheet": files["csv"].name, "items": key_items}
    files["key"].write_text(json.dumps(key, indent=1) + "\n", encoding="utf-8")
    return files


def _export_info(d: Path) -> dict:
    rec = Path(d) / "glassbox_export.json"
    if rec.is_file():
        r = json.loads(rec.read_text())
        return {"dir": str(Path(d).resolve()), "run_dir": r.get("run_dir"), "step": r.get("step")}
    return {"dir": str(Path(d).resolve())}


def compare(model_a, model_b, out, *, prompts_path=PROMPTS, max_new_tokens=64, temperature=0.0, top_p=1.0,
            seed=0, stop=()) -> dict[str, Path]:
    prompts = read_prompts(prompts_path)
    params = {"max_new_tokens": max_new_tokens, "temperature": temperature,
              "top_p": top_p if temperature > 0 else None, "do_sample": temperature > 0,
              "decoding": "sampling" if temperature > 0 else "greedy", "seed": seed,
              "seed_rule": "torch.manual_seed(seed + prompt index) before each answer", "stop": list(stop),
              "format": "plain continuation of the prompt text, after the end-of-document token (a new document)",
              "dtype": "float32"}
    t0 = time.perf_counter()
    ans_a = generate_answers(model_a, prompts, max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p,
                             seed=seed, stop=list(stop))
    ans_b = generate_answers(model_b, prompts, max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p,
                             seed=seed, stop=list(stop))
    meta = {"models": {"A": _export_info(model_a), "B": _export_info(model_b)},
            "prompts": str(Path(prompts_path).resolve()), "shuffle_seed": seed, "generation": params,
            "seconds": time.perf_counter() - t0, "time": time.time()}
    return write_sheet(prompts, ans_a, ans_b, assign_sides([p["id"] for p in prompts], seed), out, meta)


def tally(sheet: str | Path, key_path: str | Path | None = None) -> dict:
    """Unblind a filled sheet: per model the mean score, and wins/ties by the 'preferred' column."""
    files = paths_for(sheet)
    key = json.loads(Path(key_path or files["key"]).read_text(encoding="utf-8"))
    with open(files["csv"], newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    scores = {"A": [], "B": []}
    prefs = {"A": 0, "B": 0, "tie": 0}
    for r in rows:
        item = key["items"].get(r["id"])
        if item is None:
            raise ValueError(f"{files['csv']}: prompt {r['id']} is not in the key {key_path or files['key']}")
        for side in ("1", "2"):
            v = (r.get(f"score_{side}") or "").strip()
            if v:
                scores[item[f"answer_{side}"]].append(float(v))
        p = (r.get("preferred") or "").strip().lower()
        if p in ("1", "2"):
            prefs[item[f"answer_{p}"]] += 1
        elif p in ("tie", "=", "0"):
            prefs["tie"] += 1
    return {"models": key["models"], "rated_prompts": sum(1 for r in rows if (r.get("preferred") or "").strip()),
            "mean_score": {m: (sum(v) / len(v) if v else None) for m, v in scores.items()},
            "scored_answers": {m: len(v) for m, v in scores.items()}, "preferred": prefs}
