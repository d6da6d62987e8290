"""Cosine in a skewed basis: the Gram-matrix cosine against vectors built explicitly, the book's
example's stated angles, and cosine neighbours against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bertflow_mini.geometry.bases import (
    cosine_neighbours,
    cosine_table,
    gram_cosine,
    neighbour_overlap,
    skewed_example,
)


def explicit_cosine(B, a, b) -> float:
    """Oracle: build the vectors Ba, Bb in the reference frame and take their plain cosine."""
    u, v = B @ a, B @ b
    return float(u @ v / np.linalg.norm(u) / np.linalg.norm(v))


def test_gram_cosine_equals_the_cosine_of_the_built_vectors():
    rng = np.random.default_rng(0)
    for _ in range(20):
        B = rng.normal(size=(4, 4))
        a, b = rng.normal(size=4), rng.normal(size=4)
        assert gram_cosine(a, b, B.T @ B) == pytest.approx(
            explicit_cosine(B, a, b), abs=1e-12
        )
    assert gram_cosine(np.array([1.0, 0.0]), np.array([1.0, 1.0])) == pytest.approx(
        1 / np.sqrt(2)
    )


def test_the_books_example_fools_coordinate_cosine():
    B, x = skewed_example()
    table = cosine_table(B, x)
    assert list(table.index) == ["x1, x2", "x1, x3", "x2, x3"]
    assert (table["coordinate cosine"] == 0).all()
    # by hand: B x1 = (1, 2, 0), B x2 = (2, -1, 1), B x3 = (1, 4, 2)
    assert table.loc["x1, x3", "true cosine"] == pytest.approx(
        9 / np.sqrt(5 * 21), abs=1e-12
    )
    assert table.loc["x1, x2", "true cosine"] == pytest.approx(0, abs=1e-12)
    assert table.loc["x2, x3", "true cosine"] == pytest.approx(0, abs=1e-12)
    assert table.loc["x1, x3", "true angle (deg)"] == pytest.approx(
        np.degrees(np.arccos(9 / np.sqrt(105)))
    )
    # x3 is not a multiple of x2 (no trivial mirror)
    assert np.linalg.matrix_rank(np.stack([x["x2"], x["x3"]])) == 2


def test_cosine_neighbours_match_brute_force_and_exclude_the_query():
    X = np.random.default_rng(1).normal(size=(50, 6)) + 0.3
    queries = [0, 7, 49]
    got = cosine_neighbours(X, queries, k=5)
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    for row, q in zip(got, queries):
        sims = [(U[q] @ U[j], j) for j in range(50) if j != q]
        best = [j for _, j in sorted(sims, key=lambda t: (-t[0], t[1]))[:5]]
        assert list(row) == best
    assert neighbour_overlap(got, got) == 1.0
    assert neighbour_overlap(np.array([[1, 2]]), np.array([[2, 3]])) == 0.5


@pytest.mark.parametrize(
    "bad",
    [
        {"a": np.array([0.0, 0.0]), "b": np.array([1.0, 0.0])},
        {"a": np.array([1.0, np.nan]), "b": np.array([1.0, 0.0])},
        {"a": np.array([1.0, 0.0]), "b": np.array([1.0, 0.0, 0.0])},
    ],
)
def test_gram_cosine_rejects_bad_vectors(bad):
    with pytest.raises(ValueError):
        gram_cosine(**bad)


def test_bad_inputs():
    with pytest.raises(ValueError, match="symmetric"):
        gram_cosine(np.ones(2), np.ones(2), np.array([[1.0, 2.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="square invertible"):
        cosine_table(np.ones((2, 2)), {"a": np.ones(2), "b": np.array([1.0, 0.0])})
    with pytest.raises(ValueError, match="queries"):
        cosine_neighbours(np.eye(3), [3])
    with pytest.raises(ValueError, match="k must be"):
        cosine_neighbours(np.eye(3), [0], k=3)
    with pytest.raises(ValueError, match="one shape"):
        neighbour_overlap(np.zeros((2, 3)), np.zeros((2, 2)))


def test_pairs_are_all_combinations():
    pts = {k: np.random.default_rng(i).normal(size=2) for i, k in enumerate("abcd")}
    table = cosine_table(np.eye(2), pts)
    assert list(table.index) == [
        f"{p}, {q}" for p, q in itertools.combinations("abcd", 2)
    ]
    # orthonormal basis
    assert np.allclose(table["coordinate cosine"], table["true cosine"])
