"""token_states: one row per real token, every layer, equal to the model's own hidden states."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from bertflow_mini.geometry.contextual import token_states
from bertflow_mini.encoders.names import load_encoder


def test_token_states_are_the_hidden_states_of_the_real_tokens(tiny_bert_dir, one_torch_thread):
    enc = load_encoder(str(tiny_bert_dir))
    sentences = ["a cat sat.", "the dog ran away quickly over the hill"]
    states = token_states(enc, sentences, batch_size=1)  # batch 1: no padding at all
    ids = [enc.tokenizer(s)["input_ids"] for s in sentences]
    assert states.shape == (enc.n_layers + 1, sum(len(i) - 2 for i in ids), enc.dim)
    with torch.no_grad():
        out = enc.model(**enc.tokenizer(sentences[1], return_tensors="pt"), output_hidden_states=True)
    expected = np.stack([h[0, 1:-1].numpy() for h in out.hidden_states])  # [CLS] … [SEP] dropped
    np.testing.assert_allclose(states[:, len(ids[0]) - 2 :], expected, rtol=1e-5, atol=1e-5)
    padded = token_states(enc, sentences, batch_size=2)  # padding must not add rows or change values
    np.testing.assert_allclose(padded, states, rtol=1e-4, atol=1e-4)


def test_token_states_errors(tiny_bert_dir):
    enc = load_encoder(str(tiny_bert_dir))
    with pytest.raises(ValueError, match="non-empty"):
        token_states(enc, [])
    with pytest.raises(ValueError, match="non-empty"):
        token_states(enc, "a sentence")


def test_input_embedding_average_by_hand(tiny_bert_dir):
    from bertflow_mini.geometry.contextual import input_embedding_average, sentence_token_ids

    enc = load_encoder(str(tiny_bert_dir))
    ids = sentence_token_ids(enc.tokenizer, ["a cat sat.", "the dog"])
    assert ids[1].tolist() == enc.tokenizer("the dog")["input_ids"][1:-1]  # no [CLS]/[SEP]
    E = np.arange(enc.tokenizer.vocab_size * 2, dtype=float).reshape(-1, 2)
    out = input_embedding_average(E, ids)
    np.testing.assert_allclose(out[1], E[ids[1]].mean(axis=0))
    np.testing.assert_allclose(input_embedding_average(E, ids, offset=np.array([1.0, 2.0])), out - [1, 2])
    with pytest.raises(ValueError, match="no tokens"):
        input_embedding_average(E, [np.array([], dtype=int)])
    with pytest.raises(ValueError, match="offset"):
        input_embedding_average(E, ids, offset=np.zeros(3))
    with pytest.raises(ValueError, match="non-empty"):
        sentence_token_ids(enc.tokenizer, [])
