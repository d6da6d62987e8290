"""The flow is invertible, its log-determinants are exact, it trains, and it agrees with normflows."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch.autograd.functional import jacobian

from bertflow_mini.chapters.flow_toys import randomize as toys_randomize
from bertflow_mini.postprocess.flow import (
    ActNorm,
    AdditiveCoupling,
    AffineCoupling,
    BertAdamW,
    FlowConfig,
    FlowStep,
    FlowTransform,
    Glow,
    InvertibleLinear,
    Permutation,
    Reverse,
    Shuffle,
    fit_flow,
    log_likelihood,
    missing_bias_correction,
)

try:
    import normflows as nf  # a test-only dependency: pip install -e ".[test]"
except ImportError:  # pragma: no cover
    nf = None


def randomize(module: torch.nn.Module) -> torch.nn.Module:
    """The chapter's randomize, at a scale that keeps every affine coupling invertible in float64."""
    return toys_randomize(module, scale=0.2)


needs_normflows = pytest.mark.skipif(
    nf is None, reason="normflows is not installed (pip install -e '.[test]')"
)


def make_block(kind: str, dim: int) -> torch.nn.Module:
    torch.manual_seed(0)
    return {
        "actnorm": lambda: ActNorm(dim),
        "reverse": lambda: Reverse(dim),
        "shuffle": lambda: Shuffle(dim),
        "lu": lambda: InvertibleLinear(dim),
        "additive": lambda: AdditiveCoupling(dim, width=8),
        "affine": lambda: AffineCoupling(dim, width=8),
        "step-additive-reverse": lambda: FlowStep(dim, 8, "additive", "reverse"),
        "step-affine-lu": lambda: FlowStep(dim, 8, "affine", "lu"),
        "step-additive-shuffle": lambda: FlowStep(dim, 8, "additive", "shuffle"),
        "glow-additive-reverse": lambda: Glow(dim, levels=3, depth=2, width=8),
        "glow-affine-lu": lambda: Glow(
            dim, levels=3, depth=2, width=8, coupling="affine", permutation="lu"
        ),
    }[kind]()


BLOCKS = [
    "actnorm",
    "reverse",
    "shuffle",
    "lu",
    "additive",
    "affine",
    "step-additive-reverse",
    "step-affine-lu",
    "step-additive-shuffle",
    "glow-additive-reverse",
    "glow-affine-lu",
]


@pytest.mark.parametrize("dim", [6, 7])
@pytest.mark.parametrize("kind", BLOCKS)
def test_inverse_undoes_forward_and_its_logdet_cancels(kind, dim):
    block = randomize(make_block(kind, dim).double())
    x = torch.randn(
        64, dim, dtype=torch.float64, generator=torch.Generator().manual_seed(1)
    )
    y, logdet = block(x)
    back, inverse_logdet = block.inverse(y)
    assert y.shape == x.shape and logdet.shape == inverse_logdet.shape == (64,)
    torch.testing.assert_close(back, x, atol=1e-5, rtol=0)
    torch.testing.assert_close(inverse_logdet, -logdet, atol=1e-9, rtol=1e-9)
    assert not torch.allclose(y, x)  # the block really does something


@pytest.mark.parametrize("dim", [6, 7])
@pytest.mark.parametrize("kind", BLOCKS)
def test_logdet_matches_autograd_jacobian(kind, dim):
    block = randomize(make_block(kind, dim).double()).eval()
    x = torch.randn(
        3, dim, dtype=torch.float64, generator=torch.Generator().manual_seed(2)
    )
    _, logdet = block(x)
    for i in range(len(x)):
        jac = jacobian(lambda v: block(v[None])[0][0], x[i])
        sign, logabsdet = torch.linalg.slogdet(jac)
        assert sign != 0
        assert logdet[i].item() == pytest.approx(logabsdet.item(), abs=1e-8)


def test_actnorm_init_gives_zero_mean_unit_variance():
    x = 5.0 + 3.0 * torch.randn(
        500, 10, generator=torch.Generator().manual_seed(0)
    ) * torch.arange(1, 11)
    norm = ActNorm(10).train()
    y, _ = norm(x)
    torch.testing.assert_close(y.mean(0), torch.zeros(10), atol=1e-5, rtol=0)
    torch.testing.assert_close(
        y.var(0, unbiased=False), torch.ones(10), atol=1e-4, rtol=0
    )
    # ... and only the first batch initialises, also after a save/load round trip.
    params = [p.detach().clone() for p in norm.parameters()]
    norm(x + 100.0)
    assert all(torch.equal(a, b) for a, b in zip(params, norm.parameters()))
    clone = ActNorm(10).train()
    clone.load_state_dict(norm.state_dict())
    torch.testing.assert_close(clone(x)[0], y)


