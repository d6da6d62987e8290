"""Unit rows, cosine and nearest neighbours: the one home of the vector primitives every layer above uses.

One policy for rows without a direction: an all-zero row raises ``ValueError`` naming its index
(NaN or infinity too, through :func:`bertflow_mini._checks.check_matrix`). The one exception is
:func:`cosine_scores`'s ``zero_scores_zero``, for the STS baselines whose sentence of unknown words
is the zero vector by design.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch

from bertflow_mini._checks import check_matrix


def _reject_zero_rows(norms: np.ndarray, name: str) -> None:
    zero = np.flatnonzero(norms == 0)
    if len(zero):
        raise ValueError(
            f"{name} row {int(zero[0])} is all zeros ({len(zero)} such row(s)): "
            "it has no direction, so its cosine is undefined"
        )


def row_norms(x: np.ndarray, name: str = "x") -> np.ndarray:
    """ℓ2 norm of each row of ``x`` in float64; raises ``ValueError`` on a zero, NaN or infinite row."""
    x = check_matrix(x, name).astype(np.float64, copy=False)
    norms: np.ndarray = np.linalg.norm(x, axis=1)
    _reject_zero_rows(norms, name)
    return norms


def unit_rows(x: np.ndarray, name: str = "x") -> np.ndarray:
    """The rows of ``x`` divided by their ℓ2 norms, in float64 (raises on a zero row)."""
    x = check_matrix(x, name).astype(np.float64)
    norms: np.ndarray = np.linalg.norm(x, axis=1, keepdims=True)
    _reject_zero_rows(norms[:, 0], name)
    unit: np.ndarray = x / norms
    return unit


def cosine_scores(
    a: np.ndarray, b: np.ndarray, zero_scores_zero: bool = False, eps: float = 1e-12
) -> np.ndarray:
    """Row-wise cosine of two ``(n, d)`` matrices: ``cos(a[i], b[i])`` for each ``i``.

    A zero row raises, unless ``zero_scores_zero``: then it has cosine 0 with anything (the STS
    harness, where a GloVe or bag-of-tokens sentence with no known word is the zero vector).
    """
    a = check_matrix(a, "a")
    b = check_matrix(b, "b", dim=a.shape[1])
    if a.shape != b.shape:
        raise ValueError(
            f"a and b must have the same shape, got {a.shape} and {b.shape}"
        )
    a = a.astype(np.float64, copy=False)
    b = b.astype(np.float64, copy=False)
    norm_a, norm_b = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    if not zero_scores_zero:
        _reject_zero_rows(norm_a, "a")
        _reject_zero_rows(norm_b, "b")
    cosines: np.ndarray = np.einsum("ij,ij->i", a, b) / np.maximum(norm_a * norm_b, eps)
    return cosines


def cosine_matrix(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """All pairwise cosines ``cos(a[i], b[j])`` as an ``(n, m)`` matrix (``b=None``: ``a`` with itself)."""
    ua = unit_rows(a, "a")
    ub = ua if b is None else unit_rows(b, "b")
    if ub.shape[1] != ua.shape[1]:
        raise ValueError(f"b must have {ua.shape[1]} columns, got shape {ub.shape}")
    cosines: np.ndarray = ua @ ub.T
    return cosines


def cosine_neighbours(
    vectors: np.ndarray, queries: Sequence[int] | np.ndarray, k: int = 10
) -> np.ndarray:
    """Indices of the ``k`` rows of ``vectors`` with the highest cosine to each row ``queries[i]``
    of ``vectors`` (the query itself excluded), best first; ties broken by lower index."""
    X = check_matrix(vectors, "vectors", min_rows=2)
    q = np.asarray(queries, dtype=np.int64)
    if q.ndim != 1 or len(q) == 0 or q.min() < 0 or q.max() >= len(X):
        raise ValueError(f"queries must be row indices in [0, {len(X)})")
    if not 1 <= k < len(X):
        raise ValueError(f"k must be between 1 and {len(X) - 1}, got {k}")
    U = unit_rows(X, "vectors")
    sims = U[q] @ U.T
    sims[np.arange(len(q)), q] = -np.inf
    order = torch.from_numpy(-sims).argsort(dim=1, stable=True)[:, :k]
    return order.numpy()


class Neighbours(NamedTuple):
    """The ``k_max`` nearest neighbours of every row, nearest first (all arrays are ``(n, k_max)``)."""

    # ℓ2 distance to each neighbour
    dist: np.ndarray
    # row index of each neighbour (never the row itself)
    idx: np.ndarray
    # dot product with each neighbour
    dot: np.ndarray


def knn(E: np.ndarray, k_max: int, chunk: int = 2048) -> Neighbours:
    """Exact ℓ2 k-nearest neighbours of every row of ``E`` among the other rows, with the dot products.

    One matrix product per chunk of rows gives the squared distances (``‖a‖² + ‖b‖² − 2a·b``,
    clamped at 0) and ``torch.topk`` picks the nearest. A row is never its own neighbour; identical
    rows are neighbours at distance 0. The arithmetic is in ``E``'s float precision.
    """
    E = check_matrix(E, "E", min_rows=2)
    n = E.shape[0]
    if not 1 <= k_max <= n - 1:
        raise ValueError(f"k_max must be between 1 and n-1 = {n - 1}, got {k_max}")
    if chunk < 1:
        raise ValueError(f"chunk must be positive, got {chunk}")
    # torch for the heavy lifting: fast matmul and top-k
    X = torch.from_numpy(np.ascontiguousarray(E))
    sq = (X * X).sum(dim=1)
    # One product gives s[i, j] = ‖b_j‖² − 2 a_i·b_j: the squared distance minus ‖a_i‖², constant
    # along row i, so it does not change which j are nearest: [−2a, 1] · [b, ‖b‖²] = ‖b‖² − 2a·b.
    A = torch.cat([-2.0 * X, torch.ones(n, 1, dtype=X.dtype)], dim=1)
    B = torch.cat([X, sq[:, None]], dim=1)
    dist = torch.empty((n, k_max), dtype=X.dtype)
    idx = torch.empty((n, k_max), dtype=torch.int64)
    dot = torch.empty((n, k_max), dtype=X.dtype)
    for start in range(0, n, chunk):
        rows = slice(start, min(start + chunk, n))
        # (c, n): the only big array
        s = A[rows] @ B.T
        own = torch.arange(rows.stop - rows.start)
        # a row is not its own neighbour
        s[own, own + start] = torch.inf
        s_near, near = torch.topk(s, k_max, dim=1, largest=False, sorted=True)
        dist[rows] = (s_near + sq[rows, None]).clamp_(min=0.0).sqrt()
        idx[rows] = near
        # exact dot products, k per row
        dot[rows] = torch.einsum("cd,ckd->ck", X[rows], X[near])
    return Neighbours(dist.numpy(), idx.numpy(), dot.numpy())


def knn_distance(
    queries: np.ndarray, reference: np.ndarray, k: int = 10, chunk: int = 2048
) -> np.ndarray:
    """Mean ℓ2 distance from each query row to its ``k`` nearest reference rows (exact, chunked)."""
    q = check_matrix(queries, "queries")
    r = check_matrix(reference, "reference", dim=q.shape[1])
    if not 1 <= k <= len(r):
        raise ValueError(
            f"k must be between 1 and the {len(r)} reference rows, got {k}"
        )
    R = torch.from_numpy(np.ascontiguousarray(r, dtype=np.float64))
    out = []
    for start in range(0, len(q), chunk):
        Q = torch.from_numpy(
            np.ascontiguousarray(q[start : start + chunk], dtype=np.float64)
        )
        # float64: the matrix-product form loses nothing that matters here
        d = torch.cdist(Q, R)
        out.append(torch.topk(d, k, dim=1, largest=False).values.mean(1).numpy())
    return np.concatenate(out)
