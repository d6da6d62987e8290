"""Tests for bertflow_mini.geometry.masked_inputs: BERT's corruption of a batch of sentences, and the
softmax inputs at the positions it chooses."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import TOKENIZER_DIR, need, tiny_mlm

from bertflow_mini.encoders.mlm import IGNORE
from bertflow_mini.geometry import masked_inputs as mi

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SENTENCES = [
    "a man plays the guitar .",
    "the cat sits",
    "dogs run in a green field today",
]


@pytest.fixture(scope="module")
def tokenizer():
    need(TOKENIZER_DIR)
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(TOKENIZER_DIR)


def test_masked_batch_corrupts_only_real_tokens_as_bert_does(tokenizer):
    draws = 400
    batch = mi.masked_batch(tokenizer, SENTENCES, draws=draws, seed=3)
    # the oracle: the tokenizer's own ids, special-token mask and padding, repeated per draw
    plain = tokenizer(SENTENCES, padding=True, return_special_tokens_mask=True)
    ids = torch.tensor(plain["input_ids"]).repeat(draws, 1)
    real = (
        (torch.tensor(plain["attention_mask"]) == 1)
        & (torch.tensor(plain["special_tokens_mask"]) == 0)
    ).repeat(draws, 1)
    chosen = batch.labels != IGNORE
    assert batch.inputs.shape == ids.shape
    assert torch.equal(
        batch.attention, torch.tensor(plain["attention_mask"]).repeat(draws, 1)
    )
    # never [CLS], [SEP] or padding; the label is the original token; the rest is untouched
    assert not (chosen & ~real).any()
    assert torch.equal(batch.labels[chosen], ids[chosen])
    assert torch.equal(batch.inputs[~chosen], ids[~chosen])
    # 15% of the real tokens chosen; of those, 80% [MASK], 10% unchanged (binomial, ±5 sd)
    n_real, n_chosen = int(real.sum()), int(chosen.sum())
    assert abs(n_chosen / n_real - 0.15) < 5 * np.sqrt(0.15 * 0.85 / n_real)
    masked = float((batch.inputs[chosen] == tokenizer.mask_token_id).float().mean())
    kept = float((batch.inputs[chosen] == ids[chosen]).float().mean())
    assert abs(masked - 0.8) < 5 * np.sqrt(0.8 * 0.2 / n_chosen)
    assert abs(kept - 0.1) < 5 * np.sqrt(0.1 * 0.9 / n_chosen) + 1e-3
    # seeded: the same call, the same masks; another seed, others
    again = mi.masked_batch(tokenizer, SENTENCES, draws=draws, seed=3)
    assert torch.equal(again.inputs, batch.inputs)
    other = mi.masked_batch(tokenizer, SENTENCES, draws=draws, seed=4)
    assert not torch.equal(other.labels, batch.labels)


def test_rate_one_chooses_every_real_token_once_per_draw(tokenizer):
    batch = mi.masked_batch(tokenizer, SENTENCES, rate=1.0, draws=2)
    lengths = [len(tokenizer(s)["input_ids"]) for s in SENTENCES]
    assert int((batch.labels != IGNORE).sum()) == 2 * sum(n - 2 for n in lengths)


def test_softmax_inputs_at_targets_give_the_models_own_logits(tokenizer):
    model = tiny_mlm()
    batch = mi.masked_batch(tokenizer, SENTENCES, draws=5, seed=1)
    h, y = mi.softmax_inputs_at_targets(model, batch)
    chosen = batch.labels != IGNORE
    assert h.shape == (int(chosen.sum()), model.config.hidden_size)
    np.testing.assert_array_equal(y, batch.labels[chosen].numpy())
    # the oracle: transformers' full forward on the corrupted ids, read at the chosen positions
    with torch.no_grad():
        logits = model(input_ids=batch.inputs, attention_mask=batch.attention).logits
    E = model.get_input_embeddings().weight.detach().double().numpy()
    b = model.cls.predictions.bias.detach().double().numpy()
    np.testing.assert_allclose(h @ E.T + b, logits[chosen].double().numpy(), atol=1e-4)
    # the convenience call is the same masks, the same rows
    h2, y2 = mi.masked_softmax_inputs(model, tokenizer, SENTENCES, draws=5, seed=1)
    np.testing.assert_allclose(h2, h, atol=1e-6)
    np.testing.assert_array_equal(y2, y)


def test_bad_input_is_refused(tokenizer):
    with pytest.raises(ValueError, match="at least one sentence"):
        mi.masked_batch(tokenizer, [])
    with pytest.raises(ValueError, match="draws"):
        mi.masked_batch(tokenizer, SENTENCES, draws=0)
    with pytest.raises(ValueError, match="rate"):
        mi.masked_batch(tokenizer, SENTENCES, rate=0.0)
    nothing = mi.masked_batch(tokenizer, SENTENCES)
    nothing = mi.MaskedBatch(
        nothing.inputs, nothing.attention, torch.full_like(nothing.labels, IGNORE)
    )
    with pytest.raises(ValueError, match="no chosen position"):
        mi.softmax_inputs_at_targets(tiny_mlm(), nothing)
