"""Cosine in a basis that is not orthonormal (Chapter 2).

A vector with coordinates α in the basis whose columns are B is Bα, so the true inner product of
two such vectors is αᵀGα' with the Gram matrix G = BᵀB. Cosine on coordinates silently takes
G = I. Reading order: the true cosine from coordinates (:func:`gram_cosine`), the book's skewed
3-D basis and the three vectors it fools (:func:`skewed_example`), the table of both cosines
(:func:`cosine_table`). Last, what a change of basis does to a sentence's nearest neighbours
(:func:`cosine_neighbours`, :func:`neighbour_overlap`).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from bertflow_mini._checks import check_matrix

# re-exported: chapter 2 calls bases.cosine_neighbours
from bertflow_mini.evaluation.vectors import cosine_neighbours as cosine_neighbours


def _vector(a: np.ndarray, name: str, d: int | None = None) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    if a.ndim != 1 or (d is not None and len(a) != d) or not np.isfinite(a).all():
        raise ValueError(
            f"{name} must be a finite 1-D vector of length {d}, got shape {a.shape}"
        )
    return a


def gram_cosine(a: np.ndarray, b: np.ndarray, G: np.ndarray | None = None) -> float:
    """True cosine of two vectors given by coordinates ``a``, ``b`` in a basis with Gram matrix ``G``.

    ``G=None`` is the identity: plain cosine on the coordinates.
    """
    a = _vector(a, "a")
    b = _vector(b, "b", len(a))
    G = (
        np.eye(len(a))
        if G is None
        else check_matrix(G, "G", dim=len(a), min_rows=len(a))
    )
    if G.shape[0] != len(a) or not np.allclose(G, G.T):
        raise ValueError(
            f"G must be a symmetric {len(a)} x {len(a)} matrix, got shape {G.shape}"
        )
    aa, bb = a @ G @ a, b @ G @ b
    if aa <= 0 or bb <= 0:
        raise ValueError("a and b must be non-zero (and G positive definite)")
    return float(a @ G @ b / np.sqrt(aa * bb))


def skewed_example() -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The chapter's basis B (columns b1, b2, b3) and three coordinate vectors x1, x2, x3.

    b1 = (1, 0, 0), b2 = (0, 2, 0) (orthogonal but twice as long), b3 = (1, 1, 1) (skewed towards
    both). The coordinates x1 = (1, 1, 0), x2 = (1, −1, 1), x3 = (−1, 1, 2) are mutually orthogonal
    *as coordinates*; in the space, x1 ⟂ x2 and x2 ⟂ x3 hold, but x1 and x3 are 29° apart.
    """
    B = np.array([[1.0, 0.0, 1.0], [0.0, 2.0, 1.0], [0.0, 0.0, 1.0]])
    x = {
        "x1": np.array([1.0, 1.0, 0.0]),
        "x2": np.array([1.0, -1.0, 1.0]),
        "x3": np.array([-1.0, 1.0, 2.0]),
    }
    return B, x


def cosine_table(B: np.ndarray, points: dict[str, np.ndarray]) -> pd.DataFrame:
    """For every pair of named coordinate vectors: cosine on coordinates, true cosine, true angle."""
    B = check_matrix(B, "B")
    if B.shape[0] != B.shape[1] or abs(np.linalg.det(B)) < 1e-12:
        raise ValueError(f"B must be a square invertible matrix, got shape {B.shape}")
    G = B.T @ B
    rows = {}
    for p, q in itertools.combinations(points, 2):
        true = gram_cosine(points[p], points[q], G)
        rows[f"{p}, {q}"] = {
            "coordinate cosine": gram_cosine(points[p], points[q]),
            "true cosine": true,
            "true angle (deg)": float(np.degrees(np.arccos(np.clip(true, -1, 1)))),
        }
    return pd.DataFrame(rows).T


# ----------------------------------------------------------------------------- neighbours
def neighbour_overlap(before: np.ndarray, after: np.ndarray) -> float:
    """Mean share of each row's neighbours in ``before`` that are still among its ``after`` ones."""
    before, after = np.asarray(before), np.asarray(after)
    if before.shape != after.shape or before.ndim != 2:
        raise ValueError(
            f"before and after must be (n, k) arrays of one shape, got {before.shape}, {after.shape}"
        )
    return float(
        np.mean([len(set(a) & set(b)) / before.shape[1] for a, b in zip(before, after)])
    )
