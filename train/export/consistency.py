"""Does the exported directory compute what the training model computes?

Three checks, all of which must pass:

1. Weights: the safetensors files, read back, are bit-identical to the merged checkpoint in HF names and the
   export dtype, and ``from_pretrained`` reports no missing or unexpected tensor. On a mismatch the first
   differing tensor is named.
2. Logits: a few fixed token sequences (the first held-out validation sequence of up to three sources when the
   run held data out, else two fixed English sentences through the run's tokenizer; plus one sequence of
   seeded random ids over the whole vocabulary, so rare rows of the embedding and head are exercised) through
   (a) ``train.model.transformer.Llama``, one process, fp32, holding the merged weights as exported and (b)
   ``AutoModelForCausalLM.from_pretrained(DIR, dtype=float32)``. Passes when

       max |logit_a - logit_b|  <=  RTOL * max(1, max |logit_a|),   RTOL = 1e-4,

   i.e. 1e-4 absolute for logits of order one and relative to the largest logit beyond that.
   Why 1e-4: both sides do the same fp32 arithmetic in a different order (rotary tables built differently,
   another attention kernel, other matmul blockings), so each logit differs by rounding only: a few fp32 ulps
   (eps = 1.2e-7) per operation, growing roughly with depth; measured on the test runs it is ~1e-6 of the
   largest logit. Every conversion bug is orders of magnitude above 1e-4: a tensor-parallel slice in the wrong
   place or order, a transposed weight, key/value heads split wrongly, the other rotary layout, a wrong
   norm epsilon, a swapped gate/up, or one corrupted tensor move logits by 1e-2 and usually by O(1).
3. Greedy generation: ~20 tokens from two prompts (the first 8 tokens of the first two sequences) by the
   training model (argmax over the real vocabulary, full forward each step) and by ``model.generate(...,
   do_sample=False)`` (key/value cache) must be identical, both stopping at the end-of-document id. Where they
   part, the training model's top-two logit margin at that step is reported: if it is within the logit
   tolerance the step is an exact tie in all but rounding, recorded as ``tie`` and not a failure.

A failure names the largest difference and where it is (sequence, position, token id).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

RTOL = 1e-4
GREEDY_TOKENS = 20
PROMPT_TOKENS = 8
PROBE_MAX_TOKENS = 128
RANDOM_SEED = 0
FALLBACK_TEXTS = [
    "The history of the city begins in the early medieval period, when a small settlement grew up around the "
    "river crossing and the market that served the surrounding farms.",
    "In the second half of the season the team won seven of its last nine games, and the coach was named "
    "manager of the year by the league.",
]


@dataclass
class Probe:
    name: str
    ids: list[int]


def make_probes(cfg, order=None, sp_model: Path | None = None, max_tokens: int = PROBE_MAX_TOKENS) -> list[Probe]:
    """The fixed sequences of the check (see the module docstring)."""
    length = max(2, min(cfg.max_seq_len, max_tokens))
    probes: list[Probe] = []
    if order is not None:
        for s in order.val_sources[:3]:
            ids = [int(t) for t in order.val_sample(s, 0)[:length]]
            probes.append(Probe(f"held-out {order.names[s]} sequence 0", ids))
    elif sp_model is not None:
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=str(sp_model))
        for i, text in enumerate(FALLBACK_TEXTS):
            ids = [t for t in sp.encode(text) if t < cfg.vocab_size][:length]
            if len(ids) >= 2:
                probes.append(Probe(f"fixed text {i}", ids))
    g = torch.Generator().manual_seed(RANDOM_SEED)
    probes.append(Probe(f"random ids (seed {RANDOM_SEED})",
                        torch.randint(0, cfg.vocab_size, (length,), generator=g).tolist()))
    if getattr(cfg, "packs_documents", False):
        probes = [one_document(p, cfg.eos_id, cfg.vocab_size) for p in probes]
    return probes


def one_document(probe: Probe, eos_id: int, vocab_size: int) -> Probe:
    """A model trained with document masking computes a packed row as separate documents; an exported model
    (Hugging Face, one causal sequence per row) is the same network on one document, so a probe is
    reduced to its longest document (the stretch between two end-of-document ids, the first included), and
    random ids avoid that id."""
    if probe.name.startswith("random"):
        return Probe(probe.name + f", no id {eos_id}", [(t + 1) % vocab_size if t == eos_id else t for t in probe.ids])
    if eos_id not in probe.ids[:-1]:
        return probe
    pieces, start = [], 0
    for i, t in enumerate(probe.ids):
        if t == eos_id:
            pieces.append(probe.ids[start:i + 1])
            start = i + 1
    pieces.append(probe.ids[start:])
    return Probe(probe.name + " (its longest document)", max(pieces, key=len))


def greedy_prompts(probes: list[Probe]) -> list[list[int]]:
    text = [p for p in probes if not p.name.startswith("random")] or probes
    return [p.ids[:PROMPT_TOKENS] for p in (text * 2)[:2]]


@dataclass
class Outputs:
    logits: list[torch.Tensor]           # per probe [T, vocab_size], fp32
    greedy: list[list[int]]              # per prompt, the generated ids
    margins: list[list[float]] | None = None   # training model: top-2 logit margin per generated step


@torch.no_grad()
def reference_outputs(model, vocab_size: int, probes: list[Probe], prompts: list[list[int]], new_tokens: int,
                      eos_id: int | None) -> Outputs:
    logits = [model(torch.tensor([p.ids]))[0][0, :, :vocab_size].float() for p in probes]
    greedy, margins = [], []
    for prompt in prompts:
        ids, steps, gaps = list(prompt), [], []
        for _ in range(new_tokens):
            row = model(torch.tensor([ids]))[0][0, -1, :vocab_size].float()
            top = torch.topk(row, 2)
            nxt = int(top.indices[0])
            gaps.append(float(top.values[0] - top.values[1]))
            ids.append(nxt)
            steps.append(nxt)
            if nxt == eos_id:
                break
        greedy.append(steps)
        margins.append(gaps)
    return Outputs(logits, greedy, margins)


@torch.no_grad()
def hf_outputs(export_dir: Path, probes: list[Probe], prompts: list[list[int]], new_tokens: int,
               eos_id: int | None, pad_id: int | None) -> tuple[Outputs, dict]:
    from transformers import AutoModelForCausalLM, GenerationConfig

    model, info = AutoModelForCausalLM.from_pretrained(str(export_dir), dtype=torch.float32,
                                                       output_loading_info=True)
    model.eval()
    load = {k: sorted(map(str, info.get(k) or [])) for k in ("missing_keys", "unexpected_keys", "mismatched_keys")}
    load["missing_keys"] = [k for k in load["missing_keys"] if "rotary_emb" not in k]
    logits = [model(torch.tensor([p.ids])).logits[0].float() for p in probes]
    gen = GenerationConfig(do_sample=False, max_new_tokens=new_tokens, eos_token_id=eos_id,
                           pad_token_id=pad_id if pad_id is not None else eos_id)
    greedy = []
    for prompt in prompts:
        x = torch.tensor([prompt])
        out = model.generate(x, attention_mask=torch.ones_like(x), generation_config=gen)
        greedy.append(out[0, len(prompt):].tolist())
    del model
    return Outputs(logits, greedy), load


def compare_weights(expected: dict[str, torch.Tensor], export_dir: Path) -> dict:
    """The files against the tensors they should hold, bit for bit."""
    from train.export.weights import read_safetensors

    found = read_safetensors(export_dir)
    missing, unexpected = sorted(set(expected) - set(found)), sorted(set(found) - set(expected))
    mismatch = None
    for name in expected:
        if name not in found:
            continue
        a, b = expected[name], found[name]
        if a.dtype != b.dtype or a.shape != b.shape:
            mismatch = {"tensor": name, "expected": f"{a.dtype} {tuple(a.shape)}",
                        "found": f"{b.dtype} {tuple(b.shape)}"}
            break
        if not torch.equal(a, b):
            diff = (a.float() - b.float()).abs()
            where = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
            mismatch = {"tensor": name, "max_abs_diff": float(diff.max()), "index": list(where),
                        "elements_differing": int((diff > 0).sum())}
            break
    return {"tensors": len(expected), "missing": missing, "unexpected": unexpected, "first_mismatch": mismatch,
            "identical": not missing and not unexpected and mismatch is None}


def compare(ref: Outputs, hf: Outputs, probes: list[Probe], prompts: list[list[int]], rtol: float = RTOL) -> dict:
    """Logit and greedy comparison results; ``passed`` and ``failures`` (messages) included."""
    scale = max([1.0] + [float(t.abs().max()) for t in ref.logits])
    tol = rtol * scale
    per_probe, worst = [], None
    for i, (p, a, b) in enumerate(zip(probes, ref.logits, hf.logits)):
        if a.shape != b.shape:
            per_probe.append({"name": p.name, "tokens": len(p.ids),
                              "error": f"shape {tuple(a.shape)} vs {tuple(b.shape)}"})
            worst = {"probe": p.name, "max_abs_diff": float("inf"), "error": "logit shapes differ"}
            continue
        diff = (a - b).abs()
        m = float(diff.max())
        pos, tok = (int(v) for v in torch.unravel_index(diff.argmax(), diff.shape))
        per_probe.append({"name": p.name, "tokens": len(p.ids), "max_abs_diff": m})
        if worst is None or m > worst["max_abs_diff"]:
            worst = {"probe": p.name, "probe_index": i, "position": pos, "token_id": tok,
                     "input_token": p.ids[pos], "training_model": float(a[pos, tok]), "exported": float(b[pos, tok]),
                     "max_abs_diff": m}
    failures = []
    max_diff = worst["max_abs_diff"] if worst else float("inf")
    if not max_diff <= tol:
        w = worst or {}
        failures.append(f"logits differ by up to {max_diff:.3e} (tolerance {tol:.1e} = {rtol:g} x max(1, max|logit| "
                        f"{scale:.3g})) at {w.get('probe')}, position {w.get('position')}, "
                        f"token id {w.get('token_id')}: "
                        f"training model {w.get('training_model')}, exported {w.get('exported')}")
    greedy = []
    for k, (prompt, a, b) in enumerate(zip(prompts, ref.greedy, hf.greedy)):
        entry = {"prompt": prompt, "training_model": a, "exported": b, "identical": a == b}
        if a != b:
            at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            margin = ref.margins[k][at] if ref.margins and at < len(ref.margins[k]) else None
            entry.update(diverges_at=at, margin=margin)
            if margin is not None and margin <= tol and at < min(len(a), len(b)):
                entry["tie"] = True
            else:
                failures.append(f"greedy generation {k} differs from token {at}: training model {a[at:at + 5]}, "
                                f"exported {b[at:at + 5]} (top-2 margin {margin})")
        greedy.append(entry)
    return {"tolerance": {"rule": "max|diff| <= rtol * max(1, max|logit|)", "rtol": rtol, "atol": tol},
            "max_abs_logit": scale, "max_abs_diff": max_diff, "where": worst, "probes": per_probe,
            "greedy": greedy, "failures": failures, "passed": not failures}


def run_check(export_dir: Path, cfg, reference_sd: dict[str, torch.Tensor], expected_hf: dict[str, torch.Tensor],
              probes: list[Probe], *, eos_id: int | None, pad_id: int | None, rtol: float = RTOL) -> dict:
    """All three checks. ``reference_sd``: Llama names, fp32, rounded to the export dtype."""
    from train.export.weights import load_reference_model

    prompts = greedy_prompts(probes)
    new_tokens = max(1, min(GREEDY_TOKENS, cfg.max_seq_len - max(len(p) for p in prompts)))
    model = load_reference_model(cfg, reference_sd)
    ref = reference_outputs(model, cfg.vocab_size, probes, prompts, new_tokens, eos_id)
    del model
    weights = compare_weights(expected_hf, export_dir)
    hf, load = hf_outputs(export_dir, probes, prompts, new_tokens, eos_id, pad_id)
    result = compare(ref, hf, probes, prompts, rtol)
    result["weights"], result["load"] = weights, load
    if not weights["identical"]:
        m = weights["first_mismatch"] or {}
        result["failures"].insert(0, "weight files differ from the checkpoint: " + (
            f"missing tensors {weights['missing'][:3]}" if weights["missing"] else
            f"unexpected tensors {weights['unexpected'][:3]}" if weights["unexpected"] else
            f"{m['tensor']}: expected {m['expected']}, found {m['found']}" if "expected" in m else
            f"{m['tensor']}: max |diff| {m['max_abs_diff']:.3e} at index {m['index']} "
            f"({m['elements_differing']} elements differ)"))
    if load["missing_keys"] or load["unexpected_keys"] or load["mismatched_keys"]:
        result["failures"].insert(0, f"from_pretrained: missing {load['missing_keys'][:3]}, unexpected "
                                     f"{load['unexpected_keys'][:3]}, mismatched {load['mismatched_keys'][:3]}")
    result["passed"] = not result["failures"]
    result["greedy_new_tokens"] = new_tokens
    return result


def summary(result: dict) -> str:
    lines = [f"consistency: {'PASSED' if result['passed'] else 'FAILED'}: max |logit diff| "
             f"{result['max_abs_diff']:.3e} (tolerance {result['tolerance']['atol']:.1e}) over "
             f"{len(result['probes'])} sequences; greedy {sum(g['identical'] for g in result['greedy'])}/"
             f"{len(result['greedy'])} identical; weights "
             f"{'bit-identical' if result['weights']['identical'] else 'DIFFER'}"]
    val = result.get("val_loss")
    if val and "computed" in val:
        lines.append(f"  held-out loss of the merged checkpoint {val['computed']:.6f}, logged by the run "
                     f"{val['logged']:.6f} (relative {val['rel_diff']:.1e})"
                     + (f"; {val['note']}" if "note" in val else ""))
    elif val:
        lines.append(f"  held-out loss check skipped: {val['skipped']}")
    lines += [f"  - {f}" for f in result["failures"]]
    return "\n".join(lines)
