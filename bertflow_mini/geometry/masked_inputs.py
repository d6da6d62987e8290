"""The softmax inputs Gao et al.'s theorems are about: ``h`` at the positions pretraining predicts.

:func:`bertflow_mini.geometry.token_geometry.softmax_inputs` reads ``h`` at every real token of
unmasked sentences, [CLS] and [SEP] included: a stand-in. Here the sentences are corrupted as
pretraining corrupts them (:func:`bertflow_mini.encoders.mlm.mask_tokens`: 15% of the real tokens
chosen, of those 80% ``[MASK]``, 10% a random token, 10% unchanged) and ``h`` is read only at the
chosen positions, the targets ``y_t`` of the chapter's loss. Several independent draws of the
masking over the same sentences give a sample as large as the stand-in's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from bertflow_mini.encoders.encoder import tokenized
from bertflow_mini.encoders.mlm import IGNORE, MASK_RATE, mask_tokens

if TYPE_CHECKING:
    from transformers import BertForMaskedLM, PreTrainedTokenizerBase


@dataclass(frozen=True)
class MaskedBatch:
    """Sentences as pretraining corrupts them: ``inputs`` (b, t) the corrupted ids, ``attention``
    their attention mask, ``labels`` the original id at each chosen position and ``IGNORE``
    elsewhere."""

    inputs: torch.Tensor
    attention: torch.Tensor
    labels: torch.Tensor


def masked_batch(
    tokenizer: PreTrainedTokenizerBase,
    sentences: Sequence[str],
    *,
    rate: float = MASK_RATE,
    draws: int = 1,
    seed: int = 0,
    max_length: int = 64,
) -> MaskedBatch:
    """``draws`` independent BERT corruptions of ``sentences``, stacked (``draws`` × b rows);
    [CLS], [SEP] and padding are never chosen. Seeded, so the same call gives the same masks."""
    if not sentences:
        raise ValueError("masked_batch needs at least one sentence")
    if draws < 1:
        raise ValueError(f"draws must be at least 1, got {draws}")
    if not 0 < rate <= 1:
        raise ValueError(f"rate must lie in (0, 1], got {rate}")
    batch = tokenized(tokenizer, sentences, max_length, "cpu")
    ids, attention = batch["input_ids"], batch["attention_mask"]
    special = torch.isin(ids, torch.as_tensor(tokenizer.all_special_ids)) | (
        attention == 0
    )
    gen = torch.Generator().manual_seed(seed)
    parts = [
        mask_tokens(
            ids,
            special,
            mask_id=tokenizer.mask_token_id,
            vocab_size=len(tokenizer),
            gen=gen,
            prob=rate,
        )
        for _ in range(draws)
    ]
    return MaskedBatch(
        inputs=torch.cat([inputs for inputs, _ in parts]),
        attention=attention.repeat(draws, 1),
        labels=torch.cat([labels for _, labels in parts]),
    )


def softmax_inputs_at_targets(
    model: BertForMaskedLM, batch: MaskedBatch
) -> tuple[np.ndarray, np.ndarray]:
    """``(h, y)``: the MLM head's softmax inputs (dense → GELU → LayerNorm of the last layer) at the
    chosen positions of ``batch`` as float64 rows, and the target id of each row."""
    chosen = batch.labels != IGNORE
    if not chosen.any():
        raise ValueError("the batch has no chosen position: nothing is predicted")
    device = next(model.parameters()).device
    with torch.no_grad():
        last = model.bert(
            input_ids=batch.inputs.to(device),
            attention_mask=batch.attention.to(device),
        ).last_hidden_state
        h = model.cls.predictions.transform(last[chosen.to(device)])
    return h.double().cpu().numpy(), batch.labels[chosen].numpy()


def masked_softmax_inputs(
    model: BertForMaskedLM,
    tokenizer: PreTrainedTokenizerBase,
    sentences: Sequence[str],
    *,
    draws: int = 1,
    seed: int = 0,
    max_length: int = 64,
) -> tuple[np.ndarray, np.ndarray]:
    """``(h, y)`` at the positions BERT's masking picks in ``draws`` corruptions of ``sentences``:
    the theorem's ``h_t`` and ``y_t`` for these sentences."""
    batch = masked_batch(
        tokenizer, sentences, draws=draws, seed=seed, max_length=max_length
    )
    return softmax_inputs_at_targets(model, batch)
