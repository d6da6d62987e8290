"""Lexical similarity of a sentence pair: the word-level edit distance of Li et al. (2020, section 4.4).

Li et al. ask whether an embedding's cosine follows *meaning* or *surface form*: on the STS-B
validation pairs they correlate (Spearman) each similarity with the pair's edit distance, and
with the gold score (their Table 6, :data:`bertflow_mini.evaluation.published.LEXICAL_TABLE6`). The paper does
not say whether the distance counts characters or words; words reproduce its gold row (a cell of the
table that depends on the data only), characters do not, so words it is.

Also the baselines with no semantics that explain the random-init control's strength:
:func:`idf_overlap` (IDF-weighted word overlap), :func:`bag_of_vectors` of a network's input-embedding
rows or of :func:`random_token_vectors`, scored raw and whitened by :func:`score_vectors`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TYPE_CHECKING, cast

import numpy as np
import numpy.typing as npt
import pandas as pd

from bertflow_mini.data.words import tokenize_words, word_set
from bertflow_mini.evaluation.sts import spearman

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from bertflow_mini.evaluation.sts import Embedder


def edit_distance(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Levenshtein distance: the fewest insertions, deletions and substitutions turning ``a`` into ``b``."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        current = [i]
        for j, y in enumerate(b, start=1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y))
            )
        previous = current
    return previous[-1]


def word_edit_distances(sent1: Sequence[str], sent2: Sequence[str]) -> np.ndarray:
    """Word-level edit distance of each pair, over the lower-cased word and punctuation tokens of
    :func:`bertflow_mini.data.tokenize_words` (GloVe's tokenisation)."""
    if len(sent1) != len(sent2):
        raise ValueError(
            f"sent1 and sent2 must be equally long, got {len(sent1)} and {len(sent2)}"
        )
    return np.array(
        [
            edit_distance(tokenize_words(a), tokenize_words(b))
            for a, b in zip(sent1, sent2)
        ],
        dtype=np.int64,
    )


def lexical_table(
    similarities: dict[str, np.ndarray], gold: np.ndarray, distance: np.ndarray
) -> pd.DataFrame:
    """Li et al.'s Table 6 for any similarities: Spearman × 100 of each with the edit distance and
    with the gold score; the gold score's own row comes first."""
    rows = {"gold similarity": np.asarray(gold, dtype=np.float64), **similarities}
    table = {
        name: {
            "edit distance": spearman(sim, distance),
            "gold similarity": spearman(sim, gold),
        }
        for name, sim in rows.items()
    }
    return pd.DataFrame(table).T


# --------------------------------------------------------------------------------------------
# Baselines with no semantics: what a random network's whitened average already is
# --------------------------------------------------------------------------------------------
# A random BERT's vectors, whitened, score about as well as a pretrained one on STS (experiments/
# controls.py). Three baselines say why, each knowing only *which* words two sentences share:
#
# * the random network's own input-embedding rows, averaged per sentence (no layer at all);
# * a bag of random vectors: one seeded Gaussian vector per token id, averaged per sentence: nearly
#   orthogonal in high dimension, so cosine counts shared tokens, and whitening divides out the
#   directions of frequent tokens, which acts like IDF weighting;
# * IDF-weighted word overlap: the same thing written out with no vectors at all.
#
# None of them can tell that two *different* words mean the same: that is what pretraining must add.


def document_idf(
    documents: Sequence[Iterable[Hashable]],
    *,
    smooth: bool = True,
    plus_one: bool = False,
) -> dict[Hashable, float]:
    """Inverse document frequency of each item over ``documents`` (an item counts once per document):
    ``log((N + 1) / (df + 1))`` when ``smooth`` (Zhang et al.'s BERTScore form), else ``log(N / df)``;
    ``plus_one`` adds 1, so no item seen weighs 0."""
    df = Counter(item for doc in documents for item in set(doc))
    n = len(documents)
    return {
        item: (math.log((n + 1) / (d + 1)) if smooth else math.log(n / d))
        + (1 if plus_one else 0)
        for item, d in df.items()
    }


def idf_weights(sentences: Sequence[str]) -> dict[str, float]:
    """Inverse document frequency of each word over ``sentences`` (each sentence a document):
    ``log((1 + N) / (1 + df)) + 1``, the smoothed form (never 0, defined for every word seen)."""
    return cast(
        dict[str, float], document_idf([word_set(s) for s in sentences], plus_one=True)
    )


def idf_overlap(
    sent1: Sequence[str], sent2: Sequence[str], idf: dict[str, float] | None = None
) -> np.ndarray:
    """IDF-weighted Jaccard of the word sets: ``Σ_{w∈A∩B} idf(w) / Σ_{w∈A∪B} idf(w)``.

    ``idf`` defaults to :func:`idf_weights` of the pairs' own sentences; a word it lacks gets the
    largest weight it holds (a word never seen is as rare as the rarest). With every weight equal
    this is :func:`~bertflow_mini.evaluation.sts.word_overlap`. Two empty sentences score 0."""
    if len(sent1) != len(sent2):
        raise ValueError(
            f"sent1 and sent2 must be equally long, got {len(sent1)} and {len(sent2)}"
        )
    idf = idf_weights(list(sent1) + list(sent2)) if idf is None else idf
    rare = max(idf.values(), default=1.0)
    out = np.zeros(len(sent1))
    for i, (a, b) in enumerate(zip(sent1, sent2)):
        A, B = word_set(a), word_set(b)
        union = sum(idf.get(w, rare) for w in A | B)
        out[i] = sum(idf.get(w, rare) for w in A & B) / union if union > 0 else 0.0
    return out


def token_ids(
    sentences: Sequence[str], tokenizer: PreTrainedTokenizerBase, max_length: int = 512
) -> list[list[int]]:
    """The wordpiece ids of each sentence, without [CLS] and [SEP] (what the sentence *says*)."""
    encoded = tokenizer(
        list(sentences),
        add_special_tokens=False,
        truncation=True,
        max_length=max_length,
    )
    return [list(ids) for ids in encoded["input_ids"]]


def random_token_vectors(ids: Sequence[int], dim: int, seed: int = 0) -> np.ndarray:
    """One standard Gaussian vector of width ``dim`` per token id, drawn from a generator seeded by
    ``(seed, id)``: the same id always gets the same vector, whatever else is asked for."""
    if dim < 1:
        raise ValueError(f"dim must be positive, got {dim}")
    out = np.empty((len(ids), dim), dtype=np.float64)
    for row, i in enumerate(ids):
        out[row] = np.random.default_rng([seed, int(i)]).standard_normal(dim)
    return out


def bag_of_vectors(
    ids: Sequence[Sequence[int] | np.ndarray],
    table: np.ndarray | Callable[[list[int]], npt.ArrayLike],
) -> np.ndarray:
    """Each sentence's mean of ``table`` rows over its token ids: ``table`` is an ``(vocab, d)`` array
    (a network's input-embedding matrix) or a callable ``ids -> (len(ids), d)`` (e.g.
    :func:`random_token_vectors`). A sentence with no tokens is the zero vector."""
    lookup = table if callable(table) else (lambda rows: np.asarray(table)[list(rows)])
    vocab = sorted({i for sent in ids for i in sent})
    vectors = np.asarray(lookup(vocab), dtype=np.float64)
    if vectors.ndim != 2 or len(vectors) != len(vocab):
        raise ValueError(f"the table gave shape {vectors.shape} for {len(vocab)} ids")
    if not np.isfinite(vectors).all():
        raise ValueError("the table holds NaN or infinity")
    where = {i: r for r, i in enumerate(vocab)}
    out = np.zeros((len(ids), vectors.shape[1]))
    for row, sent in enumerate(ids):
        if len(sent):
            out[row] = vectors[[where[i] for i in sent]].mean(0)
    return out


def score_vectors(
    task: str,
    embed: Embedder,
    methods: Sequence[str] = ("none", "whitening"),
    fit: str = "target",
) -> dict[str, float]:
    """Spearman × 100 (``wmean``) of ``task``'s test pairs for any ``embed(sentences) -> (n, d)``,
    raw and after each post-processor fitted on ``fit``'s sentences, as
    :class:`~bertflow_mini.evaluation.reproduce.Evaluation` does for a network."""
    from bertflow_mini.data import load_sts
    from bertflow_mini.evaluation.methods import make_postprocessor
    from bertflow_mini.evaluation.reproduce import fitting_sentences
    from bertflow_mini.evaluation.sts import cosine_after, score_similarities

    pairs = load_sts(task, "test")
    a, b = embed(list(pairs.sent1)), embed(list(pairs.sent2))
    posts = {method: make_postprocessor(method) for method in methods}
    fit_on = None
    if any(post is not None for post in posts.values()):  # encoded once, for every fit
        fit_on = embed([s for _, sents in fitting_sentences(task, fit) for s in sents])
    return {
        method: score_similarities(pairs, cosine_after(a, b, post, fit_on)).wmean
        for method, post in posts.items()
    }
