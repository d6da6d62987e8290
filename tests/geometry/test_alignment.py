"""Alignment and uniformity (Wang & Isola 2020) against hand cases and brute force."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import pdist

from bertflow_mini.geometry.alignment import (
    alignment,
    stsb_alignment_uniformity,
    uniformity,
)


def test_alignment_by_hand():
    u = np.array([[1.0, 0.0], [0.0, 3.0]])
    assert alignment(u, u * 2) == 0.0  # scale does not matter: vectors are normalised
    assert alignment(u, -u) == pytest.approx(4.0)  # antipodes: ‖u − (−u)‖² = 4
    assert alignment(u[:1], u[1:]) == pytest.approx(2.0)  # orthogonal: ‖u − v‖² = 2
    assert alignment(u[:1], u[1:], alpha=1) == pytest.approx(np.sqrt(2))
    with pytest.raises(ValueError):
        alignment(u, u[:1])
    with pytest.raises(ValueError, match="zero"):
        alignment(u, np.zeros((2, 2)))


def test_uniformity_equals_brute_force_over_pairs():
    x = np.random.default_rng(0).normal(size=(60, 5))
    u = x / np.linalg.norm(x, axis=1, keepdims=True)
    want = np.log(np.mean(np.exp(-2 * pdist(u, "sqeuclidean"))))
    assert uniformity(x) == pytest.approx(want, abs=1e-12)


def test_uniformity_limits_collapsed_is_zero_spread_is_about_minus_four():
    assert uniformity(np.ones((10, 3))) == pytest.approx(0.0, abs=1e-12)
    # uniform directions in high dimension
    spread = np.random.default_rng(1).normal(size=(2000, 512))
    assert uniformity(spread) == pytest.approx(-4.0, abs=0.05)
    sub = uniformity(spread, max_rows=500)
    assert sub == pytest.approx(-4.0, abs=0.05) and sub != uniformity(spread)


def test_stsb_measurement_uses_high_scoring_pairs(mini_data, monkeypatch):
    from bertflow_mini.data import load_sts

    monkeypatch.setenv("BERTFLOW_DATA", str(mini_data))
    pairs = load_sts("STSB", "test")
    seen = []

    def embed(sentences):
        seen.append(list(sentences))
        return np.random.default_rng(len(sentences)).normal(size=(len(sentences), 4))

    out = stsb_alignment_uniformity(embed, threshold=4.0)
    assert set(out) == {"alignment", "uniformity"}
    assert seen[0] == [a for a, s in zip(pairs.sent1, pairs.scores) if s >= 4.0]
    assert seen[2] == pairs.sentences()


def test_iso_scores_by_sample_separates_fit_sample_size_and_test_shift():
    from bertflow_mini.geometry.alignment import iso_scores_by_sample
    from bertflow_mini.postprocess.whitening import Whitening

    rng = np.random.default_rng(0)
    d = 20
    scales = np.linspace(0.2, 5.0, d)  # a strongly anisotropic cloud
    X = rng.standard_normal((4000, d)) * scales
    # test rows: the same cloud with one direction stretched
    test = rng.standard_normal((400, d)) * scales
    test[:, 0] *= 6
    white = Whitening().fit(X)
    table = iso_scores_by_sample({"raw": None, "whitened": white.transform}, X, test)
    fitted, subset, on_test = table.columns[:3]
    w, g = table.loc["whitened"], table.loc["N(0, I) sample of each size"]
    # whitening makes the fitted rows' covariance the identity: IsoScore 1, spectrum all 1
    assert w[fitted] == pytest.approx(1.0, abs=1e-6)
    assert w["covariance eigenvalue, min"] == pytest.approx(1.0, abs=1e-6)
    assert w["covariance eigenvalue, max"] == pytest.approx(1.0, abs=1e-6)
    # a random subset of the fitted rows scores like an isotropic sample of its size
    assert w[subset] < 1 - 1e-3
    assert w[subset] == pytest.approx(g[subset], abs=0.02)
    # the stretched test rows score lower than the subset
    assert w[on_test] < w[subset] - 0.1
    # the raw cloud: its spectrum is the scales squared
    r = table.loc["raw"]
    assert r["coordinate variance, min"] == pytest.approx(0.04, rel=0.1)
    assert r["covariance eigenvalue, max"] == pytest.approx(25.0, rel=0.1)
    assert r[fitted] < w[subset] - 0.2
    with pytest.raises(ValueError, match="more than"):
        iso_scores_by_sample({"raw": None}, X[:10], test)
