"""Start a run from a Hugging Face ``LlamaForCausalLM`` directory (continued pretraining): ``--init DIR``.

    make pretrain CONFIG=... MANIFEST=... RUN=runs/x INIT=exports/base     (any TP x PP x DP layout)

Checked before any heavy work, each mistake named:

- the architecture: ``model_type: llama`` with what this trainer's model is (SiLU, no attention or MLP bias,
  plain rotary embeddings without scaling, head_dim = hidden_size / heads); tied input and output embeddings
  are accepted and untied (the head starts as a copy of the embedding);
- the shape: keys of the trainer config's ``model`` section that the config file (or ``--set``) names must
  equal the model's (``model.d_model: 128 in the trainer config, INIT's config.json hidden_size is 64``); keys it does
  not name are taken from the model's ``config.json`` (``model_overrides``), so a config with no model shape
  at all trains the model as it is;
- the vocabulary: the model's tokenizer (``tokenizer.model``, else ``tokenizer.json``) must have the pieces of
  the manifest's sentencepiece model, in the same order: the corpus's token ids mean those pieces. A mismatch
  names both sizes and the sha256 of both ordered piece lists.

The weights are renamed to ``train.model.transformer.Llama``'s (the inverse of the export's renaming,
train/export/weights.py), the embedding and head padded with zero rows up to the trainer's padded vocabulary
(padding ids never occur and their logits are masked), checked for shape and finiteness, and set on every
rank in the launched layout by ``train.checkpoint.reshard.apply_state`` (fp32 master weights exactly, Adam starting
fresh). The trainer then saves them as checkpoint 0, so the run record holds what it started from (export it
with ``--step 0``) and a resumed run no longer needs the directory.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch

from train.config import ConfigError

# LlamaConfig key -> trainer config ``model.`` key
SHAPE_KEYS = {"num_hidden_layers": "n_layers", "hidden_size": "d_model", "num_attention_heads": "n_heads",
              "num_key_value_heads": "n_kv_heads", "intermediate_size": "ffn_hidden", "rope_theta": "rope_theta",
              "rms_norm_eps": "norm_eps", "vocab_size": "vocab_size"}
IGNORED_WEIGHTS = ("rotary_emb.inv_freq",)     # a buffer older transformers versions saved


def read_config(init_dir: str | Path) -> dict:
    """The model's config.json, checked to be a Llama this trainer's model can hold; rope_theta flattened."""
    d = Path(init_dir)
    p = d / "config.json"
    if not p.is_file():
        raise ConfigError(f"INIT {d}: no config.json; pass a Hugging Face LlamaForCausalLM directory "
                          "(make export writes one)")
    try:
        hf = json.loads(p.read_text())
    except ValueError as e:
        raise ConfigError(f"INIT {p}: not valid JSON ({e})") from None
    if hf.get("model_type") != "llama":
        raise ConfigError(f"INIT {p}: model_type {hf.get('model_type')!r}; only Llama models (LlamaForCausalLM) "
                          "can be continued")
    for key in ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "vocab_size"):
        if not isinstance(hf.get(key), int):
            raise ConfigError(f"INIT {p}: {key} missing or not an integer")
    hf.setdefault("num_key_value_heads", hf["num_attention_heads"])
    hf.setdefault("rms_norm_eps", 1e-6)
    rope = hf.get("rope_parameters") or {}
    scaling = hf.get("rope_scaling") or {}
    kind = rope.get("rope_type") or scaling.get("rope_type") or scaling.get("type") or "default"
    if kind != "default":
        raise ConfigError(f"INIT {p}: rope type {kind!r}; the trainer has plain rotary embeddings only")
    hf["rope_theta"] = float(rope.get("rope_theta", hf.get("rope_theta", 10000.0)))
    unsupported = [f"{k}: {hf.get(k)!r}" for k, ok in (("hidden_act", "silu"), ("attention_bias", False),
                                                       ("mlp_bias", False)) if hf.get(k, ok) != ok]
    head_dim = hf.get("head_dim") or hf["hidden_size"] // hf["num_attention_heads"]
    if head_dim * hf["num_attention_heads"] != hf["hidden_size"]:
        unsupported.append(f"head_dim: {head_dim} x {hf['num_attention_heads']} heads != hidden_size "
                           f"{hf['hidden_size']}")
    if unsupported:
        raise ConfigError(f"INIT {p}: {'; '.join(unsupported)}: the trainer's Llama has SiLU, no biases and "
                          "head_dim = hidden_size / num_attention_heads")
    return hf


def model_overrides(config_path: str | Path, sets: list[str], hf: dict) -> list[str]:
    """``--set model.k=v`` for the shape keys the config file and ``--set`` leave unnamed: from the model."""
    import yaml

    raw = yaml.safe_load(Path(config_path).read_text()) if Path(config_path).is_file() else None
    named = set(((raw or {}).get("model") or {}) if isinstance(raw, dict) else {})
    named |= {s.split("=", 1)[0].strip()[len("model."):] for s in sets if s.strip().startswith("model.")}
    return [f"model.{ours}={hf[theirs]}" for theirs, ours in SHAPE_KEYS.items() if ours not in named]


def check_shape(mcfg, hf: dict, init_dir) -> None:
    """Every shape key of the resolved model against the model's config.json; all mismatches named."""
    ours = {"n_layers": mcfg.n_layers, "d_model": mcfg.d_model, "n_heads": mcfg.n_heads,
            "n_kv_heads": mcfg.n_kv_heads, "ffn_hidden": mcfg.ffn_hidden, "rope_theta": mcfg.rope_theta,
            "norm_eps": mcfg.norm_eps, "vocab_size": mcfg.vocab_size}
    bad = [f"model.{k}: {ours[k]} in the trainer config, INIT's config.json {theirs} is {hf[theirs]}"
           for theirs, k in SHAPE_KEYS.items() if ours[k] != hf[theirs]]
    if bad:
        raise ConfigError(f"INIT {init_dir}: the model's shape differs from the trainer config: {'; '.join(bad)}. "
                          "Remove those keys from the config's model section (they are then taken from INIT) or "
                          "start from a model of this shape")


