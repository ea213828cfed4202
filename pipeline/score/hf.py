"""A Hugging Face sequence-classification or regression model as a quality classifier (`kind: hf`), from a local
folder written by `save_pretrained` (FineWeb-Edu's classifier is the example: one regression output, its score
clipped to 0-5).

`inspect_folder` is the config check: it reads config.json and tokenizer_config.json only (no torch, no
transformers), so a folder without a classification head, a `positive_label` the model does not have or a model
without a maximum length is refused, with the setting named, before Spark starts. `HFClassifier` runs the model
in batches inside the score stage's Python workers: loaded once per process (pipeline/models.py ProcessCache, via
pipeline/score/classifiers.py get_classifier), on the GPU where torch sees one, else on the task's CPU cores.

The score: a regression head's output (clipped to `clip` when given); with several labels the softmax probability
of `positive_label` (the sigmoid of its logit for a multi-label head). Documents are cut at `max_length` tokens,
the model's own maximum unless the config says less.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from pipeline.models import ClassifierError, ModelError
from pipeline.run.spark_files import task_cpus

WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")
TOKENIZER = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "spiece.model", "tokenizer.model",
             "sentencepiece.bpe.model")
# transformers writes a huge number (VERY_LARGE_INTEGER, about 1e30) as model_max_length when a tokenizer has none
UNSET = 10 ** 9
# A document is cut to this many characters per token of max_length before tokenizing: a token holds fewer
# characters than that in practice (English WordPiece about 4 to 5), and a giant page is not tokenized whole
# for its first max_length tokens.
CHARS_PER_TOKEN = 32
FIX = "save one with AutoModelForSequenceClassification.save_pretrained(FOLDER) and its tokenizer's save_pretrained"


def _error(key: str, message: str) -> ClassifierError:
    return ClassifierError(key, message)


@dataclass(frozen=True)
class Head:
    """What the score stage needs to know of a model folder."""
    labels: tuple[str, ...]   # in output order
    regression: bool          # one output whose value is the score
    multi_label: bool         # several independent sigmoid outputs (problem_type multi_label_classification)
    index: int                # the output that is the score (the positive label's)
    max_length: int           # tokens read


def _read_json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _error("model", f"{path} is unreadable: {e}") from None
    if not isinstance(value, dict):
        raise _error("model", f"{path} is not a JSON object")
    return value


def _model_limit(config: dict, tokenizer_config: dict) -> int | None:
    """The longest input the model takes: its position embeddings and its tokenizer's maximum, the smaller."""
    limits = []
    positions = config.get("max_position_embeddings", config.get("n_positions"))
    if isinstance(positions, int) and positions > 0:
        # RoBERTa-style models number positions from padding_idx + 1: 514 embeddings read 512 tokens
        if "roberta" in str(config.get("model_type", "")) and isinstance(config.get("pad_token_id"), int):
            positions -= config["pad_token_id"] + 1
        limits.append(positions)
    tok = tokenizer_config.get("model_max_length")
    if isinstance(tok, (int, float)) and 0 < tok < UNSET:
        limits.append(int(tok))
    return min(limits) if limits else None


