"""Does a post-processor keep each sentence's nearest neighbours? (chapter 5's measurement of why
cosine in a flow's latent space can still be semantic.)"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from bertflow_mini._checks import check_matrix
from bertflow_mini.geometry.bases import neighbour_overlap


def cosine_neighbours(x: np.ndarray, k: int) -> np.ndarray:
    """Indices of each row's ``k`` nearest other rows by cosine similarity, shape (n, k)."""
    x = check_matrix(x, "x", min_rows=k + 1).astype(np.float64)
    unit = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    sims = unit @ unit.T
    np.fill_diagonal(sims, -np.inf)  # a row is not its own neighbour
    return np.argpartition(-sims, k - 1, axis=1)[:, :k]


def knn_overlaps(
    spaces: Mapping[str, np.ndarray], pairs: Sequence[tuple[str, str]], k: int = 10
) -> dict[str, float]:
    """:func:`knn_overlap` of each pair ``(a, b)`` of named spaces (the same rows, e.g. one set of
    sentences before and after a post-processor), as ``{"a vs b": overlap}``; each space's
    neighbours are found once, however many pairs it is in."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    unknown = {name for pair in pairs for name in pair} - set(spaces)
    if unknown:
        raise ValueError(f"pairs name spaces that are not given: {sorted(unknown)}")
    rows = {np.shape(v)[0] for v in spaces.values()}
    if len(rows) > 1:
        raise ValueError(f"every space must have the same rows, got {sorted(rows)}")
    used = dict.fromkeys(name for pair in pairs for name in pair)
    found = {name: cosine_neighbours(spaces[name], k) for name in used}
    return {f"{a} vs {b}": neighbour_overlap(found[a], found[b]) for a, b in pairs}


def knn_overlap(a: np.ndarray, b: np.ndarray, k: int = 10) -> float:
    """Mean share of each row's ``k`` cosine nearest neighbours in ``a`` that are also among its ``k``
    nearest in ``b`` (1: the same neighbours; ``k/(n−1)``: what unrelated spaces share by chance)."""
    return knn_overlaps({"a": a, "b": b}, [("a", "b")], k)["a vs b"]
