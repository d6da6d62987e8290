"""How well trained a model is, printed wherever the book judges what pretraining did.

A verdict on "what pretraining earns" means little without the pretraining's strength beside it: the
book's ``scratch-bert`` is a small model that saw under one epoch of a small corpus. For a checkpoint
this package trained, :func:`model_strength` reads its training log: the held-out MLM loss at that
checkpoint against two yardsticks — the unigram entropy (predicting every masked token by its
frequency alone) and the uniform guess ``log |V|`` — and the epochs of the corpus it had seen.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from bertflow_mini.encoders import pretrain
from bertflow_mini.encoders.spec import parse_name, short_name

#: What Devlin et al. (2019, §A.2) report for the released BERT checkpoints' pretraining.
PUBLISHED_STRENGTH = {
    "bert-base-uncased": "1M steps of 256 sequences, about 40 epochs over 3.3 B words "
    "(Devlin et al. 2019); its MLM loss is not measured here",
}


@dataclass(frozen=True)
class Strength:
    """A checkpoint's held-out MLM loss, its two yardsticks (nats per masked token) and epochs."""

    model: str
    held_out_loss: float
    unigram: float
    uniform: float
    epochs: float
    step: int

    def __str__(self) -> str:
        return (
            f"{self.model}: held-out MLM loss {self.held_out_loss:.2f} nats per masked token "
            f"(word frequency alone: {self.unigram:.2f}; a uniform guess: {self.uniform:.2f}), "
            f"after {self.epochs:.2f} epoch of its corpus ({self.step:,} steps)"
        )


def model_strength(model: str) -> Strength | None:
    """The strength of one of the book's own checkpoints (``scratch-bert[@pct]``), else None."""
    spec = parse_name(short_name(model))
    if spec.kind != "scratch":
        return None
    pct = spec.percent
    rows, info = pretrain.training_log()
    recipe = info["recipe"]
    step = round(recipe["steps"] * pct / 100)
    losses = {int(r["step"]): r["held_out_loss"] for r in rows}
    if step not in losses:
        raise ValueError(
            f"{model}: the training log has no held-out loss at step {step}"
        )
    config = pretrain.checkpoint_folder(pct) / "config.json"
    vocab = json.loads(config.read_text())["vocab_size"]
    return Strength(
        model=short_name(model),
        held_out_loss=losses[step],
        unigram=float(info["unigram_entropy"]),
        uniform=math.log(vocab),
        epochs=step * recipe["batch_size"] / info["train_sentences"],
        step=step,
    )


def describe_strength(model: str) -> str:
    """One printable line: the measured strength, or what is published, or that none is known."""
    strength = model_strength(model)
    if strength is not None:
        return str(strength)
    name = short_name(model)
    if name in PUBLISHED_STRENGTH:
        return f"{name}: {PUBLISHED_STRENGTH[name]}"
    return f"{name}: trained elsewhere; its pretraining strength is not measured here"
