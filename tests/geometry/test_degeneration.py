"""Tests for bertflow_mini.geometry.degeneration: hull LP, unseen-token dynamics (with and without a bias),
LayerNorm's separating hyperplane, cosine regulariser, Zipf toy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.spatial
import torch

from bertflow_mini.geometry.degeneration import (
    cosine_regularizer,
    layernorm_separator,
    make_hidden_states,
    min_norm_point,
    optimal_direction,
    origin_in_convex_hull,
    step_size_limit,
    train_zipf_softmax,
    unseen_token_dynamics,
    with_bias_column,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# ----------------------------------------------------------------------------- (a) convex hull


def test_hull_lp_on_hand_made_triangles():
    triangle = np.array([[1.0, 0.0], [-1.0, 1.0], [-1.0, -1.0]])
    assert origin_in_convex_hull(triangle)
    assert not origin_in_convex_hull(triangle + [3.0, 0.0])
    # origin on a segment
    assert origin_in_convex_hull(np.array([[1.0, 1.0], [-1.0, -1.0]]))
    assert not origin_in_convex_hull(np.array([[1.0, 1.0], [2.0, 2.0]]))


def test_hull_lp_agrees_with_scipy_convex_hull_in_2d():
    rng = np.random.default_rng(0)
    answers = []
    for _ in range(60):
        P = rng.normal(size=(8, 2)) + rng.normal(scale=1.5, size=2)
        # facet normal·x + offset <= 0 inside
        offsets = scipy.spatial.ConvexHull(P).equations[:, -1]
        if np.abs(offsets).min() < 1e-6:
            continue  # origin on the boundary: skip the tie
        expected = bool((offsets < 0).all())
        assert origin_in_convex_hull(P) == expected
        answers.append(expected)
    assert 10 < sum(answers) < len(answers) - 10  # both cases were really exercised


def test_make_hidden_states_builds_both_cases():
    for seed in range(3):
        assert not origin_in_convex_hull(
            make_hidden_states(40, 6, origin_inside=False, seed=seed)
        )
        assert origin_in_convex_hull(
            make_hidden_states(40, 6, origin_inside=True, seed=seed)
        )
    with pytest.raises(ValueError, match="n > d"):
        make_hidden_states(3, 5, origin_inside=True)


def test_optimal_direction_is_max_margin():
    H = make_hidden_states(30, 4, origin_inside=False, seed=1)
    u = optimal_direction(H)
    p = min_norm_point(H)
    assert np.linalg.norm(u) == pytest.approx(1.0)
    # Duality certificate: margin of u equals distance of the hull to the origin, so both are optimal.
    assert (H @ u).max() == pytest.approx(-np.linalg.norm(p), rel=1e-5)
    V = np.random.default_rng(0).normal(size=(2000, 4))
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    assert (V @ H.T).max(axis=1).min() >= (H @ u).max() - 1e-6
    with pytest.raises(ValueError, match="inside"):
        optimal_direction(make_hidden_states(30, 4, origin_inside=True, seed=1))


# ----------------------------------------------------------------------------- unseen token


def test_unseen_token_norm_grows_without_bound_when_origin_outside():
    H = make_hidden_states(50, 5, origin_inside=False, seed=0)
    W_seen = np.random.default_rng(1).normal(size=(20, 5))
    run = unseen_token_dynamics(H, W_seen, steps=20000, lr=1.0, seed=0)
    n = run.norms
    assert np.all(np.diff(n[100:]) > 0)  # still growing at every step
    # ~log t: equal gains per decade
    assert n[2000] - n[200] > 1.0 and n[20000] - n[2000] > 1.0
    # infimum 0, reached only at ∞
    assert np.all(np.diff(run.loss) < 0) and run.loss[-1] < 0.01 * run.loss[0]
    assert run.cos_to_optimal[-1] > 0.98  # heading for the max-margin direction


def test_unseen_token_norm_stays_bounded_when_origin_inside():
    H = make_hidden_states(50, 5, origin_inside=True, seed=0)
    W_seen = np.random.default_rng(1).normal(size=(20, 5))
    run = unseen_token_dynamics(H, W_seen, steps=20000, lr=1.0, seed=0)
    assert run.norms.max() < 10.0
    # converged to a finite minimiser
    assert abs(run.norms[-1] - run.norms[10000]) < 1e-6
    assert run.u is None and np.isnan(run.cos_to_optimal).all()


def test_unseen_token_gradient_matches_autograd():
    H = make_hidden_states(10, 3, origin_inside=False, seed=2)
    W_seen = np.random.default_rng(3).normal(size=(4, 3))
    lr = 0.5
    run = unseen_token_dynamics(H, W_seen, steps=1, lr=lr, seed=0)
    w0 = torch.tensor(np.random.default_rng(0).normal(size=3) * 0.1, requires_grad=True)
    Ht, Wt = torch.tensor(H), torch.tensor(W_seen)
    logits = torch.cat([Ht @ Wt.T, (Ht @ w0)[:, None]], dim=1)
    # any seen targets: w's gradient does not depend on them
    targets = torch.zeros(10, dtype=torch.long)
    torch.nn.functional.cross_entropy(logits, targets).backward()
    np.testing.assert_allclose(run.w, (w0 - lr * w0.grad).detach().numpy(), rtol=1e-10)


def test_step_size_limit_is_two_over_the_largest_hessian_eigenvalue():
    # autograd's Hessian of the mean loss where every logit sits at c (σ' = 1/4, its largest),
    # so its top eigenvalue is the smoothness β; the limit is 2/β
    X = make_hidden_states(12, 3, origin_inside=False, seed=4)
    c = torch.tensor(np.random.default_rng(5).normal(size=12))
    Xt = torch.tensor(X)

    def loss(w, shift):
        return torch.nn.functional.softplus(Xt @ w - shift).mean()

    # at w = 0 with shift 0 every logit is 0: σ' = 1/4 everywhere
    hessian = torch.autograd.functional.hessian(
        lambda w: loss(w, 0.0), torch.zeros(3, dtype=torch.float64)
    )
    beta = torch.linalg.eigvalsh(hessian).max().item()
    assert step_size_limit(X) == pytest.approx(2 / beta, rel=1e-10)
    # anywhere else σ' < 1/4: the Hessian is never larger
    elsewhere = torch.autograd.functional.hessian(
        lambda w: loss(w, c), torch.full((3,), 0.3, dtype=torch.float64)
    )
    assert torch.linalg.eigvalsh(elsewhere).max().item() < beta
    # by hand: one point x = (2, 0): β = 4/4 = 1, limit 2
    assert step_size_limit(np.array([[2.0, 0.0]])) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        step_size_limit(np.array([[np.nan, 1.0]]))


# ----------------------------------------------------------------------------- with an output bias


def test_with_a_bias_the_unseen_token_escapes_through_b_even_with_the_origin_inside():
    H = make_hidden_states(50, 5, origin_inside=True, seed=0)
    W_seen = np.random.default_rng(1).normal(size=(20, 5))
    plain = unseen_token_dynamics(H, W_seen, steps=20000, lr=1.0, seed=0)
    biased = unseen_token_dynamics(H, W_seen, steps=20000, lr=1.0, seed=0, bias=True)
    # the bias only ever falls
    assert biased.biases[0] == 0 and np.all(np.diff(biased.biases) < 0)
    # b runs off, w stays bounded
    assert biased.biases[-1] < -5 and biased.norms.max() < 10.0
    # a loss the embedding alone cannot reach
    assert biased.loss[-1] < 0.01 * plain.loss[-1]
    assert biased.u is not None and biased.cos_to_optimal[-1] > 0.99
    # p* = 0: the direction is (0, -1)
    np.testing.assert_allclose(biased.u, [0, 0, 0, 0, 0, -1], atol=1e-6)


def test_lifted_hull_nearest_point_is_p_star_with_a_one_appended():
    H = make_hidden_states(30, 4, origin_inside=False, seed=3)
    p = min_norm_point(H)
    np.testing.assert_allclose(
        min_norm_point(with_bias_column(H)), np.append(p, 1.0), atol=1e-6
    )
    u = optimal_direction(with_bias_column(H))
    np.testing.assert_allclose(u, -np.append(p, 1.0) / np.sqrt(1 + p @ p), atol=1e-6)


def test_with_a_bias_the_ratio_of_norm_to_bias_heads_for_the_margin():
    H = make_hidden_states(50, 3, origin_inside=False, seed=0, margin=1.0)
    W_seen = np.random.default_rng(1).normal(size=(10, 3))
    run = unseen_token_dynamics(H, W_seen, steps=50000, lr=1.0, seed=0, bias=True)
    gamma = np.linalg.norm(min_norm_point(H))
    ratios = run.norms[[5000, 50000]] / np.abs(run.biases[[5000, 50000]])
    assert abs(ratios[1] - gamma) < abs(ratios[0] - gamma)  # converging on γ
    # towards −(p*, 1)/‖·‖
    assert run.cos_to_optimal[50000] > max(run.cos_to_optimal[5000], 0.98)


def test_biased_gradient_step_matches_autograd():
    H = make_hidden_states(10, 3, origin_inside=True, seed=2)
    W_seen = np.random.default_rng(3).normal(size=(4, 3))
    lr = 0.5
    run = unseen_token_dynamics(H, W_seen, steps=1, lr=lr, seed=0, bias=True)
    w0 = torch.tensor(np.random.default_rng(0).normal(size=3) * 0.1, requires_grad=True)
    b0 = torch.zeros((), dtype=torch.float64, requires_grad=True)
    Ht, Wt = torch.tensor(H), torch.tensor(W_seen)
    # seen tokens have no bias here
    logits = torch.cat([Ht @ Wt.T, (Ht @ w0 + b0)[:, None]], dim=1)
    torch.nn.functional.cross_entropy(
        logits, torch.zeros(10, dtype=torch.long)
    ).backward()
    np.testing.assert_allclose(run.w, (w0 - lr * w0.grad).detach().numpy(), rtol=1e-10)
    assert run.biases[1] == pytest.approx((b0 - lr * b0.grad).item(), rel=1e-10)


# ----------------------------------------------------------------------------- LayerNorm's hyperplane


def test_layernorm_separator_hand_case():
    u, margin = layernorm_separator(np.ones(16), np.full(16, -0.5))
    np.testing.assert_allclose(u, np.full(16, 0.25))  # −sign(β)·1/√d
    assert margin == pytest.approx(0.5 * 4.0)  # |β|·√d


def test_layernorm_separator_holds_for_every_output_of_a_real_layernorm():
    gen = torch.Generator().manual_seed(0)
    ln = torch.nn.LayerNorm(12)
    with torch.no_grad():
        ln.weight.copy_(torch.rand(12, generator=gen) + 0.5)
        ln.bias.copy_(torch.randn(12, generator=gen))
        out = ln(torch.randn(500, 12, generator=gen) * 5 - 2).double().numpy()
    u, margin = layernorm_separator(
        ln.weight.detach().numpy(), ln.bias.detach().numpy()
    )
    assert margin > 0.05
    np.testing.assert_allclose(out @ u, -margin, atol=1e-5)  # all on one hyperplane
    # a lower bound on the true margin
    assert np.linalg.norm(min_norm_point(out)) >= margin - 1e-6


def test_layernorm_separator_without_shift_guarantees_nothing_and_rejects_bad_input():
    assert layernorm_separator(np.ones(4), np.zeros(4))[1] == 0.0
    with pytest.raises(ValueError, match="gain"):
        layernorm_separator(np.array([1.0, 0.0]), np.zeros(2))
    with pytest.raises(ValueError, match="1-D"):
        layernorm_separator(np.ones(3), np.zeros(4))


# ----------------------------------------------------------------------------- (c) cosine regulariser


def test_cosine_regularizer_equals_brute_force():
    E = (
        torch.randn(
            37, 9, generator=torch.Generator().manual_seed(0), dtype=torch.float64
        )
        + 0.5
    )
    U = torch.nn.functional.normalize(E, dim=1)
    C = U @ U.T
    brute = (C.sum() - C.diagonal().sum()) / (37 * 36)
    assert cosine_regularizer(E).item() == pytest.approx(brute.item(), rel=1e-12)
    assert cosine_regularizer(torch.ones(5, 3)).item() == pytest.approx(1.0)
    assert cosine_regularizer(
        torch.tensor([[1.0, 0.0], [-1.0, 0.0]])
    ).item() == pytest.approx(-1.0)
    E.requires_grad_(True)
    cosine_regularizer(E).backward()
    assert torch.isfinite(E.grad).all() and E.grad.abs().sum() > 0


def test_cosine_regularizer_rejects_bad_input():
    with pytest.raises(ValueError, match="NaN"):
        cosine_regularizer(torch.tensor([[1.0, float("nan")], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="2 rows"):
        cosine_regularizer(torch.ones(1, 3))


# ----------------------------------------------------------------------------- (c) Zipf toy


def test_zipf_toy_rare_tokens_drift_against_the_contexts():
    run = train_zipf_softmax(
        vocab_size=300, dim=8, n_contexts=60, steps=150, n_samples=4000, seed=0
    )
    assert run.W.shape == (300, 8) and run.counts.sum() == 4000
    assert run.history["loss"].iloc[-1] < run.history["loss"].iloc[0] - 1.0
    mean_h = run.H.mean(axis=0) / np.linalg.norm(run.H.mean(axis=0))
    along = run.W @ mean_h
    frequent, rare = run.counts >= 50, run.counts <= 2
    assert frequent.sum() >= 5 and rare.sum() >= 50
    # rare ones pushed to −mean(h)
    assert along[rare].mean() < 0 < along[frequent].mean()
    norms = np.linalg.norm(run.W, axis=1)
    assert norms[rare].mean() > norms[frequent].mean()


def test_zipf_toy_cosine_regularizer_spreads_embeddings():
    kw = {
        "vocab_size": 300,
        "dim": 8,
        "n_contexts": 60,
        "steps": 150,
        "n_samples": 4000,
        "seed": 0,
    }
    plain = train_zipf_softmax(**kw).history["mean_cosine"].iloc[-1]
    reg = train_zipf_softmax(**kw, cosine_reg=1.0).history["mean_cosine"].iloc[-1]
    assert reg < plain - 0.02


# ----------------------------------------------------------------------------- (d) a rare token
def _rare_setup(seed: int = 0):
    from bertflow_mini.geometry.degeneration import make_hidden_states

    H = make_hidden_states(40, 3, origin_inside=False, seed=seed)
    W_seen = np.random.default_rng(seed + 1).normal(size=(15, 3))
    return H, W_seen


def test_rare_token_optimum_agrees_with_a_general_purpose_minimiser():
    import scipy.optimize
    import scipy.special

    from bertflow_mini.geometry.rare_tokens import rare_token_optimum

    H, W_seen = _rare_setup()
    c = scipy.special.logsumexp(H @ W_seen.T, axis=1)
    for share in (0.3, 0.05, 0.01):

        def loss(w, share=share):
            z = H @ w - c
            return (
                (1 - share) * np.logaddexp(0, z) + share * np.logaddexp(0, -z)
            ).mean()

        ref = scipy.optimize.minimize(
            loss,
            np.zeros(3),
            method="Nelder-Mead",
            options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 20_000},
        )
        w = rare_token_optimum(H, W_seen, share)
        assert loss(w) <= ref.fun + 1e-12
        np.testing.assert_allclose(w, ref.x, atol=1e-4)


def test_rare_token_optimum_runs_out_along_the_max_margin_direction_as_its_share_falls():
    from bertflow_mini.geometry.degeneration import optimal_direction
    from bertflow_mini.geometry.rare_tokens import rare_token_optimum

    H, W_seen = _rare_setup()
    u = optimal_direction(H)
    shares = (1e-2, 1e-4, 1e-6)
    w = [rare_token_optimum(H, W_seen, s) for s in shares]
    norms = [np.linalg.norm(x) for x in w]
    assert norms[0] < norms[1] < norms[2]
    assert w[-1] @ u / norms[-1] > 0.99


def test_rare_token_optimum_stays_near_the_origin_when_the_origin_is_inside_the_hull():
    from bertflow_mini.geometry.degeneration import make_hidden_states
    from bertflow_mini.geometry.rare_tokens import rare_token_optimum

    H = make_hidden_states(60, 2, origin_inside=True, seed=0)
    W_seen = np.random.default_rng(1).normal(size=(10, 2))
    norms = [
        np.linalg.norm(rare_token_optimum(H, W_seen, s)) for s in (1e-3, 1e-6, 1e-9)
    ]
    assert max(norms) < 5 and norms[2] - norms[1] < 0.5 * (norms[1] - norms[0]) + 0.5


def test_rare_token_norm_bound_holds_and_grows_as_the_share_falls():
    from bertflow_mini.geometry.rare_tokens import (
        rare_token_norm_bound,
        rare_token_optimum,
    )

    for seed in range(3):
        H, W_seen = _rare_setup(seed)
        bounds = []
        for share in (1e-2, 1e-4, 1e-6, 1e-9):
            bound = rare_token_norm_bound(H, W_seen, share)
            assert np.linalg.norm(rare_token_optimum(H, W_seen, share)) >= bound
            bounds.append(bound)
        assert np.all(np.diff(bounds) >= 0) and bounds[-1] > bounds[0] >= 0


def test_rare_token_functions_reject_bad_input():
    from bertflow_mini.geometry.degeneration import (
        make_hidden_states,
    )
    from bertflow_mini.geometry.rare_tokens import (
        rare_token_norm_bound,
        rare_token_optimum,
    )

    H, W_seen = _rare_setup()
    for share in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match="share"):
            rare_token_optimum(H, W_seen, share)
    flat = np.c_[H[:, :2], np.zeros(len(H))]  # spans only a plane of ℝ³
    with pytest.raises(ValueError, match="span"):
        rare_token_optimum(flat, W_seen, 0.01)
    inside = make_hidden_states(60, 3, origin_inside=True, seed=0)
    with pytest.raises(ValueError, match="inside"):
        rare_token_norm_bound(inside, W_seen, 0.01)
