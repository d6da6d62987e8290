"""Whitening gives identity covariance, truncation keeps the top directions, streaming == batch, ABTT."""

from __future__ import annotations

import numpy as np
import pytest

from bertflow_mini.postprocess.whitening import (
    AllButTheTop,
    StreamingWhitening,
    Whitening,
)


def anisotropic(
    n: int = 3000, dim: int = 20, seed: int = 0, offset: float = 50.0
) -> np.ndarray:
    """Correlated Gaussian data with a large common mean, like raw sentence embeddings."""
    rng = np.random.default_rng(seed)
    rotation, _ = np.linalg.qr(rng.normal(size=(dim, dim)))
    scales = np.logspace(1, -1.5, dim)  # std 10 … 0.03
    return offset + rng.normal(size=(n, dim)) * scales @ rotation.T


def test_whitening_gives_identity_covariance_and_zero_mean():
    x = anisotropic()
    z = Whitening().fit(x).transform(x)
    assert (
        np.abs(np.cov(x, rowvar=False) - np.eye(20)).max() > 10
    )  # far from white before
    np.testing.assert_allclose(z.mean(axis=0), 0.0, atol=1e-9)
    np.testing.assert_allclose(np.cov(z, rowvar=False), np.eye(20), atol=1e-9)


def test_whitening_keeps_float32_and_whitens_new_data_approximately():
    x = anisotropic(6000).astype(np.float32)
    w = Whitening().fit(x[:3000])
    z = w.transform(x[3000:])
    assert z.dtype == np.float32
    # Held-out data is white up to sampling error (~1/sqrt(3000) per entry).
    assert np.abs(np.cov(z, rowvar=False) - np.eye(20)).max() < 0.15


def test_truncation_keeps_the_top_k_directions():
    x = anisotropic()
    k = 5
    w = Whitening(k=k).fit(x)
    assert w.W.shape == (20, k)
    z = w.transform(x)
    assert z.shape == (len(x), k)
    np.testing.assert_allclose(np.cov(z, rowvar=False), np.eye(k), atol=1e-9)
    # Each kept column points along one of the top-k eigenvectors of the covariance (up to sign).
    lam, vecs = np.linalg.eigh(np.cov(x, rowvar=False))
    top = vecs[:, np.argsort(lam)[::-1][:k]]
    cosines = np.abs((w.W / np.linalg.norm(w.W, axis=0)).T @ top)
    np.testing.assert_allclose(cosines, np.eye(k), atol=1e-6)


def test_streaming_fit_equals_batch_fit():
    x = anisotropic(1000)
    batch = Whitening(k=8).fit(x)
    cuts = [0, 1, 7, 300, 301, 650, 1000]  # uneven, including a 1-row batch
    stream = StreamingWhitening(20)
    for a, b in zip(cuts[:-1], cuts[1:]):
        stream.partial_fit(x[a:b])
    streamed = stream.finalize(k=8)
    assert streamed.n_floored == batch.n_floored == 0
    np.testing.assert_allclose(streamed.mean, batch.mean, rtol=0, atol=1e-10)
    np.testing.assert_allclose(
        streamed.transform(x), batch.transform(x), rtol=0, atol=1e-7
    )
    via_iterable = Whitening(k=8).fit_stream(
        x[a:b] for a, b in zip(cuts[:-1], cuts[1:])
    )
    np.testing.assert_allclose(
        via_iterable.transform(x), batch.transform(x), rtol=0, atol=1e-7
    )


@pytest.mark.parametrize(
    "means", ["one huge mean", "per-column huge means of both signs"]
)
def test_streaming_is_stable_with_huge_means(means):
    """Shifted sums: a mean 10⁶ times the spread would wreck the naive E[xxᵀ] − μμᵀ in float64, and
    the shift is per column: one number for all columns would leave means of ±10⁶ in the sums."""
    if means == "one huge mean":
        x = anisotropic(2000, offset=1e6)
    else:
        x = anisotropic(2000, offset=0.0) + np.where(np.arange(20) % 2 == 0, 1e6, -1e6)
    stream = StreamingWhitening(20)
    for chunk in np.array_split(x, 7):
        stream.partial_fit(chunk)
    z = stream.finalize().transform(x)
    np.testing.assert_allclose(np.cov(z, rowvar=False), np.eye(20), atol=1e-6)