def test_actnorm_centres_but_does_not_blow_up_constant_channels():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 4, generator=g) * torch.tensor([1.0, 2.0, 0.5, 1.0])
    x[:, 3] = (
        1e-30 * torch.randn(64, generator=g) + 0.7
    )  # a dead channel, as in real embeddings
    norm = ActNorm(4).train()
    y, _ = norm(x)
    torch.testing.assert_close(
        y[:, :3].std(0, unbiased=False), torch.ones(3), atol=1e-4, rtol=0
    )
    assert norm.logs[3] == 0 and y[:, 3].abs().max() < 1e-6


def test_fit_survives_dead_dimensions():
    """all-MiniLM-L6-v2's last-layer average has dimensions with std ≈ 1e-32; the fit must not explode."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(960, 8)) * np.linspace(0.1, 0.4, 8)
    x[:, 2] = 1e-32 * rng.normal(size=960) + 2e-31
    x[:, 5] = 2e-9 * rng.normal(size=960)
    result = fit_flow(x.astype(np.float32), levels=2, progress=False)
    assert np.isfinite(result.losses).all() and len(result.losses) == 30
    z = FlowTransform(levels=2, progress=False).fit(x).transform(x)
    assert np.abs(z).max() < 100


def test_additive_reverse_logdet_is_input_independent():
    glow = Glow(8, levels=2, depth=2, width=8).train()
    g = torch.Generator().manual_seed(0)
    glow(3.0 * torch.randn(32, 8, generator=g))  # data-dependent init
    randomize(glow)
    _, a = glow(torch.randn(16, 8, generator=g))
    _, b = glow(10.0 * torch.randn(16, 8, generator=g) + 4.0)
    expected = sum(
        3.0 * m.logs.sum()
        for n, m in glow.named_modules()
        if isinstance(m, ActNorm) and ".net." not in n
    )
    torch.testing.assert_close(a, b)
    torch.testing.assert_close(a, expected.expand(16))


def test_actnorm_reaches_diagonal_gaussian_mle():
    """Maximising the likelihood of an ActNorm-only flow IS fitting a diagonal Gaussian."""
    g = torch.Generator().manual_seed(0)
    x = (
        torch.tensor([1.0, -2.0, 0.5, 3.0])
        + torch.tensor([0.5, 2.0, 1.0, 0.1]) * torch.randn(2000, 4, generator=g)
    ).double()
    var = x.var(0, unbiased=False)
    mle = (
        (-0.5 * torch.log(2 * math.pi * var) - 0.5).sum().item()
    )  # mean log-likelihood at the MLE

    def mean_loglik(norm: ActNorm) -> float:
        z, logdet = norm(x)
        return (-0.5 * (z**2 + math.log(2 * math.pi)).sum(1) + logdet).mean().item()

    # Data-dependent init lands on the MLE directly ...
    assert mean_loglik(ActNorm(4).double().train()) == pytest.approx(mle, abs=1e-5)
    # ... and gradient ascent from the identity gets there too.
    norm = ActNorm(4).double()
    norm.initialized.fill_(True)
    opt = torch.optim.Adam(norm.parameters(), lr=0.05)
    for _ in range(600):
        z, logdet = norm(x)
        loss = -(-0.5 * (z**2).sum(1) + logdet).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert mean_loglik(norm) == pytest.approx(mle, abs=1e-3)
    assert mean_loglik(norm) <= mle + 1e-9  # nothing beats the MLE


def test_flow_whitens_an_anisotropic_gaussian():
    """A fitted flow maps a correlated, shifted 16-d Gaussian to (nearly) N(0, I).

    Input: covariance eigenvalues from 0.1 to 10 (condition number 100), random rotation.
    Tolerance: even an exact whitening shows sampling spread on 2000 held-out points — the
    sample-covariance eigenvalues of N(0, I₁₆) fill about [0.83, 1.19] (Marchenko–Pastur,
    (1 ± √(16/2000))²) and entries deviate by up to ≈ 0.1. The flow gets ~140 steps (2 s), not
    convergence; across data seeds it reaches eigenvalues within [0.65, 1.5], entries within 0.18
    and means within 0.23. We assert eigenvalues in [0.5, 2] (condition number ≤ 4 instead of 100),
    entries within 0.3 and means within 0.4 of the standard normal's.
    """
    rng = np.random.default_rng(0)
    rotation, _ = np.linalg.qr(rng.normal(size=(16, 16)))
    cov = rotation @ np.diag(np.logspace(-1, 1, 16)) @ rotation.T
    sample = rng.multivariate_normal(np.linspace(-2, 2, 16), cov, size=8000).astype(
        np.float32
    )
    train, test = sample[:6000], sample[6000:]
    transform = FlowTransform(
        levels=2,
        depth=3,
        epochs=6,
        batch_size=256,
        lr=3e-3,
        init_size=2000,
        progress=False,
    )
    z = transform.fit(train).transform(test)
    assert len(transform.losses) == 6 * math.ceil(
        6000 / 256
    )  # batch_size reached fit_flow
    eig_in, eig_out = (
        np.linalg.eigvalsh(np.cov(test.T)),
        np.linalg.eigvalsh(np.cov(z.T)),
    )
    assert eig_in.min() < 0.15 and eig_in.max() > 8
    assert 0.5 < eig_out.min() and eig_out.max() < 2.0
    assert np.abs(np.cov(z.T) - np.eye(16)).max() < 0.3
    assert np.abs(z.mean(0)).max() < 0.4


def test_flow_transform_is_the_flow_in_eval_mode_chunk_by_chunk():
    x = np.random.default_rng(1).normal(size=(50, 8))
    transform = FlowTransform(levels=2, depth=2, progress=False).fit(x)
    transform.rows_per_chunk = 7
    z = transform.transform(x)
    assert z.dtype == np.float64 and z.shape == x.shape
    with torch.no_grad():
        expected = transform.flow(torch.from_numpy(x).float())[0].numpy()
    np.testing.assert_allclose(
        z, expected, rtol=0, atol=1e-6
    )  # chunking only changes float32 rounding
    np.testing.assert_allclose(
        transform.transform(x.astype(np.float32)), expected, rtol=0, atol=1e-6
    )
    with pytest.raises(RuntimeError, match="before fit"):
        FlowTransform().transform(x)


def test_fit_flow_validates_input():
    good = np.random.default_rng(0).normal(size=(64, 8))
    bad = good.copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        fit_flow(bad, progress=False)
    with pytest.raises(ValueError, match="2-D"):
        fit_flow(good[0], progress=False)
    with pytest.raises(ValueError, match="too small"):
        fit_flow(
            good[:, :3], progress=False
        )  # 3 → 2 → 1 channels: no room for a coupling
    transform = FlowTransform(levels=2, depth=1, progress=False).fit(good)
    with pytest.raises(ValueError, match="8 columns"):
        transform.transform(good[:, :7])


def test_fit_flow_stops_on_divergence(monkeypatch):
    x = np.random.default_rng(0).normal(size=(256, 8))
    with pytest.raises(RuntimeError, match=r"step \d+"):
        fit_flow(x, levels=2, lr=1e6, progress=False)

    calls = {"n": 0}
    real = Glow.bits_per_dim

    def poisoned(self, batch):
        calls["n"] += 1
        out = real(self, batch)
        return out * float("nan") if calls["n"] == 3 else out

    monkeypatch.setattr(Glow, "bits_per_dim", poisoned)
    with pytest.raises(RuntimeError, match="step 2;"):
        fit_flow(x, levels=2, progress=False)


def test_fit_flow_is_deterministic_and_learns():
    x = (
        np.random.default_rng(0).normal(size=(640, 8)) @ np.diag(np.linspace(0.2, 3, 8))
        + 1.0
    )
    a = fit_flow(x, levels=2, depth=2, epochs=3, seed=3, progress=False)
    b = fit_flow(
        torch.from_numpy(x), levels=2, depth=2, epochs=3, seed=3, progress=False
    )
    c = fit_flow(x, levels=2, depth=2, epochs=3, seed=4, progress=False)
    assert len(a.losses) == 3 * 20
    assert a.losses == b.losses
    assert a.losses != c.losses
    assert np.mean(a.losses[-10:]) < np.mean(a.losses[:3])
    assert not a.flow.training


def test_bits_per_dim_is_nll_over_dim_log2():
    glow = randomize(Glow(6, levels=2, depth=1, width=4).double())
    x = torch.randn(5, 6, dtype=torch.float64)
    z, logdet = glow(x)
    log_px = torch.distributions.Normal(0.0, 1.0).log_prob(z).sum(1) + logdet
    torch.testing.assert_close(glow.log_prob(x), log_px)
    torch.testing.assert_close(glow.bits_per_dim(x), -log_px / (6 * math.log(2)))


# ---------------------------------------------------------------------------------------------
# Parity with normflows. normflows' `forward` goes latent → data and its `inverse` goes data →
# latent (that is what its `log_prob` uses), so our `forward` is compared with its `inverse`.
# Its layers see the vector as a 1×1×C image, like the official code.
# ---------------------------------------------------------------------------------------------
def as_image(x: torch.Tensor) -> torch.Tensor:
    return x[:, :, None, None]


def nf_actnorm(ours: ActNorm) -> nf.flows.ActNorm:
    """normflows' data→latent ActNorm is (x − t)·exp(−s); ours is (x + b)·exp(3·logs)."""
    theirs = nf.flows.ActNorm((len(ours.b), 1, 1)).double()
    with torch.no_grad():
        theirs.s.copy_(-(3.0 * ours.logs).view_as(theirs.s))
        theirs.t.copy_(-ours.b.view_as(theirs.t))
    theirs.data_dep_init_done = torch.tensor(1.0)
    return theirs