# ---------------------------------------------------------------------------------------------- vocabulary

def _pieces_sentencepiece(path: Path) -> list[str]:
    from train.tokenizer.sp_model import read_sp_model

    return [p for p, _, _ in read_sp_model(path).pieces]


def _pieces_tokenizer_json(path: Path) -> list[str]:
    from tokenizers import Tokenizer

    vocab = Tokenizer.from_file(str(path)).get_vocab(with_added_tokens=True)
    by_id = {i: p for p, i in vocab.items()}
    if sorted(by_id) != list(range(len(by_id))):
        raise ConfigError(f"INIT {path}: token ids are not 0..{len(by_id) - 1}")
    return [by_id[i] for i in range(len(by_id))]


def model_vocabulary(init_dir: str | Path) -> tuple[list[str], Path]:
    d = Path(init_dir)
    if (d / "tokenizer.model").is_file():
        return _pieces_sentencepiece(d / "tokenizer.model"), d / "tokenizer.model"
    if (d / "tokenizer.json").is_file():
        return _pieces_tokenizer_json(d / "tokenizer.json"), d / "tokenizer.json"
    raise ConfigError(f"INIT {d}: no tokenizer.model or tokenizer.json; the model's vocabulary cannot be checked "
                      "against the manifest's tokenizer (copy the tokenizer the model was trained with into it)")


def vocabulary_sha256(pieces: list[str]) -> str:
    return hashlib.sha256("\n".join(pieces).encode("utf-8", "surrogatepass")).hexdigest()


def check_vocabulary(init_dir, hf: dict, manifest) -> str:
    """The model's tokenizer must be the manifest's (same pieces, same ids). Returns the vocabulary sha256."""
    theirs, src = model_vocabulary(init_dir)
    ours_path = Path(manifest.tokenizer["abs_path"])
    ours = _pieces_sentencepiece(ours_path)
    a, b = vocabulary_sha256(theirs), vocabulary_sha256(ours)
    if theirs != ours:
        first = next((i for i, (x, y) in enumerate(zip(theirs, ours)) if x != y), min(len(theirs), len(ours)))
        raise ConfigError(f"INIT {init_dir}: the model's vocabulary ({src.name}: {len(theirs)} pieces, sha256 "
                          f"{a[:16]}) is not the manifest's tokenizer ({ours_path.name}: {len(ours)} pieces, sha256 "
                          f"{b[:16]}); first difference at id {first}. The corpus's token ids would mean other "
                          "tokens: tokenize the corpus with the model's tokenizer, or start from a model trained "
                          "with this one")
    if hf["vocab_size"] < len(ours):
        raise ConfigError(f"INIT {init_dir}: config.json vocab_size {hf['vocab_size']} is below the tokenizer's "
                          f"{len(ours)} pieces (sha256 {b[:16]}): ids past it have no embedding")
    return a


# ------------------------------------------------------------------------------------------------- weights

def llama_name(hf_name: str) -> str:
    """``LlamaForCausalLM`` parameter name -> ``train.model.transformer.Llama``'s (inverse of weights.hf_name)."""
    if hf_name == "model.embed_tokens.weight":
        return "embed.embed_tokens.weight"
    if hf_name == "model.norm.weight":
        return "head.norm.weight"
    if hf_name == "lm_head.weight":
        return "head.lm_head.weight"
    if hf_name.startswith("model.layers."):
        return hf_name[len("model."):]
    raise KeyError(hf_name)


