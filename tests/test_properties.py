"""Property tests (hypothesis): random shapes, sizes and parameters, each checked against an
independent oracle — autograd for the flow's log-determinants, the sample covariance for whitening,
scipy for the STS aggregations. Settings (30 examples, no deadline) come from the profile in conftest.py;
``--hypothesis-profile=thorough`` runs 1000 examples each."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy.stats import spearmanr
from torch.autograd.functional import jacobian

from bertflow_mini.data import STSPairs
from bertflow_mini.evaluation.sts import results_table, score_pairs
from bertflow_mini.postprocess.flow import (
    ActNorm,
    AdditiveCoupling,
    AffineCoupling,
    FlowStep,
    Glow,
    InvertibleLinear,
    Reverse,
)
from bertflow_mini.postprocess.whitening import StreamingWhitening, Whitening


# ---------------------------------------------------------------------------------------------
# The flow: every block, random width, batch, parameters and inputs
# ---------------------------------------------------------------------------------------------
def glow_levels_fit(dim: int, levels: int) -> bool:
    """Whether a Glow of ``levels`` levels leaves at least 2 channels for its last coupling."""
    for _ in range(levels - 1):
        dim = (dim + 1) // 2
    return dim >= 2


@st.composite
def flow_blocks(draw) -> tuple[torch.nn.Module, int]:
    """A flow block of a random kind and width, its parameters moved off their identity init."""
    kind = draw(
        st.sampled_from(
            ["actnorm", "reverse", "lu", "additive", "affine", "step", "glow"]
        )
    )
    dim = draw(st.integers(1 if kind in ("actnorm", "reverse", "lu") else 2, 12))
    coupling, permutation = (
        draw(st.sampled_from(["additive", "affine"])),
        draw(st.sampled_from(["reverse", "lu"])),
    )
    levels = draw(st.integers(1, 3).filter(lambda n: glow_levels_fit(dim, n)))
    depth, width = draw(st.integers(1, 2)), draw(st.integers(1, 8))
    seed = draw(st.integers(0, 2**31 - 1))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        block = {
            "actnorm": lambda: ActNorm(dim),
            "reverse": lambda: Reverse(dim),
            "lu": lambda: InvertibleLinear(dim),
            "additive": lambda: AdditiveCoupling(dim, width),
            "affine": lambda: AffineCoupling(dim, width),
            "step": lambda: FlowStep(dim, width, coupling, permutation),
            "glow": lambda: Glow(dim, levels, depth, width, coupling, permutation),
        }[kind]().double()
        with torch.no_grad():
            for p in block.parameters():
                p.add_(0.2 * torch.randn_like(p))
    # parameters set by hand: no data-dependent init may overwrite them
    for m in block.modules():
        if isinstance(m, ActNorm):
            m.initialized.fill_(True)
            m._ready = True
    return block.eval(), dim


def inverse(
    block: torch.nn.Module, y: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``block.inverse(y)`` as (x, logdet or None): works whether ``inverse`` returns x or (x, logdet)."""
    out = block.inverse(y)
    return (out, None) if isinstance(out, torch.Tensor) else (out[0], out[1])


@given(
    block_and_dim=flow_blocks(),
    n=st.integers(1, 6),
    scale=st.floats(0.1, 10.0),
    seed=st.integers(0, 2**31 - 1),
)
def test_flow_blocks_are_invertible_with_autograd_log_dets(
    block_and_dim, n, scale, seed
):
    block, dim = block_and_dim
    x = scale * torch.randn(
        n, dim, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)
    )
    # The oracle: the Jacobian autograd computes for each sample alone.
    jacobians = [jacobian(lambda v: block(v[None])[0][0], x[i]) for i in range(n)]
    # Random parameters can squash a channel by e^-50 (an affine coupling's sigmoid scale): then no
    # float64 inverse recovers x. Invertibility is a claim about well-conditioned maps only.
    assume(all(torch.linalg.cond(jac).item() < 1e8 for jac in jacobians))
    with torch.no_grad():
        z, logdet = block(x)
        back, inverse_logdet = inverse(block, z)
    assert z.shape == x.shape and logdet.shape == (n,)
    torch.testing.assert_close(
        back, x, atol=1e-7 * (1 + x.abs().max().item()), rtol=1e-7
    )
    # an inverse that reports its log-det must cancel the forward one
    if inverse_logdet is not None:
        torch.testing.assert_close(inverse_logdet, -logdet, atol=1e-8, rtol=1e-8)
    for i, jac in enumerate(jacobians):
        sign, logabsdet = torch.linalg.slogdet(jac)
        assert sign != 0
        assert logdet[i].item() == pytest.approx(
            logabsdet.item(), abs=1e-7 * (1 + abs(logabsdet.item()))
        )
        # in eval mode each sample's output does not depend on the rest of the batch
        torch.testing.assert_close(
            block(x[i : i + 1])[0][0], z[i], atol=1e-10, rtol=1e-10
        )