def inspect_folder(folder: str | os.PathLike, positive_label: str = "", max_length: int | None = None,
                   clip: list[float] | None = None) -> Head:
    """The head of a saved model folder, or ClassifierError naming the setting at fault (model, positive_label,
    max_length)."""
    d = Path(folder)
    if not d.is_dir():
        raise _error("model", f"{d} is not a folder: a Hugging Face model is the folder save_pretrained wrote")
    if not (d / "config.json").is_file():
        raise _error("model", f"{d} has no config.json: not a Hugging Face model folder ({FIX})")
    config = _read_json(d / "config.json")
    archs = config.get("architectures") or []
    if not any(str(a).endswith("ForSequenceClassification") for a in archs):
        raise _error("model", f"{d} holds no sequence-classification head (architectures: {archs}): a plain encoder "
                              f"gives embeddings, not a score; {FIX}")
    if not any((d / f).is_file() for f in WEIGHTS):
        raise _error("model", f"{d} has no weights (none of {', '.join(WEIGHTS)})")
    if not any((d / f).is_file() for f in TOKENIZER):
        raise _error("model", f"{d} has no tokenizer (none of {', '.join(TOKENIZER)}): save the tokenizer into the "
                              "same folder")
    id2label = config.get("id2label") or {}
    n = config.get("num_labels") or len(id2label) or 2
    labels = tuple(str(id2label.get(str(i), id2label.get(i, f"LABEL_{i}"))) for i in range(n))
    problem = config.get("problem_type")
    regression = n == 1 or problem == "regression"
    if regression and n != 1:
        raise _error("model", f"{d} is a regression model with {n} outputs; the score stage reads one")
    if regression:
        if positive_label:
            raise _error("positive_label", f"the model at {d} has one regression output, whose value is the score; "
                                           "remove positive_label")
        index = 0
    else:
        if clip is not None:
            raise _error("clip", f"the model at {d} gives probabilities of its labels {list(labels)}; clip applies to "
                                 "a regression output")
        if not positive_label:
            raise _error("positive_label", f"the model at {d} has the labels {list(labels)}: name the one whose "
                                           "probability is the score")
        if positive_label not in labels:
            raise _error("positive_label", f"{positive_label!r} is not a label of the model at {d}; its labels are "
                                           f"{list(labels)} (config.json id2label)")
        index = labels.index(positive_label)
    tokenizer_config = _read_json(d / "tokenizer_config.json") if (d / "tokenizer_config.json").is_file() else {}
    limit = _model_limit(config, tokenizer_config)
    if max_length is None:
        if limit is None:
            raise _error("max_length", f"the model at {d} states no maximum length (config.json has no "
                                       "max_position_embeddings, the tokenizer no model_max_length): set max_length "
                                       "to the tokens it was trained on, e.g. 512")
        max_length = limit
    elif limit is not None and max_length > limit:
        raise _error("max_length", f"{max_length} is more than the model at {d} reads ({limit} tokens)")
    return Head(labels, regression, problem == "multi_label_classification", index, max_length)


class HFClassifier:
    """`predict_proba(texts, langs) -> [score or None]` with a Hugging Face model folder; loads on first use."""

    def __init__(self, folder: str | os.PathLike, positive_label: str = "", max_length: int | None = None,
                 batch_size: int = 32, clip: list[float] | None = None):
        self.folder = Path(folder)
        self.positive_label, self.batch_size = positive_label, batch_size
        self.clip = tuple(clip) if clip else None
        self.head = inspect_folder(self.folder, positive_label, max_length, clip)
        self._model = self._tokenizer = self._device = None

    def load(self):
        if self._model is None:
            # The hub must never be asked: set before huggingface_hub reads its constants on import.
            for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
                os.environ.setdefault(key, "1")
            os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # Spark forks workers
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
            try:
                tokenizer = AutoTokenizer.from_pretrained(self.folder, local_files_only=True)
                model = AutoModelForSequenceClassification.from_pretrained(self.folder, local_files_only=True)
            except (OSError, ValueError, RuntimeError) as e:
                raise ModelError(f"Hugging Face model at {self.folder} could not be loaded ({e})") from None
            self._device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            self._model, self._tokenizer = model.to(self._device).eval(), tokenizer
        return self._model

    def predict_proba(self, texts: list[str | None], langs: list[str | None] | None = None) -> list[float | None]:
        """The score per text; None for missing, empty or whitespace-only text."""
        import torch

        model = self.load()
        if self._device.type == "cpu" and (cores := task_cpus()):
            # a Spark task gets spark.task.cpus cores; torch would start one thread per core of the machine in
            # every concurrent task, and oversubscribed cores run slower than idle ones
            torch.set_num_threads(cores)
        head, cut = self.head, self.head.max_length * CHARS_PER_TOKEN
        where = [i for i, t in enumerate(texts) if t and not t.isspace()]
        where.sort(key=lambda i: len(texts[i]))  # similar lengths in a batch: less padding
        out: list[float | None] = [None] * len(texts)
        with torch.inference_mode():
            for start in range(0, len(where), self.batch_size):
                part = where[start:start + self.batch_size]
                enc = self._tokenizer([texts[i][:cut] for i in part], truncation=True, max_length=head.max_length,
                                      padding=True, return_tensors="pt").to(self._device)
                logits = model(**enc).logits.float()
                if head.regression:
                    scores = logits[:, 0]
                    if self.clip:
                        scores = scores.clamp(self.clip[0], self.clip[1])
                elif head.multi_label:
                    scores = torch.sigmoid(logits[:, head.index])
                else:
                    scores = torch.softmax(logits, dim=-1)[:, head.index]
                for i, s in zip(part, scores.cpu().tolist()):
                    out[i] = float(s)
        return out
