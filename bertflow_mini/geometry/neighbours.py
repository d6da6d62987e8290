"""Nearest neighbours: exact k-NN of every row (:func:`knn`, for Table 1 of Li et al.), and whether
a post-processor keeps each sentence's cosine neighbours (:func:`knn_overlap`: chapter 5's
measurement of why cosine in a flow's latent space can still be semantic)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from bertflow_mini.evaluation.vectors import Neighbours, cosine_neighbours, knn
from bertflow_mini.geometry.bases import neighbour_overlap

__all__ = ["Neighbours", "knn", "knn_overlap", "knn_overlaps"]


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
    found = {
        name: cosine_neighbours(spaces[name], np.arange(len(spaces[name])), k)
        for name in used
    }
    return {f"{a} vs {b}": neighbour_overlap(found[a], found[b]) for a, b in pairs}


def knn_overlap(a: np.ndarray, b: np.ndarray, k: int = 10) -> float:
    """Mean share of each row's ``k`` cosine nearest neighbours in ``a`` that are also among its ``k``
    nearest in ``b`` (1: the same neighbours; ``k/(n−1)``: what unrelated spaces share by chance)."""
    return knn_overlaps({"a": a, "b": b}, [("a", "b")], k)["a vs b"]