# ---------------------------------------------------------------------------------------------
# Whitening: identity covariance for any full-rank input
# ---------------------------------------------------------------------------------------------
@st.composite
def full_rank_data(draw) -> np.ndarray:
    """Correlated Gaussian data: random size, width, rotation, spectrum (std over two decades) and mean."""
    dim = draw(st.integers(1, 10))
    n = draw(st.integers(dim + 2, 60))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    stds = 10.0 ** np.array(
        draw(st.lists(st.floats(-1.0, 1.0), min_size=dim, max_size=dim))
    )
    offset = draw(st.floats(-1e3, 1e3))
    rotation, _ = np.linalg.qr(rng.normal(size=(dim, dim)))
    x = offset + rng.normal(size=dim) + rng.normal(size=(n, dim)) * stds @ rotation.T
    # Full rank with room to spare: Whitening floors eigenvalues below 1e-6 × the largest on purpose.
    assume(np.linalg.cond(np.cov(x, rowvar=False, ddof=1).reshape(dim, dim)) < 1e5)
    return x


@given(x=full_rank_data(), data=st.data())
def test_whitening_gives_zero_mean_and_identity_covariance(x, data):
    n, dim = x.shape
    k = data.draw(st.one_of(st.none(), st.integers(1, dim)), label="k")
    z = Whitening(k=k).fit(x).transform(x)
    kept = dim if k is None else k
    assert z.shape == (n, kept)
    np.testing.assert_allclose(z.mean(axis=0), 0.0, atol=1e-8)
    np.testing.assert_allclose(
        np.cov(z, rowvar=False).reshape(kept, kept), np.eye(kept), atol=1e-7
    )
    # Streaming over any split into batches gives the same map as the batch fit, up to the sign of each
    # output axis (an eigenvector's sign is arbitrary; cosines do not see it): the same Gram matrix.
    # Truncation is only well defined when the k-th and (k+1)-th variances differ.
    lam = np.linalg.eigvalsh(np.cov(x, rowvar=False).reshape(dim, dim))[::-1]
    assume(kept == dim or (lam[kept - 1] - lam[kept]) > 1e-3 * lam[0])
    cuts = sorted(data.draw(st.sets(st.integers(1, n - 1), max_size=4), label="cuts"))
    stream = StreamingWhitening(dim)
    for a, b in zip([0, *cuts], [*cuts, n]):
        stream.partial_fit(x[a:b])
    zs = stream.finalize(k=k).transform(x)
    np.testing.assert_allclose(np.abs(zs), np.abs(z), atol=1e-6)
    np.testing.assert_allclose(zs @ zs.T, z @ z.T, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# STS: both aggregations against scipy, for any subsets, interleaving, ties and vector lengths
# ---------------------------------------------------------------------------------------------
@given(data=st.data())
def test_wmean_and_all_match_scipy(data):
    sizes = data.draw(
        st.lists(st.integers(3, 20), min_size=1, max_size=4), label="subset sizes"
    )
    n = sum(sizes)
    order = data.draw(st.permutations(range(n)), label="interleaving")
    labels = [
        [f"s{i}" for i, size in enumerate(sizes) for _ in range(size)][j] for j in order
    ]
    # ties, 0–5
    gold = (
        np.array(
            data.draw(
                st.lists(st.integers(0, 10), min_size=n, max_size=n), label="gold"
            )
        )
        / 2
    )
    # Distinct cosines (gaps of 1.8 / n, far above rounding), so every method ranks them alike.
    cos = (
        -0.9
        + 1.8 * np.array(data.draw(st.permutations(range(n)), label="cosine ranks")) / n
    )
    lengths = np.array(
        data.draw(
            st.lists(st.floats(0.1, 10.0), min_size=2 * n, max_size=2 * n),
            label="lengths",
        )
    )
    labels_arr = np.array(labels)
    # Spearman needs varying gold
    assume(all(np.ptp(gold[labels_arr == s]) > 0 for s in set(labels)))

    left = np.stack([np.ones(n), np.zeros(n)], axis=1) * lengths[:n, None]
    right = np.stack([cos, np.sqrt(1 - cos**2)], axis=1) * lengths[n:, None]
    pairs = STSPairs(
        "TOY",
        "test",
        [f"l{i}" for i in range(n)],
        [f"r{i}" for i in range(n)],
        gold,
        labels,
    )
    res = score_pairs(pairs, left, right)

    first_seen = list(dict.fromkeys(labels))
    per_subset = {
        s: spearmanr(cos[labels_arr == s], gold[labels_arr == s]).statistic * 100
        for s in first_seen
    }
    counts = {s: int((labels_arr == s).sum()) for s in first_seen}
    assert list(res.subsets) == first_seen
    for s in first_seen:
        assert res.subsets[s][0] == counts[s] and res.subsets[s][1] == pytest.approx(
            per_subset[s], abs=1e-9
        )
    assert res.wmean == pytest.approx(
        sum(counts[s] * per_subset[s] for s in first_seen) / n, abs=1e-9
    )
    assert res.all == pytest.approx(spearmanr(cos, gold).statistic * 100, abs=1e-9)
    assert res.n_pairs == n
    if len(sizes) == 1:  # one subset: the two aggregations are the same number
        assert res.wmean == pytest.approx(res.all, abs=1e-9)
    table = results_table([res, res], "all")
    assert table.loc["ours", "Avg."] == pytest.approx(res.all)