class Weights:
    """The directory's weights under ``train.model.transformer.Llama`` names, checked by name and shape up front (from the
    file headers) and read one tensor at a time: each rank reads only its pipeline stage's tensors.
    ``weights(name)`` -> {"fp32": full tensor, vocabulary rows zero-padded, "step": None}."""

    def __init__(self, init_dir, mcfg, hf: dict):
        from train.checkpoint.store import VOCAB_ROWS, meta_model
        from train.checkpoint.hf_files import safetensors_files

        self.dir = d = Path(init_dir)
        self.want = {k: tuple(v.shape) for k, v in meta_model(mcfg).state_dict().items()}
        self.vocab_rows = VOCAB_ROWS
        self.where: dict[str, tuple[Path | None, str]] = {}      # ours -> (safetensors file or None, their name)
        self.loaded: dict[str, torch.Tensor] | None = None
        shapes: dict[str, tuple] = {}
        if (d / "model.safetensors").is_file() or (d / "model.safetensors.index.json").is_file():
            from safetensors import safe_open

            for f in safetensors_files(d):
                with safe_open(str(f), framework="pt") as g:
                    for name in g.keys():
                        shapes[name] = (f, tuple(g.get_slice(name).get_shape()))
        elif (d / "pytorch_model.bin").is_file():
            self.loaded = torch.load(d / "pytorch_model.bin", map_location="cpu", weights_only=True)
            shapes = {k: (None, tuple(v.shape)) for k, v in self.loaded.items()}
        else:
            raise ConfigError(f"INIT {d}: no model.safetensors (or its index, or pytorch_model.bin)")
        unknown = []
        for name, (f, shape) in shapes.items():
            if name.endswith(IGNORED_WEIGHTS):
                continue
            try:
                ours = llama_name(name)
            except KeyError:
                ours = None
            if ours not in self.want:
                unknown.append(name)
                continue
            need = self.want[ours]
            if not (shape == need or (ours in VOCAB_ROWS and shape[1:] == need[1:] and shape[0] <= need[0])):
                raise ConfigError(f"INIT {d}: {name} has shape {shape}, the trainer's model needs {need} "
                                  "(config.json and the weights disagree)")
            self.where[ours] = (f, name)
        if "head.lm_head.weight" not in self.where and hf.get("tie_word_embeddings"):
            if "embed.embed_tokens.weight" in self.where:             # untied from here on: a copy
                self.where["head.lm_head.weight"] = self.where["embed.embed_tokens.weight"]
        if unknown:
            raise ConfigError(f"INIT {d}: weights the trainer's Llama does not have: "
                              f"{', '.join(sorted(unknown)[:5])}" + (f" and {len(unknown) - 5} more"
                                                                     if len(unknown) > 5 else ""))
        missing = sorted(set(self.want) - set(self.where))
        if missing:
            raise ConfigError(f"INIT {d}: weights missing: {', '.join(missing[:5])}"
                              + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""))

    def tensor(self, ours: str) -> torch.Tensor:
        f, name = self.where[ours]
        if f is None:
            t = self.loaded[name]
        else:
            from safetensors import safe_open

            with safe_open(str(f), framework="pt") as g:
                t = g.get_tensor(name)
        t = t.float()
        if ours in self.vocab_rows and t.shape[0] < self.want[ours][0]:
            t = torch.cat([t, t.new_zeros(self.want[ours][0] - t.shape[0], *t.shape[1:])])
        if not torch.isfinite(t).all():
            raise ConfigError(f"INIT {self.dir}: {name} has non-finite values")
        return t

    def __call__(self, ours: str) -> dict:
        return {"fp32": self.tensor(ours), "step": None}

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {k: self.tensor(k) for k in self.want}


def apply(engine, weights: Weights, n_layers: int, tp_group) -> None:
    """Every rank: its slices of the model's weights as module and fp32 master weights; no Adam state."""
    from train.checkpoint.reshard import apply_state

    apply_state(engine, weights, n_layers, tp_group)


def describe(init_dir) -> dict:
    """What the run record keeps about the starting model: where it was, its config and weight files."""
    d = Path(init_dir).resolve()
    files = {f.name: f.stat().st_size for f in sorted(d.iterdir()) if f.suffix in (".safetensors", ".bin", ".json")}
    return {"path": str(d), "config_sha256": hashlib.sha256((d / "config.json").read_bytes()).hexdigest(),
            "files": files}
