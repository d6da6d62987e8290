"""Chapter 1's real text: word co-occurrence counts from sentences, and a word's nearest neighbours
labelled by how the two relate in those counts.

:func:`cooccurrence` counts, for a lower-case word split (:func:`simple_words`), how often each word
appears within ``window`` positions of each other word — the setting of word2vec, a word as the
context of its neighbours — in the ``(n_contexts, n_tokens)`` layout of
:mod:`bertflow_mini.chapters.pmi`. :func:`neighbour_table` labels each nearest neighbour
``co-occur`` (syntagmatic) or ``substitute`` (paradigmatic); :func:`second_order_percentile` measures
whether a neighbour keeps the same company as its word (:func:`ppmi_row_cosines`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from bertflow_mini._checks import check_matrix
from bertflow_mini.chapters.pmi import counts_matrix, pmi_matrix
from bertflow_mini.evaluation.vectors import cosine_neighbours


def simple_words(sentence: str) -> list[str]:
    """Lower-case word split: runs of letters, digits and apostrophes (``"Don't!"`` → ``["don't"]``)."""
    return re.findall(r"[a-z0-9']+", sentence.lower())


def cooccurrence(
    sentences: Sequence[str],
    window: int = 2,
    min_count: int = 5,
    tokenizer: Callable[[str], list[str]] | None = None,
    vocab: Sequence[str] | None = None,
) -> tuple[np.ndarray, list[str]]:
    """Word2vec-style co-occurrence counts ``N[c, x]``: how often word ``x`` is within ``window`` of ``c``.

    Sentences are split with ``tokenizer`` (default :func:`simple_words`; pass e.g. a Hugging Face
    tokenizer's ``.tokenize`` for word pieces). Only words occurring at least ``min_count`` times are
    kept, ordered by frequency (ties alphabetically); rarer words are dropped *before* windows are taken,
    as word2vec does. Pass ``vocab`` (e.g. a training split's) to count over exactly those words instead,
    in that order — how held-out counts are made comparable. The matrix is symmetric: rows (centres)
    and columns (context words) share the vocabulary. Returns ``(counts, vocab)``.
    """
    if window < 1 or min_count < 1:
        raise ValueError(
            f"window and min_count must be >= 1, got {window} and {min_count}"
        )
    split = tokenizer or simple_words
    docs = [split(s) for s in sentences]
    if vocab is None:
        freq = Counter(w for doc in docs for w in doc)
        vocab = sorted(
            (w for w, n in freq.items() if n >= min_count), key=lambda w: (-freq[w], w)
        )
    vocab = list(vocab)
    if not vocab:
        raise ValueError(f"no word occurs {min_count} times or more")
    if len(set(vocab)) != len(vocab):
        raise ValueError("vocab has repeated words")
    index = {w: i for i, w in enumerate(vocab)}
    centre, context = [], []
    for doc in docs:
        ids = np.array([index[w] for w in doc if w in index], dtype=np.int64)
        # both directions: pairs (i, i+offset) and (i+offset, i)
        for offset in range(1, window + 1):
            centre += [ids[:-offset], ids[offset:]]
            context += [ids[offset:], ids[:-offset]]
    counts = counts_matrix(
        np.concatenate(centre), np.concatenate(context), len(vocab), len(vocab)
    )
    return counts, vocab


def nearest_words(
    vectors: np.ndarray, vocab: Sequence[str], word: str, k: int = 5
) -> list[str]:
    """The ``k`` words whose rows of ``vectors`` have the highest cosine with ``word``'s (itself excluded)."""
    X = check_matrix(vectors, "vectors")
    if len(vocab) != len(X):
        raise ValueError(f"{len(vocab)} words but {len(X)} vectors")
    if word not in vocab:
        raise ValueError(f"{word!r} is not in the vocabulary")
    nearest = cosine_neighbours(X, [list(vocab).index(word)], k)[0]
    return [vocab[j] for j in nearest]


def neighbour_table(
    vectors: np.ndarray,
    counts: np.ndarray,
    vocab: Sequence[str],
    words: Sequence[str],
    k: int = 5,
) -> pd.DataFrame:
    """For each of ``words``: its ``k`` nearest words by cosine of ``vectors``, each labelled
    ``co-occur`` (PMI > 0 in ``counts``: syntagmatic, a shared topic or phrase) or ``substitute``
    (never more often than chance together: paradigmatic, neighbours because they fill the same slots).
    A word outside ``vocab`` (a smaller data run may not reach its minimum count) is left out."""
    P = pmi_matrix(counts)
    index = {w: i for i, w in enumerate(vocab)}
    rows = []
    for word in (w for w in words if w in index):
        for rank, other in enumerate(nearest_words(vectors, vocab, word, k), start=1):
            relation = "co-occur" if P[index[word], index[other]] > 0 else "substitute"
            rows.append(
                {"word": word, "rank": rank, "neighbour": other, "relation": relation}
            )
    return pd.DataFrame(rows)


def ppmi_row_cosines(counts: np.ndarray) -> np.ndarray:
    """Second-order similarity: the cosine of two words' positive-PMI rows.

    ``PPMI[c, x] = max(PMI(x, c), 0)``, with a pair never seen counted as 0 (the usual
    positive-PMI matrix of distributional semantics). Two words are alike in this sense when
    they keep the same company, whether or not they ever appear together. Returns the
    ``(n_contexts, n_contexts)`` matrix of cosines between rows (0 for an all-zero row).
    """
    P = pmi_matrix(check_matrix(counts, "counts"))
    ppmi = np.where(np.isfinite(P) & (P > 0), P, 0.0)
    norms = np.linalg.norm(ppmi, axis=1, keepdims=True)
    unit = np.divide(ppmi, norms, out=np.zeros_like(ppmi), where=norms > 0)
    result: np.ndarray = unit @ unit.T
    return result


def second_order_percentile(
    counts: np.ndarray, vocab: Sequence[str], table: pd.DataFrame
) -> np.ndarray:
    """For each row of a :func:`neighbour_table` (a word and one of its neighbours): the share of
    the word's other words whose PPMI-row cosine with it (:func:`ppmi_row_cosines`) is below the
    neighbour's. A word drawn at random scores 0.5 on average; 1 is the most alike by company."""
    S = ppmi_row_cosines(counts)
    index = {w: i for i, w in enumerate(vocab)}
    out = []
    for word, other in zip(table["word"], table["neighbour"]):
        i, j = index[word], index[other]
        row = np.delete(S[i], i)  # the word itself is not a candidate
        out.append((row < S[i, j]).sum() / (len(row) - 1))  # nor is the neighbour
    return np.array(out)
