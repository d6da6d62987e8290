"""How averaging a sentence's token vectors keeps their common component (Chapter 4's sentence
cone): :func:`averaged_share` against a Monte Carlo oracle and hand cases, and
:func:`pooled_token_vectors` against the package's own first-last-avg pooling on a tiny BERT."""

from __future__ import annotations

import numpy as np
import pytest

from bertflow_mini.geometry.isotropy import offset_share
from bertflow_mini.geometry.token_geometry import averaged_share, pooled_token_vectors


def test_averaged_share_by_hand():
    assert averaged_share(1.0, [3, 7]) == 1.0  # identical vectors stay identical
    assert averaged_share(0.0, [3, 7]) == 0.0  # nothing common, nothing kept
    assert averaged_share(0.4, [1, 1]) == pytest.approx(0.4)  # one token: no averaging
    # s = 0.5, n = 4: 0.5 / (0.5 + 0.5 / 4) = 0.8
    assert averaged_share(0.5, [4]) == pytest.approx(0.8)
    for bad in ((0.5, []), (0.5, [0]), (1.5, [2])):
        with pytest.raises(ValueError):
            averaged_share(*bad)


def test_averaged_share_against_monte_carlo():
    rng = np.random.default_rng(0)
    d, n_sentences = 64, 20_000
    c = rng.normal(size=d)
    # ‖c‖² = 0.49 against a remainder of energy 1 per token
    c *= 0.7 / np.linalg.norm(c)
    lengths = rng.integers(3, 15, size=n_sentences)
    sentences = np.stack(
        [c + rng.normal(size=(n, d)).mean(0) / np.sqrt(d) for n in lengths]
    )
    tokens = c + rng.normal(size=(50_000, d)) / np.sqrt(d)
    predicted = averaged_share(offset_share(tokens), lengths)
    assert offset_share(sentences) == pytest.approx(predicted, abs=0.01)


def test_pooled_token_vectors_average_to_first_last_avg(tiny_bert_dir, monkeypatch):
    from bertflow_mini.encoders.encoder import encode
    from bertflow_mini.encoders.names import load_encoder

    monkeypatch.setenv("BERTFLOW_MODELS", str(tiny_bert_dir.parent))
    enc = load_encoder("tiny-bert", device="cpu")
    sentences = ["A man plays a guitar.", "A dog runs in the park today.", "It rains."]
    T, owner = pooled_token_vectors(enc, sentences, batch_size=2)
    lengths = [len(ids) for ids in enc.tokenizer(sentences)["input_ids"]]
    assert np.bincount(owner).tolist() == lengths
    means = np.stack([T[owner == j].mean(0) for j in range(len(sentences))])
    pooled = encode(enc, sentences, "first-last-avg", cache=False, progress=False)
    np.testing.assert_allclose(means, pooled, atol=1e-5)
    with pytest.raises(ValueError):
        pooled_token_vectors(enc, [])
