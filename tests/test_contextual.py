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
