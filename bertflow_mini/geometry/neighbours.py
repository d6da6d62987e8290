"""Nearest neighbours: exact k-NN of every row (:func:`knn`, for Table 1 of Li et al.), and whether
a post-processor keeps each sentence's cosine neighbours (:func:`knn_overlap`: chapter 5's
measurement of why cosine in a flow's latent space can still be semantic)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import torch

from bertflow_mini._checks import check_matrix
from bertflow_mini.geometry.bases import cosine_neighbours, neighbour_overlap


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


class Neighbours(NamedTuple):
    """The ``k_max`` nearest neighbours of every row, nearest first (all arrays are ``(n, k_max)``)."""

    dist: np.ndarray  # ℓ2 distance to each neighbour
    idx: np.ndarray  # row index of each neighbour (never the row itself)
    dot: np.ndarray  # dot product with each neighbour


def knn(E: np.ndarray, k_max: int, chunk: int = 2048) -> Neighbours:
    """Exact ℓ2 k-nearest neighbours of every row of ``E`` among the other rows.

    ``‖a − b‖² = ‖a‖² + ‖b‖² − 2a·b``, so one matrix product per chunk of ``chunk`` rows gives the squared
    distances from those rows to all rows (clamped at 0 against rounding), with no Python loop over rows;
    ``torch.topk`` then picks the ``k_max`` smallest per row (much faster than a full sort). The dot
    products with the chosen neighbours are returned too.

    Neighbours are always chosen by ℓ2 distance; the dot products are those with the ℓ2-nearest
    neighbours (our reading of Table 1 of Li et al., which reports both statistics "with k nearest
    neighbours"). A row is never its own neighbour; identical duplicate rows are neighbours at distance 0.
    Memory is about ``chunk × n`` numbers; the arithmetic is in ``E``'s float precision.
    """
    E = check_matrix(E, "E", min_rows=2)
    n = E.shape[0]
    if not 1 <= k_max <= n - 1:
        raise ValueError(f"k_max must be between 1 and n-1 = {n - 1}, got {k_max}")
    if chunk < 1:
        raise ValueError(f"chunk must be positive, got {chunk}")
    X = torch.from_numpy(
        np.ascontiguousarray(E)
    )  # torch for the heavy lifting: fast matmul and top-k
    sq = (X * X).sum(dim=1)
    # One product gives s[i, j] = ‖b_j‖² − 2 a_i·b_j: the squared distance minus ‖a_i‖², which is constant
    # along row i and so does not change which j are nearest. Appending a column does the trick:
    # [−2a, 1] · [b, ‖b‖²] = ‖b‖² − 2a·b.
    A = torch.cat([-2.0 * X, torch.ones(n, 1, dtype=X.dtype)], dim=1)
    B = torch.cat([X, sq[:, None]], dim=1)
    dist = torch.empty((n, k_max), dtype=X.dtype)
    idx = torch.empty((n, k_max), dtype=torch.int64)
    dot = torch.empty((n, k_max), dtype=X.dtype)
    for start in range(0, n, chunk):
        rows = slice(start, min(start + chunk, n))
        s = A[rows] @ B.T  # (c, n): the only big array
        own = torch.arange(rows.stop - rows.start)
        s[own, own + start] = torch.inf  # a row is not its own neighbour
        s_near, near = torch.topk(s, k_max, dim=1, largest=False, sorted=True)
        dist[rows] = (s_near + sq[rows, None]).clamp_(min=0.0).sqrt()
        idx[rows] = near
        dot[rows] = torch.einsum(
            "cd,ckd->ck", X[rows], X[near]
        )  # exact dot products, k per row
    return Neighbours(dist.numpy(), idx.numpy(), dot.numpy())
