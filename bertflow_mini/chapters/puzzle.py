"""Chapter 0, made executable: how far apart do the cosines of related and unrelated pairs lie?

The puzzle of the book is that raw BERT vectors give *every* pair of sentences a high cosine. This
module turns that into numbers on the STS Benchmark:

* :func:`random_pairs` — pairs of distinct sentences drawn at random ("two arbitrary sentences");
* :func:`overlap_coefficient` and :func:`auc` — how much two distributions of similarities overlap;
* :func:`separation_row` — the chapter's first table, one row per encoder (or per no-model control);
* :func:`pooling_grid_table` — STS-B Spearman for every pooling of :func:`bertflow_mini.encoders.pooling.pooling_grid`;
* :func:`centred_scores` and :func:`mean_share` — what subtracting the mean vector does.

Defined for Chapter 0 (``book/00-the-puzzle.ipynb``).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import scipy.stats

from bertflow_mini._checks import check_matrix
from bertflow_mini.data import STSPairs
from bertflow_mini.encoders.pooling import LAYER_COMBINES, TOKEN_POOLINGS, parse_pooling
from bertflow_mini.encoders.encoder import Encoder
from bertflow_mini.encoders.encoder import encode
from bertflow_mini.evaluation.sts import cosine_scores, score_pairs, spearman


def random_pairs(n_items: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` index pairs ``(i, j)`` drawn uniformly from ``range(n_items)`` with ``i != j`` always."""
    if n_items < 2 or n < 1:
        raise ValueError(f"need n_items >= 2 and n >= 1, got {n_items} and {n}")
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n_items, n)
    j = (i + rng.integers(1, n_items, n)) % n_items  # an offset in 1 … n_items-1: never i itself
    return i, j


def _sample(x: np.ndarray, name: str) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or len(x) == 0 or not np.isfinite(x).all():
        raise ValueError(f"{name} must be a non-empty 1-D array of finite numbers")
    return x


def overlap_coefficient(a: np.ndarray, b: np.ndarray, bins: int = 100,
                        value_range: tuple[float, float] = (-1.0, 1.0)) -> float:
    """Overlap of two samples' histograms, ``∫ min(p, q)``: 0 = disjoint, 1 = identical.

    Both histograms share ``bins`` equal bins on ``value_range`` (cosines live on [-1, 1]).
    """
    a, b = _sample(a, "a"), _sample(b, "b")
    edges = np.linspace(*value_range, bins + 1)
    p, _ = np.histogram(a, edges, density=True)
    q, _ = np.histogram(b, edges, density=True)
    return float(np.minimum(p, q).sum() * (edges[1] - edges[0]))


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """``P(pos > neg) + P(pos = neg) / 2`` for a random ``pos`` and ``neg`` value: the area under the
    ROC curve, from the Mann–Whitney U statistic (scipy). 0.5 = chance, 1 = perfect separation."""
    pos, neg = _sample(pos, "pos"), _sample(neg, "neg")
    u = scipy.stats.mannwhitneyu(pos, neg, alternative="two-sided").statistic
    return float(u / (len(pos) * len(neg)))


def separation_row(
    random_sims: np.ndarray, pair_sims: np.ndarray, gold: np.ndarray,
    related: float = 4.0, unrelated: float = 1.0,
) -> dict[str, float]:
    """One row of Chapter 0's first table for one way of scoring sentence pairs.

    ``random_sims``: similarities of random sentence pairs; ``pair_sims``: of the test pairs, in the
    order of ``gold``. Paraphrases are pairs with gold ``>= related``, unrelated ones ``<= unrelated``.
    """
    pair_sims, gold = _sample(pair_sims, "pair_sims"), _sample(gold, "gold")
    if pair_sims.shape != gold.shape:
        raise ValueError(f"pair_sims {pair_sims.shape} and gold {gold.shape} differ in length")
    para, unrel = pair_sims[gold >= related], pair_sims[gold <= unrelated]
    rand = _sample(random_sims, "random_sims")
    return {
        "sim random": float(rand.mean()),
        "sim unrelated": float(unrel.mean()),
        "sim paraphrase": float(para.mean()),
        "OVL random/para": overlap_coefficient(rand, para),
        "OVL unrel./para": overlap_coefficient(unrel, para),
        "AUC para > unrel.": auc(para, unrel),
        "STS-B ρ×100": spearman(pair_sims, gold),
    }


def centred_scores(a: np.ndarray, b: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Cosine of each row pair after subtracting ``mean`` from both: ``cos(a - μ, b - μ)``."""
    a = check_matrix(a, "a")
    mean = np.asarray(mean, dtype=np.float64)
    if mean.shape != (a.shape[1],):
        raise ValueError(f"mean must have shape ({a.shape[1]},), got {mean.shape}")
    return cosine_scores(a - mean, check_matrix(b, "b", dim=a.shape[1]) - mean)


def mean_share(X: np.ndarray) -> float:
    """``‖mean(X)‖² / mean(‖x‖²)``: the share of the average squared norm carried by the mean vector.

    For ``x = μ + e`` with independent mean-zero ``e`` in high dimension, this is about the mean cosine
    of two random rows (Chapter 0, Exercise 1).
    """
    X = check_matrix(X, "X").astype(np.float64)
    return float(np.sum(X.mean(0) ** 2) / np.mean(np.sum(X**2, axis=1)))


def _grid_label(pooling: str, n_layers: int) -> tuple[str, str]:
    spec = parse_pooling(pooling, n_layers)
    return spec.tokens, f"last {len(spec.layers)} {spec.combine}"


def pooling_grid_table(
    encoder: Encoder, pairs: STSPairs, poolings: Sequence[str], progress: bool = False
) -> pd.DataFrame:
    """Spearman × 100 of ``pairs`` for each pooling: rows = token pooling (cls, mean, max, min),
    columns = ``"last k avg"`` / ``"last k concat"``. One forward pass per cache entry serves all."""
    sentences = pairs.sentences()
    row = {s: i for i, s in enumerate(sentences)}
    left, right = [row[s] for s in pairs.sent1], [row[s] for s in pairs.sent2]
    cells = {}
    for pooling in poolings:
        X = encode(encoder, sentences, pooling, progress=progress)
        cells[_grid_label(pooling, encoder.n_layers)] = score_pairs(pairs, X[left], X[right]).all
    table = pd.Series(cells).unstack()
    ks = sorted({int(c.split()[1]) for c in table.columns})
    columns = [f"last {k} {c}" for c in LAYER_COMBINES for k in ks]
    rows = [t for t in TOKEN_POOLINGS if t in table.index]
    return table.loc[rows, [c for c in columns if c in table.columns]]