def nf_permutation(ours: Permutation | InvertibleLinear) -> torch.nn.Module:
    """A permutation as a normflows "shuffle" with our order; LU as its Invertible1x1Conv (y = W x)."""
    if isinstance(ours, Permutation):
        theirs = nf.flows.Permute(ours.dim, mode="shuffle")
        theirs.inv_perm, theirs.perm = (
            ours.order.clone(),
            ours.undo.clone(),
        )  # their inverse = our forward
        return theirs
    theirs = nf.flows.Invertible1x1Conv(len(ours.log_s), use_lu=True).double()
    with torch.no_grad():
        theirs.P.copy_(ours.P)
        theirs.L.copy_(ours.L)
        theirs.U.copy_(ours.U)
        theirs.log_S.copy_(ours.log_s)
        theirs.sign_S.copy_(ours.sign_s)
    return theirs


def nf_coupling(
    ours: AdditiveCoupling | AffineCoupling,
) -> nf.flows.AffineCouplingBlock:
    """Same network as a normflows ConvNet2d of 1×1 convs; output signs flipped for its x→z direction."""
    net = ours.net
    d_in, width, d_out = (
        net.fc1.in_features,
        net.fc1.out_features,
        net.out.linear.out_features,
    )
    conv_net = nf.nets.ConvNet2d(
        [d_in, width, width, d_out], [1, 1, 1], actnorm=True
    ).double()
    convs = [m for m in conv_net.net if isinstance(m, torch.nn.Conv2d)]
    norms = [m.actNorm for m in conv_net.net if isinstance(m, nf.utils.ActNorm)]
    # normflows' data→latent coupling subtracts the shift (additive) or computes (x − shift)·scale
    # (affine, "sigmoid" map), where ours adds it: flip the sign of the shift outputs.
    sign = torch.ones(d_out, dtype=torch.float64)
    if isinstance(ours, AffineCoupling):
        sign[0::2] = -1.0  # even outputs are shifts, odd ones scales
    else:
        sign[:] = -1.0
    out_scale = torch.exp(3.0 * net.out.logs) * sign
    with torch.no_grad():
        convs[0].weight.copy_(net.fc1.weight[:, :, None, None])
        convs[1].weight.copy_(net.fc2.weight[:, :, None, None])
        convs[2].weight.copy_(
            net.out.linear.weight[:, :, None, None] * out_scale[:, None, None, None]
        )
        convs[2].bias.copy_(net.out.linear.bias * out_scale)
        for mine, theirs in zip([net.norm1, net.norm2], norms):
            # normflows' forward ActNorm is x·exp(s) + t; ours is (x + b)·exp(3·logs).
            theirs.s.copy_((3.0 * mine.logs).view_as(theirs.s))
            theirs.t.copy_((mine.b * torch.exp(3.0 * mine.logs)).view_as(theirs.t))
            theirs.data_dep_init_done = torch.tensor(1.0)
    if isinstance(ours, AffineCoupling):
        return nf.flows.AffineCouplingBlock(
            conv_net, scale=True, scale_map="sigmoid", split_mode="channel"
        )
    return nf.flows.AffineCouplingBlock(conv_net, scale=False, split_mode="channel")