def test_tiny_eigenvalues_are_floored_not_amplified():
    # 10 points in 20 dimensions: the covariance has rank 9, the other 11 eigenvalues are ~0.
    x = anisotropic(10)
    white = Whitening().fit(x)
    z = white.transform(x)
    assert np.isfinite(z).all()
    assert white.n_floored == 11  # the null directions, counted
    assert Whitening().fit(anisotropic(1000)).n_floored == 0
    lam = np.sort(np.linalg.eigvalsh(np.cov(z, rowvar=False)))[::-1]
    np.testing.assert_allclose(lam[:9], 1.0, atol=1e-6)  # real directions: white
    assert lam[9:].max() < 1e-3  # null directions: not blown up to unit variance


def test_all_but_the_top_removes_mean_and_top_directions():
    x = anisotropic(1000, dim=200)
    abtt = AllButTheTop().fit(x)
    assert abtt.directions.shape == (200, 2)  # default D = dim // 100
    out = abtt.transform(x)
    np.testing.assert_allclose(out.mean(axis=0), 0.0, atol=1e-9)
    np.testing.assert_allclose(out @ abtt.directions, 0.0, atol=1e-8)
    lam, vecs = np.linalg.eigh(np.cov(x, rowvar=False))
    top = vecs[:, np.argsort(lam)[::-1][:2]]
    np.testing.assert_allclose(np.abs(abtt.directions.T @ top), np.eye(2), atol=1e-6)
    # What is left is the rest of the variance, untouched.
    assert np.trace(np.cov(out, rowvar=False)) == pytest.approx(
        np.sort(lam)[::-1][2:].sum(), rel=1e-9
    )
    assert AllButTheTop().fit(x[:, :50]).directions.shape == (
        50,
        1,
    )  # at least one direction


@pytest.mark.parametrize("make", [Whitening, lambda: Whitening(k=3), AllButTheTop])
def test_bad_input_is_rejected(make):
    x = anisotropic(200)
    bad = x.copy()
    bad[5, 1] = np.nan
    with pytest.raises(
        ValueError, match="^X contains NaN"
    ):  # the message names the argument
        make().fit(bad)
    model = make().fit(x)
    with pytest.raises(ValueError, match="^X contains NaN"):
        model.transform(bad)
    with pytest.raises(ValueError, match="^X must have 20 columns"):
        model.transform(x[:, :19])
    with pytest.raises(ValueError, match="^X must be a 2-D"):
        model.transform(x[0])
    with pytest.raises(
        RuntimeError, match=r"^(Whitening|AllButTheTop)\.transform called before fit"
    ):
        make().transform(x)


def test_streaming_rejects_bad_batches():
    stream = StreamingWhitening(4)
    with pytest.raises(ValueError, match="^batch must have 4 columns"):
        stream.partial_fit(np.ones((3, 5)))
    with pytest.raises(ValueError, match="at least 2 rows"):
        stream.finalize()
    with pytest.raises(ValueError, match="k must be"):
        Whitening(k=30).fit(anisotropic(100))


def test_two_points_on_a_line_by_hand():
    # One column, rows 1 and 3: mean 2, unbiased variance 2, so z = (x − 2) / √2 = ∓1/√2.
    x = np.array([[1.0], [3.0]])
    want = [-1 / np.sqrt(2), 1 / np.sqrt(2), 1.0]
    probe = np.array([[1.0], [3.0], [2.0 + np.sqrt(2)]])
    np.testing.assert_allclose(
        Whitening().fit(x).transform(probe).ravel(), want, rtol=1e-12
    )
    np.testing.assert_allclose(
        StreamingWhitening(1).partial_fit(x).finalize().transform(probe).ravel(),
        want,
        rtol=1e-12,
    )


def test_the_eigenvalue_floor_is_relative_to_the_largest():
    # Axis variances 10⁴ and 10⁻⁴: the smaller is below eps × λ_max = 10⁻⁶ × 10⁴ = 10⁻², so it is
    # divided by √10⁻² instead of √10⁻⁴ and keeps a variance of 10⁻⁴ / 10⁻² = 10⁻² (by hand).
    rng = np.random.default_rng(0)
    z = rng.normal(size=(5000, 2))
    z = (z - z.mean(0)) @ np.linalg.inv(
        np.linalg.cholesky(np.cov(z, rowvar=False))
    ).T  # exactly white
    x = z * np.array([100.0, 0.01])
    white = Whitening(eps=1e-6).fit(x)
    out = white.transform(x)
    assert white.n_floored == 1
    assert Whitening(eps=1e-9).fit(x).n_floored == 0  # 10⁻⁴ is above 10⁻⁹ × 10⁴
    np.testing.assert_allclose(
        np.cov(out, rowvar=False), np.diag([1.0, 1e-2]), atol=1e-9
    )
    # The floor scales with the data: whitening 1000·x gives the same output.
    np.testing.assert_allclose(
        Whitening(eps=1e-6).fit(1000 * x).transform(1000 * x), out, atol=1e-9
    )


