"""GloVe as a sentence encoder: the mean of a sentence's word vectors (the static baseline).

Reading the GloVe file is data (:func:`bertflow_mini.data.load_glove`); averaging its vectors into
sentences is what makes it an encoder, so it lives here beside the transformers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bertflow_mini.data.glove import GloVe
from bertflow_mini.data.words import tokenize_words


def glove_embed(sentences: Sequence[str], glove: GloVe) -> np.ndarray:
    """Each sentence as the mean of the GloVe vectors of its known words, (n, dim) float32.

    Unknown words are skipped; a sentence with no known word gets the zero vector (its cosine with
    anything is undefined — the STS harness treats it as 0).
    """
    if isinstance(sentences, str):
        raise ValueError(
            "glove_embed expects a sequence of sentences, not a single string"
        )
    out = np.zeros((len(sentences), glove.dim), dtype=np.float32)
    for i, sentence in enumerate(sentences):
        rows = [glove.index[t] for t in tokenize_words(sentence) if t in glove.index]
        if rows:
            out[i] = glove.vectors[rows].mean(axis=0)
    return out
