"""Does a post-processor keep each sentence's nearest neighbours? (chapter 5's measurement of why
cosine in a flow's latent space can still be semantic.)"""
from __future__ import annotations

import numpy as np

from ._checks import check_matrix


def cosine_neighbours(x: np.ndarray, k: int) -> np.ndarray:
    """Indices of each row's ``k`` nearest other rows by cosine similarity, shape (n, k)."""
    x = check_matrix(x, "x", min_rows=k + 1).astype(np.float64)
    unit = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    sims = unit @ unit.T
    np.fill_diagonal(sims, -np.inf)  # a row is not its own neighbour
    return np.argpartition(-sims, k - 1, axis=1)[:, :k]


def knn_overlap(a: np.ndarray, b: np.ndarray, k: int = 10) -> float:
    """Mean share of each row's ``k`` cosine nearest neighbours in ``a`` that are also among its ``k``
    nearest in ``b`` (1: the same neighbours; ``k/(n−1)``: what unrelated spaces share by chance)."""
    if np.shape(a)[0] != np.shape(b)[0]:
        raise ValueError(f"a and b must have the same rows, got {np.shape(a)[0]} and {np.shape(b)[0]}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    na, nb = cosine_neighbours(a, k), cosine_neighbours(b, k)
    shared = [len(np.intersect1d(ra, rb, assume_unique=True)) for ra, rb in zip(na, nb)]
    return float(np.mean(shared) / k)
