"""The chapter-5 workbench: toy data, the block checker, and the k-NN overlap measure."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bertflow_mini.chapters.flow_toys import (
    check_block,
    density_grid,
    excite_coupling,
    latent,
    make_cone,
    make_moons,
    randomize,
    sample,
    steps_per_coordinate,
)
from bertflow_mini.geometry import neighbours
from bertflow_mini.geometry.neighbours import (
    cosine_neighbours,
    knn_overlap,
    knn_overlaps,
)
from bertflow_mini.postprocess.flow import (
    ActNorm,
    AdditiveCoupling,
    AffineCoupling,
    Glow,
    fit_flow,
)


def test_cone_points_share_a_direction_and_moons_are_two_bands():
    cone = make_cone(2000, seed=0)
    angles = np.degrees(np.arctan2(cone[:, 1], cone[:, 0]))
    assert (
        abs(np.median(angles) - 60) < 1 and np.percentile(np.abs(angles - 60), 99) < 25
    )
    moons = make_moons(2000, noise=0.0, seed=0)
    # without noise every point lies on one of the two unit circles, centred (0, 0) and (1, 0.5)
    r_upper = np.hypot(moons[:, 0], moons[:, 1])
    r_lower = np.hypot(moons[:, 0] - 1.0, moons[:, 1] - 0.5)
    assert np.minimum(np.abs(r_upper - 1), np.abs(r_lower - 1)).max() < 1e-6


def test_check_block_catches_a_wrong_logdet():
    good = randomize(ActNorm(4)).double()
    x = torch.randn(
        5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0)
    )
    assert max(check_block(good, x).values()) < 1e-10

    class LyingActNorm(ActNorm):  # reports twice the true log-det
        def forward(self, x):
            y, logdet = super().forward(x)
            return y, 2 * logdet

    liar = randomize(LyingActNorm(4)).double()
    result = check_block(liar, x)
    assert result["inverse error"] < 1e-10
    assert result["log-det error"] > 0.01 and result["log-dets cancel to"] > 0.01


def test_randomize_moves_parameters_and_freezes_actnorm_init():
    block = randomize(AdditiveCoupling(6, width=4), scale=0.3, seed=1)
    assert all(m.initialized for m in block.modules() if isinstance(m, ActNorm))
    x = torch.randn(8, 6)
    assert not torch.equal(block(x)[0], x)  # a fresh coupling would be the identity


def test_excited_coupling_is_no_longer_the_identity_but_still_volume_preserving():
    x = make_cone(100)
    coupling = excite_coupling(AdditiveCoupling(2), x)
    y, logdet = coupling.eval()(torch.from_numpy(x))
    assert not torch.allclose(y, torch.from_numpy(x)) and torch.equal(
        logdet, torch.zeros(100)
    )


def test_additive_and_affine_couplings_excited_alike_share_their_shift():
    x = make_cone(200)
    additive = excite_coupling(AdditiveCoupling(2), x, seed=4).eval()
    affine = excite_coupling(AffineCoupling(2), x, seed=4).eval()
    with torch.no_grad():
        t_additive = additive(torch.from_numpy(x))[0][:, 1:] - torch.from_numpy(
            x[:, 1:]
        )
        y, logdet = affine(torch.from_numpy(x))
    # y₂ = (x₂ + shift(x₁)) · exp(log_scale(x₁)), and with one coordinate logdet = log_scale
    log_scale = logdet[:, None]
    shift = y[:, 1:] * torch.exp(-log_scale) - torch.from_numpy(x[:, 1:])
    torch.testing.assert_close(shift, t_additive)
    # the affine one also scales, by an amount that varies with x1
    assert log_scale.std() > 0.01
    other = excite_coupling(AdditiveCoupling(2), x, seed=5).eval()
    assert not torch.allclose(
        other(torch.from_numpy(x))[0], additive(torch.from_numpy(x))[0]
    )


def test_latent_and_sample_are_the_flows_own_maps_in_numpy():
    x = make_moons(300)
    flow = fit_flow(
        x, levels=1, depth=2, epochs=1, batch_size=100, progress=False, device="cpu"
    ).flow
    with torch.no_grad():
        z = flow.eval()(torch.from_numpy(x).float())[0].numpy()
    np.testing.assert_array_equal(latent(flow, x), z)
    draws = sample(flow, 50, seed=3)
    assert isinstance(draws, np.ndarray) and draws.shape == (50, 2)
    np.testing.assert_array_equal(draws, sample(flow, 50, seed=3))
    # f(f⁻¹(z)) = z: the draws are the prior's, pushed through the inverse
    back = latent(flow, draws)
    prior = torch.randn(50, 2, generator=torch.Generator().manual_seed(3)).numpy()
    np.testing.assert_allclose(back, prior, atol=1e-4)


def test_steps_per_coordinate_counts_each_levels_channels():
    steps = steps_per_coordinate(Glow(256, levels=3, depth=3))
    assert np.bincount(steps).nonzero()[0].tolist() == [3, 6, 9]
    assert (
        (steps == 3).sum() == 128
        and (steps == 6).sum() == 64
        and (steps == 9).sum() == 64
    )
    assert steps_per_coordinate(Glow(7, levels=2, depth=2)).tolist() == [
        4,
        4,
        4,
        4,
        2,
        2,
        2,
    ]


def test_density_grid_of_a_standardising_flow_integrates_to_one():
    x = make_cone(500)
    glow = Glow(2, levels=1, depth=1).train()
    glow(torch.from_numpy(x))  # data-dependent init: a Gaussian fitted per axis
    _, _, logp, cell = density_grid(glow.eval(), x, n=200)
    # a 2-D Gaussian with the data's per-axis spread, over the data's box ± 0.5: almost all its mass
    assert np.exp(logp).sum() * cell == pytest.approx(1.0, abs=0.02)


def test_knn_overlap_by_hand_and_its_invariances():
    # four points on the unit circle at 0°, 10°, 90°, 100°: each one's nearest is its 10° partner
    angles = np.radians([0, 10, 90, 100])
    a = np.column_stack([np.cos(angles), np.sin(angles)])
    assert sorted(cosine_neighbours(a, np.arange(4), 1).ravel().tolist()) == [
        0,
        1,
        2,
        3,
    ]
    assert cosine_neighbours(a, np.arange(4), 1).ravel().tolist() == [1, 0, 3, 2]
    # swapping the partners (0° with 90°) changes every neighbour
    b = a[[0, 2, 1, 3]] @ np.eye(2)
    assert knn_overlap(a, a, 1) == 1.0
    assert knn_overlap(a, b, 1) == 0.0
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 8))
    q, _ = np.linalg.qr(rng.normal(size=(8, 8)))
    assert knn_overlap(x, 3.0 * x @ q, 5) == 1.0  # cosine ignores rotation and scale
    with pytest.raises(ValueError, match="same rows"):
        knn_overlap(x, x[:10])


def test_knn_overlaps_match_brute_force_and_find_each_space_once(monkeypatch):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(60, 6))
    spaces = {
        "x": x,
        "noisy": x + 0.7 * rng.normal(size=x.shape),
        "other": rng.normal(size=x.shape),
    }
    pairs = [("x", "noisy"), ("x", "other"), ("noisy", "other")]

    def brute(a, b, k):  # full sort, Python sets: the definition, written out
        def top(v):
            u = v / np.linalg.norm(v, axis=1, keepdims=True)
            s = u @ u.T
            np.fill_diagonal(s, -np.inf)
            return [set(np.argsort(-row)[:k]) for row in s]

        return np.mean([len(p & q) / k for p, q in zip(top(a), top(b))])

    calls = []
    real = neighbours.cosine_neighbours
    monkeypatch.setattr(
        neighbours,
        "cosine_neighbours",
        lambda v, q, k: calls.append(1) or real(v, q, k),
    )
    got = knn_overlaps(spaces, pairs, 5)
    assert list(got) == ["x vs noisy", "x vs other", "noisy vs other"]
    for a, b in pairs:
        assert got[f"{a} vs {b}"] == pytest.approx(
            brute(spaces[a], spaces[b], 5), abs=1e-12
        )
    # three spaces, three pairs: each space's neighbours found once
    assert len(calls) == 3
    assert got["x vs noisy"] > got["x vs other"]
    with pytest.raises(ValueError, match="not given"):
        knn_overlaps(spaces, [("x", "y")])
    with pytest.raises(ValueError, match="k must be"):
        knn_overlaps(spaces, pairs, 0)
