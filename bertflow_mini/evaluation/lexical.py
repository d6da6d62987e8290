"""Lexical similarity of a sentence pair: the word-level edit distance of Li et al. (2020, section 4.4).

Li et al. ask whether an embedding's cosine follows *meaning* or *surface form*: on the STS-B
validation pairs they correlate (Spearman) each similarity with the pair's edit distance, and
with the gold score (their Table 6, :data:`bertflow_mini.evaluation.published.LEXICAL_TABLE6`). The paper does
not say whether the distance counts characters or words; words reproduce its gold row (a cell of the
table that depends on the data only), characters do not, so words it is.
"""
from __future__ import annotations

from typing import Hashable, Sequence

import numpy as np
import pandas as pd

from bertflow_mini.data.datasets import tokenize_words
from bertflow_mini.evaluation.sts import spearman


def edit_distance(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Levenshtein distance: the fewest insertions, deletions and substitutions turning ``a`` into ``b``."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        current = [i]
        for j, y in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def word_edit_distances(sent1: Sequence[str], sent2: Sequence[str]) -> np.ndarray:
    """Word-level edit distance of each pair, over the lower-cased word and punctuation tokens of
    :func:`bertflow_mini.data.tokenize_words` (GloVe's tokenisation)."""
    if len(sent1) != len(sent2):
        raise ValueError(f"sent1 and sent2 must be equally long, got {len(sent1)} and {len(sent2)}")
    return np.array(
        [edit_distance(tokenize_words(a), tokenize_words(b)) for a, b in zip(sent1, sent2)],
        dtype=np.int64,
    )


def lexical_table(
    similarities: dict[str, np.ndarray], gold: np.ndarray, distance: np.ndarray
) -> pd.DataFrame:
    """Li et al.'s Table 6 for any similarities: Spearman × 100 of each with the edit distance and
    with the gold score; the gold score's own row comes first."""
    rows = {"gold similarity": np.asarray(gold, dtype=np.float64), **similarities}
    table = {
        name: {"edit distance": spearman(sim, distance), "gold similarity": spearman(sim, gold)}
        for name, sim in rows.items()
    }
    return pd.DataFrame(table).T
