"""bertflow_mini.data.words: GloVe's word split (by hand, and its coverage of the real data) and
the overlap baselines' word sets."""

from __future__ import annotations

import re

import numpy as np
import pytest

from bertflow_mini.data import load_sts, tokenize_words, word_set
from bertflow_mini.encoders.glove import glove_embed


def test_word_split_covers_stsb_test_in_the_mirror(mirror, real_glove):
    """The split matches GloVe's vocabulary: ≥ 99.5% of STS-B test tokens known, no sentence left empty."""
    sentences = load_sts("STSB", "test").sentences()
    tokens = [t for s in sentences for t in tokenize_words(s)]
    coverage = np.mean([t in real_glove for t in tokens])
    assert coverage > 0.995, coverage
    assert np.linalg.norm(glove_embed(sentences, real_glove), axis=1).min() > 0


@pytest.mark.parametrize(
    "sentence,tokens",
    [
        ("A man is playing a flute.", ["a", "man", "is", "playing", "a", "flute", "."]),
        ("Don't, it's O'Ree's", ["do", "n't", ",", "it", "'s", "o'ree", "'s"]),
        ("I can’t see $5.", ["i", "ca", "n't", "see", "$", "5", "."]),
        ("rock 'n' roll", ["rock", "'", "n", "'", "roll"]),
    ],
)
def test_tokenize_words(sentence, tokens):
    assert tokenize_words(sentence) == tokens


def test_word_set_is_the_runs_of_letters_and_digits():
    sentence = "A cat, a CAT_2! Café's"
    assert word_set(sentence) == {"a", "cat", "2", "café", "s"}
    assert word_set(sentence) == {w.lower() for w in re.split(r"[\W_]+", sentence) if w}
    assert word_set("... !") == set()