def test_fit_stream_honours_k_and_eps():
    # 10 points in 20 dimensions: eps decides how far the null directions are scaled up.
    x = anisotropic(10)
    batches = [x[:4], x[4:]]
    for k, eps in [(None, 1e-2), (3, 1e-6)]:
        streamed = Whitening(k=k, eps=eps).fit_stream(batches)
        np.testing.assert_allclose(
            np.abs(streamed.transform(x)),
            np.abs(Whitening(k=k, eps=eps).fit(x).transform(x)),
            atol=1e-6,
        )
    assert StreamingWhitening(20).partial_fit(x).finalize(k=3).k == 3
    with pytest.raises(ValueError, match="no batches"):
        Whitening().fit_stream([])


def test_all_but_the_top_with_an_explicit_number_of_directions():
    x = anisotropic(500)
    lam = np.sort(np.linalg.eigvalsh(np.cov(x, rowvar=False)))[::-1]
    three = AllButTheTop(n_components=3).fit(x)
    assert three.directions.shape == (20, 3)
    assert np.trace(np.cov(three.transform(x), rowvar=False)) == pytest.approx(
        lam[3:].sum(), rel=1e-9
    )
    none = AllButTheTop(n_components=0).fit(x)  # removes the mean only
    np.testing.assert_allclose(none.transform(x), x - x.mean(0), atol=1e-9)
    with pytest.raises(ValueError, match="between 0 and dim - 1 = 19, got 20"):
        AllButTheTop(n_components=20).fit(x)
    # Two rows suffice, and float32 stays float32 (as for Whitening).
    assert AllButTheTop().fit(x[:2]).transform(x[:2]).shape == (2, 20)
    assert AllButTheTop().fit(x).transform(x.astype(np.float32)).dtype == np.float32


@pytest.mark.parametrize("make", [Whitening, AllButTheTop])
def test_fitting_one_vector_is_refused(make):
    with pytest.raises(ValueError, match="at least 2"):
        make().fit(np.ones((1, 3)))


def test_streaming_fit_keeps_the_regulariser_it_was_given():
    """A constant column makes the covariance singular, so ``eps`` decides the whitening matrix:
    the one-pass fit must use the same ``eps`` as the batch fit."""
    rng = np.random.default_rng(4)
    X = np.hstack([rng.normal(size=(200, 3)), np.full((200, 1), 2.0)])
    batch = Whitening(eps=1e-2).fit(X)
    stream = Whitening(eps=1e-2).fit_stream(np.array_split(X, 7))
    np.testing.assert_allclose(stream.W, batch.W, rtol=1e-8, atol=1e-10)
    assert np.isfinite(stream.transform(X)).all()


def test_log_prob_is_the_fitted_gaussians_density():
    from scipy.stats import multivariate_normal

    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 4)) @ rng.normal(size=(4, 4)) + 5.0
    new = rng.normal(size=(7, 4))
    oracle = multivariate_normal(x.mean(0), np.cov(x, rowvar=False))
    np.testing.assert_allclose(
        Whitening().fit(x).log_prob(new), oracle.logpdf(new), rtol=1e-10
    )


def test_log_prob_stays_finite_on_a_hyperplane_and_needs_full_width():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 3))
    x -= x.mean(axis=1, keepdims=True)  # every row sums to 0, like a LayerNorm output
    assert np.isfinite(Whitening().fit(x).log_prob(x)).all()
    with pytest.raises(ValueError, match="full-width"):
        Whitening(k=2).fit(x).log_prob(x)
    with pytest.raises(RuntimeError, match="before fit"):
        Whitening().log_prob(x)


def test_constant_data_is_refused_not_divided_by_zero():
    with pytest.raises(ValueError, match="no variance"):
        Whitening().fit(np.ones((10, 4)))
