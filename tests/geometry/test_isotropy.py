"""The isotropy measures: right on isotropic data and on a cone, equal to brute force, and strict on input."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from bertflow_mini.geometry.isotropy import (
    compare,
    explained_variance_top,
    isotropy_report,
    isotropy_score,
    mean_random_cosine,
    norm_stats,
)

D = 10


@pytest.fixture(scope="module")
def gaussian() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(20_000, D))


@pytest.fixture(scope="module")
def cone(gaussian) -> np.ndarray:
    """The same points pushed far along one common direction, as raw BERT embeddings are."""
    direction = np.random.default_rng(1).normal(size=D)
    return gaussian + 20.0 * direction / np.linalg.norm(direction)


def test_isotropic_gaussian_looks_isotropic(gaussian):
    # sd of one cosine ≈ 1/√d ≈ 0.32; SE ≈ 0.003
    assert abs(mean_random_cosine(gaussian)) < 0.015
    assert abs(mean_random_cosine(gaussian, n_pairs=None)) < 0.002
    assert isotropy_score(gaussian) > 0.9
    top1 = explained_variance_top(gaussian, 1)
    # the top sample eigenvalue sits slightly above the mean one
    assert 1 / D <= top1 < 1.15 / D
    assert explained_variance_top(gaussian, D) == pytest.approx(1.0)


def test_cone_looks_anisotropic(cone):
    assert mean_random_cosine(cone) > 0.95
    assert isotropy_score(cone) < 1e-6
    # the cone is a shift: its *variance* is unchanged
    assert explained_variance_top(cone, 1) < 0.15


def test_mean_cosine_matches_brute_force():
    x = np.random.default_rng(2).normal(size=(60, 7)) + 0.5
    u = x / np.linalg.norm(x, axis=1, keepdims=True)
    brute = np.mean([u[i] @ u[j] for i, j in itertools.permutations(range(60), 2)])
    assert mean_random_cosine(x, n_pairs=None) == pytest.approx(brute, abs=1e-12)
    # Random pairs estimate the same number: within 4 standard errors.
    sims = (u @ u.T)[~np.eye(60, dtype=bool)]
    assert abs(
        mean_random_cosine(x, n_pairs=20_000, seed=3) - brute
    ) < 4 * sims.std() / np.sqrt(20_000)


def test_mean_cosine_of_a_hand_computed_triangle():
    # Rows e1, (1,1), (1,2): pair cosines 1/√2, 1/√5 and 3/√10; every ordered pair i ≠ j counts once.
    x = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    exact = (1 / np.sqrt(2) + 1 / np.sqrt(5) + 3 / np.sqrt(10)) / 3
    assert mean_random_cosine(x, n_pairs=None) == pytest.approx(exact, abs=1e-15)
    # lengths do not matter
    assert mean_random_cosine(10.0 * x, n_pairs=None) == pytest.approx(exact, abs=1e-15)


def test_the_seed_alone_decides_the_sample():
    # Same seed: the same estimate, whatever the global NumPy / Python random state in between; another
    # seed: another sample. (A version drawing from np.random's global state fails the first line.)
    import random

    x = np.random.default_rng(8).normal(size=(40, 5)) + 0.3
    first = mean_random_cosine(x, n_pairs=500, seed=5)
    np.random.seed(123)
    random.seed(123)
    np.random.rand(17)
    assert mean_random_cosine(x, n_pairs=500, seed=5) == first
    assert mean_random_cosine(x, n_pairs=500, seed=6) != first


def test_random_pairs_are_distinct():
    # Two distinct points at 90°: any pair (i, i) would pull the mean above 0.
    assert mean_random_cosine(np.array([[1.0, 0.0], [0.0, 1.0]]), n_pairs=1000) == 0.0


def test_isotropy_score_matches_the_naive_formula_and_survives_huge_values():
    x = np.random.default_rng(4).normal(size=(500, 6)) + 0.3
    _, vecs = np.linalg.eigh(x.T @ x)
    # fine at this scale
    z = np.exp(x @ np.concatenate([vecs, -vecs], axis=1)).sum(axis=0)
    assert isotropy_score(x) == pytest.approx(z.min() / z.max(), rel=1e-10)
    with np.errstate(over="ignore"):
        # the naive formula overflows ...
        assert not np.isfinite(np.exp(1000 * x @ vecs).sum())
    score = isotropy_score(1000 * x)  # ... the log-space one does not
    assert 0.0 <= score < 1e-10


def test_explained_variance_matches_svd():
    x = np.random.default_rng(5).normal(size=(300, 8)) * np.arange(1, 9)
    s = np.linalg.svd(x - x.mean(0), compute_uv=False) ** 2
    for k in (1, 3, 8):
        assert explained_variance_top(x, k) == pytest.approx(
            s[:k].sum() / s.sum(), rel=1e-10
        )


def test_norm_stats_and_report(gaussian, cone):
    stats = norm_stats(np.array([[3.0, 4.0], [0.0, 1.0], [6.0, 8.0]]))
    assert stats == pytest.approx(
        {"mean": 16 / 3, "std": np.std([5, 1, 10]), "min": 1.0, "max": 10.0}
    )
    report = isotropy_report(cone)
    assert list(report) == [
        "mean_cos",
        "isotropy",
        "top1_var",
        "top10_var",
        "norm_mean",
        "norm_std",
    ]
    assert report["top10_var"] == pytest.approx(1.0)  # d = 10
    table = compare({"raw": cone, "centred": cone - cone.mean(0)})
    assert isinstance(table, pd.DataFrame)
    assert list(table.index) == ["raw", "centred"] and list(table.columns) == list(
        report
    )
    assert table.loc["raw", "mean_cos"] == pytest.approx(report["mean_cos"])
    assert table.loc["centred", "mean_cos"] < 0.05 < table.loc["raw", "mean_cos"]


@pytest.mark.parametrize(
    "fn",
    [
        mean_random_cosine,
        isotropy_score,
        explained_variance_top,
        norm_stats,
        isotropy_report,
    ],
)
def test_bad_input_is_rejected(fn):
    x = np.random.default_rng(6).normal(size=(20, 4))
    bad = x.copy()
    bad[2, 3] = np.inf
    # names the argument
    with pytest.raises(ValueError, match="^X contains NaN or infinity in 1 row"):
        fn(bad)
    with pytest.raises(ValueError, match="^X must be a 2-D"):
        fn(x[0])


def test_specific_errors():
    x = np.random.default_rng(7).normal(size=(20, 4))
    x[5] = 0.0
    with pytest.raises(ValueError, match="^X row 5 is all zeros"):
        mean_random_cosine(x)
    with pytest.raises(ValueError, match="k must be"):
        explained_variance_top(x, 5)
    with pytest.raises(ValueError, match="n_pairs"):
        mean_random_cosine(x + 1, n_pairs=0)
    with pytest.raises(ValueError, match="at least 2 rows"):
        mean_random_cosine(x[:1] + 1)
    with pytest.raises(ValueError, match="at least one"):
        compare({})


def test_random_pair_cosines_are_cosines_of_distinct_rows():
    from bertflow_mini.geometry.isotropy import random_pair_cosines

    x = np.eye(3)  # distinct rows are orthogonal, a row with itself would give 1
    assert (random_pair_cosines(x, n_pairs=500) == 0.0).all()
    # Three rows whose three pair cosines differ: the sampled values tell which pair was drawn. Every
    # pair of distinct rows must come up a third of the time, and no row with itself (cosine 1).
    tri = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    n = 30_000
    sims = random_pair_cosines(tri, n_pairs=n, seed=2)
    assert sims.shape == (n,)
    pair_cosines = [1 / np.sqrt(2), 1 / np.sqrt(5), 3 / np.sqrt(10)]
    share = [np.isclose(sims, c, atol=1e-12).mean() for c in pair_cosines]
    assert sum(share) == pytest.approx(1.0)  # nothing but these three values, never 1.0
    # 4 binomial standard errors
    assert max(abs(s - 1 / 3) for s in share) < 4 * np.sqrt(2 / 9 / n)
    assert mean_random_cosine(tri, n_pairs=n, seed=2) == pytest.approx(sims.mean())


def test_isotropy_score_sees_every_direction_beyond_the_first_64():
    # 130 axis-aligned, zero-mean directions: Z(c) ≈ n·exp(σ_c²/2), so the minimum is the nearly
    # constant first column (eigh's first eigenvector) and the maximum sits in the last chunk of 64.
    rng = np.random.default_rng(9)
    x = rng.normal(size=(400, 130)) * np.r_[0.001, np.linspace(0.5, 1.0, 129)]
    _, vecs = np.linalg.eigh(x.T @ x)
    # the naive formula, no overflow here
    z = np.exp(x @ np.concatenate([vecs, -vecs], axis=1)).sum(axis=0)
    assert isotropy_score(x) == pytest.approx(z.min() / z.max(), rel=1e-10)


def test_two_rows_are_enough():
    x = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])
    assert mean_random_cosine(x, n_pairs=None) == pytest.approx(
        1 / np.sqrt(2), abs=1e-15
    )
    # two points span one direction
    assert explained_variance_top(x, 1) == pytest.approx(1.0)
    assert isotropy_report(x)["top1_var"] == pytest.approx(1.0)
    from bertflow_mini.geometry.isotropy import random_pair_cosines

    # one pair is a valid request
    assert random_pair_cosines(x, n_pairs=1).shape == (1,)


def test_report_and_compare_use_the_requested_k_and_seed():
    rng = np.random.default_rng(10)
    x = rng.normal(size=(300, 20)) * np.linspace(3.0, 0.5, 20) + 1.0
    # the SVD oracle for the variance shares
    s = np.linalg.svd(x - x.mean(0), compute_uv=False) ** 2
    report = isotropy_report(x, seed=5)
    assert report["top1_var"] == pytest.approx(s[0] / s.sum(), rel=1e-10)
    assert report["top10_var"] == pytest.approx(s[:10].sum() / s.sum(), rel=1e-10)
    assert (
        report["mean_cos"]
        == mean_random_cosine(x, seed=5)
        != mean_random_cosine(x, seed=0)
    )
    assert compare({"x": x}, seed=5).loc["x", "mean_cos"] == report["mean_cos"]


def test_the_error_names_the_first_zero_row_and_counts_them():
    x = np.random.default_rng(11).normal(size=(10, 3))
    x[[2, 7]] = 0.0
    for n_pairs in (None, 10_000):
        with pytest.raises(ValueError, match=r"^X row 2 is all zeros \(2 such row"):
            mean_random_cosine(x, n_pairs)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: mean_random_cosine(x, n_pairs=None),
        mean_random_cosine,
        explained_variance_top,
        isotropy_report,
    ],
)
def test_one_row_is_an_error_not_a_nan(fn):
    with pytest.raises(ValueError, match="at least 2 rows"):
        fn(np.array([[1.0, 2.0, 3.0]]))


# ----------------------------------------------------------------------------- scale, IsoScore, clouds
def test_iso_score_agrees_with_the_authors_package():
    IsoScore = pytest.importorskip("IsoScore.IsoScore")
    from bertflow_mini.geometry.isotropy import iso_score

    rng = np.random.default_rng(12)
    for x in [
        rng.normal(size=(400, 12)) * np.linspace(3, 0.1, 12),
        rng.normal(size=(300, 5)) + 4.0,
        rng.normal(size=(200, 3)) @ rng.normal(size=(3, 3)),
    ]:
        assert iso_score(x) == pytest.approx(float(IsoScore.IsoScore(x)), abs=1e-6)


def test_iso_score_extremes_scale_and_mean():
    from bertflow_mini.geometry.isotropy import iso_score

    rng = np.random.default_rng(13)
    # one direction holds all variance
    line = np.outer(rng.normal(size=500), rng.normal(size=6))
    assert iso_score(line) == pytest.approx(0.0, abs=1e-9)
    x = rng.normal(size=(2000, 6)) * np.array([1, 1, 1, 1, 1, 3.0])
    assert iso_score(7.0 * x) == pytest.approx(iso_score(x), rel=1e-10)  # scale-free
    # blind to the mean
    assert iso_score(x + 50.0) == pytest.approx(iso_score(x), rel=1e-8)
    with pytest.raises(ValueError, match="zero variance"):
        iso_score(np.ones((5, 3)))


def test_normalised_isotropy_is_scale_free_and_raw_is_not():
    from bertflow_mini.geometry.isotropy import gaussian_cloud

    x = gaussian_cloud(3000, 32, seed=1)
    raw = [isotropy_score(s * x) for s in (1, 3, 5)]
    assert raw[0] > raw[1] > raw[2] and raw[2] < 1e-2 * raw[0]
    norm = [isotropy_score(s * x, normalise=True) for s in (0.1, 1, 3, 5)]
    assert max(norm) - min(norm) < 1e-9 and min(norm) > 0.9
    # normalise=True is exactly the raw score of the cloud scaled to unit RMS norm
    from bertflow_mini.geometry.isotropy import rms_norm

    assert isotropy_score(5 * x, normalise=True) == pytest.approx(
        isotropy_score(x / rms_norm(x)), rel=1e-12
    )


def test_gaussian_cloud_has_the_stated_moments_and_the_prediction_holds():
    from bertflow_mini.geometry.isotropy import (
        gaussian_cloud,
        power_spectrum,
        predicted_cosine,
    )

    lam = power_spectrum(16, 1.0)
    assert lam.sum() == pytest.approx(16) and np.all(np.diff(lam) < 0)
    x = gaussian_cloud(40_000, 16, mean_ratio=1.0, beta=1.0, scale=2.0, seed=3)
    mu = x.mean(0)
    assert mu @ mu == pytest.approx(4.0 * 16, rel=0.02)  # ‖μ‖ = r·√d, times the scale
    np.testing.assert_allclose(
        np.sort(np.linalg.eigvalsh(np.cov(x, rowvar=False)))[::-1],
        4 * lam,
        rtol=0.05,
        atol=0.05,
    )
    mean, _ = predicted_cosine(64, mean_ratio=1.0)
    assert mean == pytest.approx(0.5)
    _, sd = predicted_cosine(64)
    assert sd == pytest.approx(1 / 8)  # 1/√d for an isotropic cloud
    cos = mean_random_cosine(gaussian_cloud(4000, 64, mean_ratio=1.0), n_pairs=20_000)
    assert cos == pytest.approx(0.5, abs=0.01)


@pytest.mark.parametrize("mean_ratio", [0.5, 1.0, 2.0])
def test_predicted_spread_matches_simulated_pairs_with_a_mean(mean_ratio):
    """The sd of the cosine against independent pairs drawn from N(μ, I) (Monte Carlo, 10⁵ pairs):
    within 3 % when the mean is large (at r = 2 the norms' fluctuations are 30 % of the spread)."""
    from bertflow_mini.geometry.isotropy import predicted_cosine

    d, n = 64, 100_000
    rng = np.random.default_rng(7)
    mu = np.full(d, mean_ratio)  # ‖μ‖² = r² d, tr Σ = d
    x, y = mu + rng.standard_normal((n, d)), mu + rng.standard_normal((n, d))
    cos = (x * y).sum(1) / np.linalg.norm(x, axis=1) / np.linalg.norm(y, axis=1)
    mean, sd = predicted_cosine(d, mean_ratio=mean_ratio)
    assert mean == pytest.approx(cos.mean(), abs=0.01)
    assert sd == pytest.approx(cos.std(), rel=0.03)


def test_isotropy_table_rows_and_columns():
    from bertflow_mini.geometry.isotropy import isotropy_table

    x = np.random.default_rng(14).normal(size=(500, 8))
    t = isotropy_table({"a": x, "b": x + 3})
    assert list(t.columns) == ["mean cos", "log10 I(W)", "I(W) normalised", "IsoScore"]
    assert t.loc["b", "mean cos"] > 0.5 > t.loc["a", "mean cos"]
    assert t.loc["a", "IsoScore"] == pytest.approx(t.loc["b", "IsoScore"])
    with pytest.raises(ValueError, match="at least one"):
        isotropy_table({})


def test_singular_projection_and_offset_share():
    from bertflow_mini.geometry.isotropy import offset_share, singular_projection

    rng = np.random.default_rng(15)
    x = rng.normal(size=(300, 5)) + np.array([10.0, 0, 0, 0, 0])
    P = singular_projection(x, k=2)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    np.testing.assert_allclose(np.abs(P), np.abs(x @ vt[:2].T), rtol=1e-9, atol=1e-9)
    assert (P.mean(0) >= 0).all()
    assert abs(P[:, 0].mean()) > 9  # the offset shows on the first direction
    pts = np.array([[1.0, 0.0], [3.0, 0.0]])  # μ = (2, 0): ‖μ‖² = 4, mean ‖x‖² = 5
    assert offset_share(pts) == pytest.approx(0.8)
    with pytest.raises(ValueError, match="k must be"):
        singular_projection(x, k=6)


@pytest.mark.parametrize(
    "name",
    [
        "random_pair_cosines",
        "mean_random_cosine",
        "iso_score",
        "isotropy_measures",
        "explained_variance_top",
        "isotropy_report",
        "singular_projection",
    ],
)
def test_a_single_vector_is_refused_not_measured(name):
    """One row has no pairs, no covariance and no spread: each measure says so instead of
    returning NaN or a number of nothing (found by mutation testing: dropping ``min_rows`` survived)."""
    import bertflow_mini.geometry.isotropy as iso

    with pytest.raises(ValueError, match="at least 2"):
        getattr(iso, name)(np.ones((1, 4)))