def nf_step(ours: FlowStep) -> list[torch.nn.Module]:
    """A FlowStep as normflows layers, listed latent-side first (normflows' order)."""
    return [
        nf_coupling(ours.coupling),
        nf_permutation(ours.permute),
        nf_actnorm(ours.actnorm),
    ]


def nf_glow(ours: Glow) -> nf.MultiscaleFlow:
    """The whole multi-scale Glow as a normflows MultiscaleFlow (its level 0 is our last level)."""
    levels = list(reversed(list(ours.levels)))
    flows = [
        [layer for step in reversed(list(steps)) for layer in nf_step(step)]
        for steps in levels
    ]
    # normflows' q0[0] models the final latent, q0[i] the part factored out before its level i.
    sizes = [ours.dims[-1]] + [
        ours.dims[i] - ours.dims[i + 1] for i in reversed(range(len(ours.dims) - 1))
    ]
    q0 = [
        nf.distributions.DiagGaussian((d, 1, 1), trainable=False).double()
        for d in sizes
    ]
    merges = [nf.flows.Merge() for _ in range(len(levels) - 1)]
    return nf.MultiscaleFlow(q0, flows, merges, class_cond=False)


def nf_data_to_latent(
    layer: torch.nn.Module, x: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    z, logdet = layer.inverse(as_image(x))
    return z[:, :, 0, 0], logdet * torch.ones(len(x), dtype=x.dtype)


# normflows builds its LU layer with the deprecated torch.lu; that warning is theirs, not ours.
@needs_normflows
@pytest.mark.filterwarnings("ignore:torch.lu is deprecated")
@pytest.mark.parametrize("dim", [8, 7])
@pytest.mark.parametrize(
    "kind", ["actnorm", "reverse", "shuffle", "lu", "additive", "affine"]
)
def test_layers_match_normflows(kind, dim):
    ours = randomize(make_block(kind, dim).double())
    layer = {
        "actnorm": nf_actnorm,
        "reverse": nf_permutation,
        "shuffle": nf_permutation,
        "lu": nf_permutation,
    }
    theirs = layer.get(kind, nf_coupling)(ours)
    x = torch.randn(
        16, dim, dtype=torch.float64, generator=torch.Generator().manual_seed(5)
    )
    y, logdet = ours(x)
    y_nf, logdet_nf = nf_data_to_latent(theirs, x)
    torch.testing.assert_close(y, y_nf, atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(logdet, logdet_nf, atol=1e-10, rtol=1e-10)


@needs_normflows
@pytest.mark.filterwarnings("ignore:torch.lu is deprecated")
@pytest.mark.parametrize(
    "coupling,permutation", [("additive", "reverse"), ("affine", "lu")]
)
def test_glow_matches_normflows_multiscale_flow(coupling, permutation):
    torch.manual_seed(0)
    ours = randomize(
        Glow(
            12, levels=3, depth=2, width=8, coupling=coupling, permutation=permutation
        ).double()
    )
    theirs = nf_glow(ours)
    x = torch.randn(
        16, 12, dtype=torch.float64, generator=torch.Generator().manual_seed(6)
    )
    # (MultiscaleFlow.log_prob trips over its layers' scalar log-dets, so add up its parts by hand.)
    z_parts, logdet = theirs.inverse_and_log_det(as_image(x))
    log_prob_nf = logdet + sum(q.log_prob(part) for q, part in zip(theirs.q0, z_parts))
    torch.testing.assert_close(ours.log_prob(x), log_prob_nf, atol=1e-9, rtol=1e-10)
    z_nf = torch.cat(
        [part[:, :, 0, 0] for part in z_parts], dim=1
    )  # final latent first, like ours
    torch.testing.assert_close(ours(x)[0], z_nf, atol=1e-10, rtol=1e-10)


def test_fit_restores_thread_count():
    before = torch.get_num_threads()
    fit_flow(
        np.random.default_rng(0).normal(size=(64, 8)), levels=2, depth=1, progress=False
    )
    assert torch.get_num_threads() == before


# ---------------------------------------------------------------------------------------------
# The official switches, the prior, the configuration
# ---------------------------------------------------------------------------------------------
def test_official_actnorm_scales_a_dead_channel_by_a_million():
    x = torch.randn(
        64, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64
    )
    x[:, 1] = 0.7  # exactly constant: std 0, so the official scale is 1 / (0 + 1e-6)
    ours, official = (
        ActNorm(3).double().train(),
        ActNorm(3, dead_tol=0.0).double().train(),
    )
    _, logdet_ours = ours(x)
    _, logdet_official = official(x)
    assert (3.0 * official.logs[1]).item() == pytest.approx(math.log(1e6))
    assert ours.logs[1].item() == 0.0
    # the official rule buys log(1e6) nats of likelihood per dead channel, for nothing
    assert (logdet_official - logdet_ours)[0].item() == pytest.approx(
        math.log(1e6), rel=1e-9
    )
    with pytest.raises(ValueError, match="dead_tol"):
        ActNorm(3, dead_tol=-1.0)


def bert_adam_by_hand(
    w: np.ndarray, grads: list[np.ndarray], lr: float, wd: float
) -> np.ndarray:
    """BERT's optimization.py AdamWeightDecayOptimizer, transcribed in NumPy (the oracle)."""
    m, v = np.zeros_like(w), np.zeros_like(w)
    for g in grads:
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w = w - lr * (m / (np.sqrt(v) + 1e-6) + wd * w)
    return w


def test_bert_adamw_is_adam_without_bias_correction():
    rng = np.random.default_rng(0)
    w0, grads = rng.normal(size=5), [rng.normal(size=5) for _ in range(4)]
    param = torch.nn.Parameter(torch.tensor(w0))
    opt = BertAdamW([param], lr=0.01, weight_decay=0.1)
    for g in grads:
        param.grad = torch.tensor(g)
        opt.step()
    np.testing.assert_allclose(
        param.detach().numpy(), bert_adam_by_hand(w0, grads, 0.01, 0.1), rtol=1e-12
    )
    # The first step is (1 - 0.9) / sqrt(1 - 0.999) = 3.16 times torch's bias-corrected Adam step.
    a, b = torch.nn.Parameter(torch.zeros(3)), torch.nn.Parameter(torch.zeros(3))
    a.grad = b.grad = torch.tensor([1.0, -2.0, 0.5])
    BertAdamW([a], lr=1e-3, weight_decay=0.0).step()
    torch.optim.Adam([b], lr=1e-3, eps=1e-6).step()
    torch.testing.assert_close(
        a / b, torch.full((3,), 0.1 / math.sqrt(0.001)), rtol=1e-4, atol=0
    )


def test_missing_bias_correction_is_the_ratio_of_the_two_optimisers_steps():
    # a constant gradient: BertAdamW's step t over bias-corrected Adam's is the factor exactly
    steps = np.arange(1, 31)
    a, b = (
        torch.nn.Parameter(torch.zeros(2, dtype=torch.float64)),
        torch.nn.Parameter(torch.zeros(2, dtype=torch.float64)),
    )
    ours, adam = (
        BertAdamW([a], lr=1e-3, weight_decay=0.0, eps=1e-12),
        torch.optim.Adam([b], lr=1e-3, eps=1e-12),
    )
    ratios = []
    for _ in steps:
        before_a, before_b = a.detach().clone(), b.detach().clone()
        a.grad = b.grad = torch.tensor([0.3, -2.0], dtype=torch.float64)
        ours.step(), adam.step()
        ratios.append(((a.detach() - before_a) / (b.detach() - before_b)).numpy())
    np.testing.assert_allclose(
        np.array(ratios),
        np.repeat(missing_bias_correction(steps)[:, None], 2, 1),
        rtol=1e-6,
    )
    # by hand: sqrt(10) at t = 1; the peak, at t = 12, 6.57; 2.06 at t = 270
    assert missing_bias_correction(1) == pytest.approx(math.sqrt(10))
    factors = missing_bias_correction(np.arange(1, 3000))
    assert factors.argmax() + 1 == 12 and factors.max() == pytest.approx(
        6.5685, abs=1e-3
    )
    assert missing_bias_correction(270) == pytest.approx(2.0553, abs=1e-3)
    with pytest.raises(ValueError, match="from 1"):
        missing_bias_correction(0)


def test_actnorm_logdets_add_up_to_the_flows_logdet_and_find_dead_channels():
    x = np.random.default_rng(0).normal(size=(64, 8))
    x[:, 5] = 2.0 + 1e-9 * np.random.default_rng(1).normal(
        size=64
    )  # a (nearly) dead channel
    batch = torch.from_numpy(x).float()
    for tol in (1e-4, 0.0):
        glow = Glow(8, levels=2, depth=2, dead_tol=tol).train()
        with torch.no_grad():
            _, logdet = glow(
                batch
            )  # additive couplings start as the identity: only ActNorms count
        per_step = glow.actnorm_logdets()
        assert list(per_step.index) == [
            "level 1, step 1",
            "level 1, step 2",
            "level 2, step 1",
            "level 2, step 2",
        ]
        assert per_step.sum() == pytest.approx(logdet[0].item(), rel=1e-5)
        if tol:  # ours: the dead channel is centred, not scaled
            assert per_step.iloc[0] < 8 * 3 and (per_step.iloc[1:].abs() < 1e-4).all()
        else:  # official: the dead channel alone adds about log(1/(1e-9 + 1e-6)) ≈ 13.8 nats
            assert per_step.iloc[0] > 13


def test_official_config_changes_only_the_two_switches():
    official = FlowConfig.official()
    assert (official.dead_tol, official.bias_correction) == (0.0, False)
    assert FlowConfig.official(dead_tol=1e-4) == FlowConfig(bias_correction=False)
    x = np.random.default_rng(0).normal(size=(128, 8))
    a = fit_flow(x, FlowConfig.official(levels=2), progress=False)
    b = fit_flow(x, levels=2, progress=False)
    assert (
        a.losses[0] == b.losses[0] and a.losses[1] != b.losses[1]
    )  # same init, different steps


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="batch_size"):
        FlowConfig(batch_size=0)
    with pytest.raises(ValueError, match="lr"):
        FlowConfig(lr=-1.0)
    with pytest.raises(TypeError, match="levle"):
        FlowTransform(levle=2)
    with pytest.raises(ValueError, match="permutation"):
        Glow(8, permutation="random")


def test_samples_are_the_prior_pushed_through_the_inverse():
    glow = randomize(Glow(8, levels=2, depth=2, width=8).double()).eval()
    x = glow.sample(500, generator=torch.Generator().manual_seed(0))
    z = glow.prior.sample(500, generator=torch.Generator().manual_seed(0)).double()
    with torch.no_grad():
        torch.testing.assert_close(glow(x)[0], z, atol=1e-9, rtol=1e-9)
    # the prior is N(0, I): scipy's standard normal log-density, summed over the 8 coordinates
    from scipy.stats import norm

    expected = norm.logpdf(z.numpy()).sum(1)
    np.testing.assert_allclose(glow.prior.log_prob(z).numpy(), expected, rtol=1e-12)


def test_shuffle_is_a_seeded_permutation_not_the_reversal():
    torch.manual_seed(0)
    a = Shuffle(16)
    torch.manual_seed(0)
    b = Shuffle(16)
    assert torch.equal(a.order, b.order) and sorted(a.order.tolist()) == list(range(16))
    assert not torch.equal(a.order, Reverse(16).order)


def test_log_likelihood_is_the_flows_log_prob_in_numpy_and_rejects_bad_input():
    x = np.random.default_rng(0).normal(size=(50, 6))
    flow = fit_flow(
        x, levels=2, depth=1, batch_size=25, progress=False, device="cpu"
    ).flow
    with torch.no_grad():
        expected = flow.eval().log_prob(torch.from_numpy(x).float()).double().numpy()
    got = log_likelihood(flow, x)
    assert got.dtype == np.float64 and got.shape == (50,)
    np.testing.assert_array_equal(got, expected)
    with pytest.raises(ValueError):
        log_likelihood(flow, x[:, :5])  # the wrong width
    with pytest.raises(ValueError):
        log_likelihood(flow, np.full((3, 6), np.nan))
