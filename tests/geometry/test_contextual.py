"""token_states: one row per real token, every layer, equal to the model's own hidden states."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bertflow_mini.encoders.names import load_encoder
from bertflow_mini.geometry.contextual import token_states


def test_token_states_are_the_hidden_states_of_the_real_tokens(
    tiny_bert_dir, one_torch_thread
):
    enc = load_encoder(str(tiny_bert_dir))
    sentences = ["a cat sat.", "the dog ran away quickly over the hill"]
    states = token_states(enc, sentences, batch_size=1)  # batch 1: no padding at all
    ids = [enc.tokenizer(s)["input_ids"] for s in sentences]
    assert states.shape == (enc.n_layers + 1, sum(len(i) - 2 for i in ids), enc.dim)
    with torch.no_grad():
        out = enc.model(
            **enc.tokenizer(sentences[1], return_tensors="pt"),
            output_hidden_states=True,
        )
    # [CLS] … [SEP] dropped
    expected = np.stack([h[0, 1:-1].numpy() for h in out.hidden_states])
    np.testing.assert_allclose(
        states[:, len(ids[0]) - 2 :], expected, rtol=1e-5, atol=1e-5
    )
    # padding must not add rows or change values
    padded = token_states(enc, sentences, batch_size=2)
    np.testing.assert_allclose(padded, states, rtol=1e-4, atol=1e-4)


def test_token_states_errors(tiny_bert_dir):
    enc = load_encoder(str(tiny_bert_dir))
    with pytest.raises(ValueError, match="non-empty"):
        token_states(enc, [])
    with pytest.raises(ValueError, match="non-empty"):
        token_states(enc, "a sentence")


def test_sentence_token_ids_leave_out_the_special_tokens(tiny_bert_dir):
    from bertflow_mini.geometry.contextual import sentence_token_ids

    enc = load_encoder(str(tiny_bert_dir))
    ids = sentence_token_ids(enc.tokenizer, ["a cat sat.", "the dog"])
    assert ids[1].tolist() == enc.tokenizer("the dog")["input_ids"][1:-1]
    with pytest.raises(ValueError, match="non-empty"):
        sentence_token_ids(enc.tokenizer, [])


def test_occurrence_offset_weighs_each_use_once():
    from bertflow_mini.geometry.contextual import occurrence_offset

    # row 2 never used: it must not count
    E = np.array([[1.0, 0.0], [0.0, 2.0], [5.0, 5.0]])
    ids = [np.array([0, 0, 1]), np.array([0])]  # row 0 used 3 times, row 1 once
    mu, share = occurrence_offset(E, ids)
    rows = E[[0, 0, 1, 0]]  # the occurrences themselves, spelled out
    np.testing.assert_allclose(mu, rows.mean(axis=0))
    assert share == pytest.approx(mu @ mu / (rows**2).sum(axis=1).mean())
    with pytest.raises(ValueError, match="no token"):
        occurrence_offset(E, [np.array([], dtype=np.int64)])
    with pytest.raises(ValueError, match=r"lie in \[0, 3\)"):
        occurrence_offset(E, [np.array([3])])
    with pytest.raises(ValueError, match="finite"):
        occurrence_offset(np.array([[np.nan, 0.0]]), [np.array([0])])


def test_top_direction_frequency_finds_a_frequency_axis():
    from bertflow_mini.geometry.contextual import top_direction_frequency

    rng = np.random.default_rng(0)
    counts = rng.integers(0, 10_000, size=400)
    axis = rng.normal(size=8)
    noise = 0.05 * rng.normal(size=(400, 8))
    # the dominant direction is frequency
    X = np.outer(np.log1p(counts) - 5, axis) + noise
    assert top_direction_frequency(X, counts) > 0.95
    # the sign of a direction is arbitrary
    assert top_direction_frequency(-X, counts) > 0.95
    assert top_direction_frequency(X, rng.permutation(counts)) < 0.2  # unrelated counts
    with pytest.raises(ValueError, match="one finite number per row"):
        top_direction_frequency(X, counts[:-1])
    with pytest.raises(ValueError, match="finite 2-D"):
        top_direction_frequency(X[:, 0], counts)
