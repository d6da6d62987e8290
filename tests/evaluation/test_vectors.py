"""The vector primitives: hand-computed cosines, scipy as the oracle, brute-force neighbours, and the
one policy for a row without a direction (an error naming its index)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from scipy.spatial.distance import cosine as scipy_cosine_distance

from bertflow_mini.evaluation.vectors import (
    cosine_matrix,
    cosine_neighbours,
    cosine_scores,
    knn,
    knn_distance,
    row_norms,
    unit_rows,
)


def test_hand_computed_cases():
    x = np.array([[3.0, 4.0], [0.0, -2.0], [1.0, 1.0]])
    np.testing.assert_array_equal(row_norms(x), [5.0, 2.0, np.sqrt(2)])
    np.testing.assert_allclose(unit_rows(x)[0], [0.6, 0.8])
    # (3,4)·(1,1) = 7 over 5·√2; (0,−2)·(3,4) = −8 over 2·5
    np.testing.assert_allclose(
        cosine_scores(x[[0, 1]], x[[2, 0]]), [7 / (5 * np.sqrt(2)), -0.8]
    )
    C = cosine_matrix(x)
    np.testing.assert_allclose(np.diag(C), 1.0)
    np.testing.assert_allclose(C, C.T)
    assert C[1, 2] == pytest.approx(-1 / np.sqrt(2))


def test_cosines_agree_with_scipy():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(40, 7)), rng.normal(size=(30, 7)) + 0.5
    want = np.array([[1 - scipy_cosine_distance(u, v) for v in b] for u in a])
    np.testing.assert_allclose(cosine_matrix(a, b), want, atol=1e-12)
    np.testing.assert_allclose(cosine_scores(a[:30], b), np.diag(want), atol=1e-12)
    # float32 input is scored in float64
    assert cosine_scores(a.astype(np.float32), a.astype(np.float32)).dtype == np.float64


@pytest.mark.parametrize(
    "fn",
    [
        row_norms,
        unit_rows,
        cosine_matrix,
        lambda x: cosine_scores(x, np.ones_like(x)),
        lambda x: cosine_neighbours(x, [0], 1),
    ],
)
def test_a_zero_row_raises_naming_its_index(fn):
    x = np.random.default_rng(1).normal(size=(6, 3))
    x[[4, 5]] = 0.0
    with pytest.raises(ValueError, match=r"row 4 is all zeros \(2 such row"):
        fn(x)


def test_a_nan_or_infinite_row_raises_naming_its_index():
    x = np.ones((5, 2))
    x[3, 1] = np.inf
    with pytest.raises(ValueError, match="NaN or infinity in 1 row.*the first row 3"):
        unit_rows(x)
    with pytest.raises(ValueError, match="^b contains NaN"):
        cosine_scores(np.ones((5, 2)), np.where(x == 1, x, np.nan))


def test_zero_scores_zero_only_when_asked():
    a, b = np.array([[0.0, 0.0], [1.0, 0.0]]), np.array([[1.0, 2.0], [2.0, 0.0]])
    np.testing.assert_array_equal(cosine_scores(a, b, zero_scores_zero=True), [0, 1])
    with pytest.raises(ValueError, match="^a row 0 is all zeros"):
        cosine_scores(a, b)


def test_shape_errors():
    with pytest.raises(ValueError, match="^b must have 4 columns"):
        cosine_scores(np.ones((3, 4)), np.ones((3, 5)))
    with pytest.raises(ValueError, match="same shape"):
        cosine_scores(np.ones((3, 4)), np.ones((2, 4)))
    with pytest.raises(ValueError, match="columns"):
        cosine_matrix(np.ones((3, 4)), np.ones((3, 5)))


def test_cosine_neighbours_equal_a_full_sort_and_skip_the_query():
    X = np.random.default_rng(2).normal(size=(50, 6))
    want = 1 - cdist(X, X, "cosine")
    np.fill_diagonal(want, -np.inf)
    got = cosine_neighbours(X, np.arange(50), 4)
    np.testing.assert_array_equal(got, np.argsort(-want, axis=1, kind="stable")[:, :4])


def test_knn_equals_brute_force_l2():
    E = np.random.default_rng(3).normal(size=(80, 5))
    D = cdist(E, E)
    np.fill_diagonal(D, np.inf)
    dist, idx, dot = knn(E, 3, chunk=16)
    np.testing.assert_array_equal(idx, np.argsort(D, axis=1)[:, :3])
    np.testing.assert_allclose(dist, np.sort(D, axis=1)[:, :3], rtol=1e-9)
    np.testing.assert_allclose(dot, np.einsum("nd,nkd->nk", E, E[idx]), rtol=1e-12)


def test_knn_distance_equals_brute_force():
    rng = np.random.default_rng(4)
    q, r = rng.normal(size=(37, 5)), rng.normal(size=(50, 5))
    want = np.sort(cdist(q, r), axis=1)[:, :4].mean(1)
    np.testing.assert_allclose(knn_distance(q, r, k=4, chunk=8), want, rtol=1e-9)
    with pytest.raises(ValueError, match="k must be"):
        knn_distance(q, r, k=51)
