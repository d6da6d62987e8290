"""Tests for bertflow_mini.chapters.pmi and .cooccurrence: PMI by hand, the λ_c-centred regression, and a trained softmax model."""

from __future__ import annotations

import numpy as np
import pytest

from bertflow_mini.chapters.cooccurrence import cooccurrence, simple_words
from bertflow_mini.chapters.pmi import (
    counts_matrix,
    log_marginal,
    make_joint,
    pmi_matrix,
    regress_logits_on_pmi,
    sample_corpus,
    split_half_ceiling,
    train_softmax_model,
    train_softmax_on_counts,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_pmi_of_independent_joint_is_zero():
    pc, px = np.array([0.2, 0.3, 0.5]), np.array([0.1, 0.6, 0.25, 0.05])
    np.testing.assert_allclose(pmi_matrix(np.outer(pc, px)), 0.0, atol=1e-12)
    # counts too
    np.testing.assert_allclose(
        pmi_matrix(np.outer([2, 3, 5], [1, 6, 2.5, 0.5])), 0.0, atol=1e-12
    )


def test_pmi_against_hand_computation():
    counts = np.array([[2, 1], [1, 0]])
    pmi = pmi_matrix(counts)
    # p(c0,x0) = 2/4, p(c0) = 3/4, p(x0) = 3/4
    assert pmi[0, 0] == pytest.approx(np.log(0.5 / (0.75 * 0.75)))
    assert pmi[0, 1] == pytest.approx(np.log(0.25 / (0.75 * 0.25)))
    assert pmi[1, 1] == -np.inf  # never seen together
    smoothed = pmi_matrix(counts, smoothing=1.0)  # counts [[3, 2], [2, 1]], total 8
    assert smoothed[1, 1] == pytest.approx(np.log((1 / 8) / ((3 / 8) * (3 / 8))))
    np.testing.assert_allclose(log_marginal(counts), np.log([0.75, 0.25]))
    np.testing.assert_allclose(log_marginal(counts, axis=1), np.log([0.75, 0.25]))
    with pytest.raises(ValueError, match="non-negative"):
        pmi_matrix(np.array([[1.0, -1.0]]))


def test_make_joint_and_sample_corpus():
    J = make_joint(6, 9, rank=2, seed=0)
    assert J.shape == (6, 9) and J.sum() == pytest.approx(1.0) and (J > 0).all()
    assert J.sum(axis=0)[0] > J.sum(axis=0)[-1]  # Zipf-like token marginal
    c, x = sample_corpus(J, 100_000, seed=0)
    freq = counts_matrix(c, x, 6, 9) / 100_000
    assert np.abs(freq - J).max() < 0.01  # ~4 standard errors at the largest cell
    c2, x2 = sample_corpus(J, 100_000, seed=0)
    assert (c == c2).all() and (x == x2).all()


def test_regression_recovers_exact_relation():
    J = make_joint(8, 12, rank=3, seed=1)
    # arbitrary per-context shifts
    lam = np.random.default_rng(0).normal(scale=5.0, size=8)
    logits = pmi_matrix(J) + log_marginal(J)[None, :] + lam[:, None]
    out = regress_logits_on_pmi(logits, pmi_matrix(J), log_marginal(J))
    assert out["slope"] == pytest.approx(1.0) and out["r2"] == pytest.approx(1.0)
    assert out["pearson"] == pytest.approx(1.0) and out["spearman"] == pytest.approx(
        1.0
    )
    # the shifts are recovered
    np.testing.assert_allclose(out["lambda_c"], lam, atol=1e-10)
    half = regress_logits_on_pmi(0.5 * logits, pmi_matrix(J), log_marginal(J))
    assert half["slope"] == pytest.approx(0.5) and half["r2"] == pytest.approx(1.0)


def test_regression_is_not_fooled_by_unrelated_logits():
    J = make_joint(10, 20, rank=2, seed=2)
    logits = np.random.default_rng(5).normal(size=(10, 20))
    out = regress_logits_on_pmi(logits, pmi_matrix(J), log_marginal(J))
    assert out["r2"] < 0.2 and abs(out["pearson"]) < 0.3


def test_regression_skips_unseen_pairs():
    counts = np.array([[5, 0, 3], [1, 4, 0], [2, 2, 2]])
    logits = np.log(np.where(counts > 0, counts, 1) / counts.sum(axis=1, keepdims=True))
    out = regress_logits_on_pmi(logits, pmi_matrix(counts), log_marginal(counts))
    assert out["n_cells"] == 7 and out["r2"] == pytest.approx(1.0)


def test_trained_model_learns_pmi_plus_log_frequency():
    # Noise-free joint of rank 3; with dim = rank + 1 the model can represent log p(x|c) exactly
    # (h_c = [a_c, 1], w_x = [b_x, −s log x]), so the only error left is sampling noise in rare cells.
    # With 200k pairs the rarest cell still expects ~1.4 counts and the low-rank fit pools the rest;
    # we observe R² ≈ 0.997 and demand 0.98. A model that ignored log p(x) (fitting PMI alone) could not pass.
    J = make_joint(20, 50, rank=3, seed=0, noise=0.0)
    c, x = sample_corpus(J, 200_000, seed=1)
    model = train_softmax_model(c, x, 20, 50, dim=4, steps=300, lr=0.05, seed=0)
    assert model.losses[-1] < model.losses[0]
    out = regress_logits_on_pmi(model.logits(), pmi_matrix(J), log_marginal(J))
    assert out["r2"] > 0.98 and out["slope"] == pytest.approx(1.0, abs=0.05)
    without_frequency = regress_logits_on_pmi(
        model.logits(), pmi_matrix(J), np.zeros(50)
    )
    assert without_frequency["r2"] < out["r2"] - 0.2


def test_bias_absorbs_log_frequency():
    J = make_joint(20, 50, rank=3, seed=0, noise=0.0)
    N = counts_matrix(*sample_corpus(J, 200_000, seed=1), 20, 50)
    model = train_softmax_on_counts(N, dim=4, steps=300, lr=0.05, seed=0, bias=True)
    assert np.corrcoef(model.b, log_marginal(J))[0, 1] > 0.5
    assert (
        regress_logits_on_pmi(model.logits(), pmi_matrix(J), log_marginal(J))["r2"]
        > 0.98
    )


def test_cooccurrence_counts_by_hand():
    counts, vocab = cooccurrence(
        ["A cat sat.", "the cat sat on the mat", "zebra"], window=1, min_count=2
    )
    assert vocab == ["cat", "sat", "the"]  # frequency order, ties alphabetical
    # windows after dropping rare words: [cat, sat], [the, cat, sat, the]
    expected = np.array([[0, 2, 1], [2, 0, 1], [1, 1, 0]])
    np.testing.assert_array_equal(counts, expected)
    wide, _ = cooccurrence(["the cat sat on the mat"] * 2, window=5, min_count=1)
    np.testing.assert_array_equal(wide, wide.T)
    # ordered pairs within distance 5
    assert wide.sum() == 2 * 2 * sum(6 - k for k in range(1, 6))
    assert simple_words("Don't STOP, 2 dogs!") == ["don't", "stop", "2", "dogs"]
    upper, vocab_up = cooccurrence(
        ["a b a"], window=1, min_count=1, tokenizer=str.split
    )
    assert vocab_up == ["a", "b"] and upper.tolist() == [[0, 2], [2, 0]]


def test_model_on_cooccurrence_counts():
    rng = np.random.default_rng(0)
    topics = [
        ["cat", "dog", "pet", "fur"],
        ["car", "road", "wheel", "drive"],
        ["sun", "rain", "cloud", "wind"],
    ]
    sents = [" ".join(rng.choice(topics[rng.integers(3)], size=6)) for _ in range(400)]
    counts, vocab = cooccurrence(sents, window=2, min_count=1)
    model = train_softmax_on_counts(counts, dim=4, steps=300, lr=0.05, seed=0)
    out = regress_logits_on_pmi(
        model.logits(), pmi_matrix(counts), log_marginal(counts)
    )
    assert out["r2"] > 0.9 and out["spearman"] > 0.8


# ----------------------------------------------------------------------------- held-out fit, neighbours


def test_cross_entropy_by_hand_and_its_floor():
    from bertflow_mini.chapters.pmi import conditional_entropy, cross_entropy

    counts = np.array([[3, 1], [0, 4]])
    uniform = np.zeros((2, 2))
    assert cross_entropy(uniform, counts) == pytest.approx(np.log(2))
    J = make_joint(5, 7, rank=2, seed=3)
    truth = np.log(J / J.sum(axis=1, keepdims=True))
    # scipy's entropy of each row of p(x|c), weighted by p(c): an independent oracle for H(x|c)
    import scipy.stats

    oracle = float(
        (
            J.sum(axis=1)
            * scipy.stats.entropy(J / J.sum(axis=1, keepdims=True), axis=1)
        ).sum()
    )
    assert conditional_entropy(J) == pytest.approx(oracle)
    # the true model reaches the floor
    assert cross_entropy(truth, J) == pytest.approx(oracle)
    # λ_c shifts change nothing
    assert cross_entropy(truth + 5.0, J) == pytest.approx(oracle)
    assert cross_entropy(uniform + np.arange(2), counts) > cross_entropy(
        np.log([[0.75, 0.25], [0.01, 0.99]]), counts
    )
    with pytest.raises(ValueError):
        cross_entropy(uniform, np.zeros((2, 2)))


def test_fit_report_tells_memorisation_from_learning():
    from bertflow_mini.chapters.pmi import SoftmaxModel, fit_report

    J = make_joint(10, 15, rank=2, seed=0)
    train = counts_matrix(*sample_corpus(J, 3000, seed=0), 10, 15)
    held = counts_matrix(*sample_corpus(J, 3000, seed=1), 10, 15)
    # a "model" that memorised the training sample: its logits are the sample's own log p(x|c)
    memo = np.log(np.maximum(train, 1e-3) / train.sum(axis=1, keepdims=True))
    rep = fit_report(
        SoftmaxModel(H=memo, W=np.eye(15), b=None, losses=np.zeros(1)), train, held
    )
    assert rep["R² train"] > 0.999 and rep["R² held-out"] < 0.9
    assert rep["loss held-out"] > rep["loss train"]
    truth = np.log(J / J.sum(axis=1, keepdims=True))
    true_rep = fit_report(
        SoftmaxModel(H=truth, W=np.eye(15), b=None, losses=np.zeros(1)), train, held
    )
    # the truth generalises, the memory does not
    assert true_rep["loss held-out"] < rep["loss held-out"]


def test_cooccurrence_with_a_given_vocabulary():
    counts, vocab = cooccurrence(
        ["a b c", "a x b"], window=1, min_count=1, vocab=["b", "a"]
    )
    # kept in the order given; "c" and "x" are dropped before windows
    assert vocab == [
        "b",
        "a",
    ]
    # "a b" twice (x dropped first)
    np.testing.assert_array_equal(counts, [[0, 2], [2, 0]])
    with pytest.raises(ValueError, match="repeated"):
        cooccurrence(["a b"], vocab=["a", "a"])


def test_nearest_words_and_their_relation_labels():
    from bertflow_mini.chapters.cooccurrence import nearest_words, neighbour_table

    vocab = ["cat", "dog", "car", "kitten"]
    X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [1.0, 0.05]])
    assert nearest_words(X, vocab, "cat", k=2) == ["kitten", "dog"]
    with pytest.raises(ValueError):
        nearest_words(X, vocab, "zebra")
    # cat and dog appear together often; cat and kitten never do
    counts = np.array([[0, 9, 1, 0], [9, 0, 1, 1], [1, 1, 0, 3], [0, 1, 3, 0]])
    table = neighbour_table(X, counts, vocab, ["cat"], k=2)
    assert table["neighbour"].tolist() == ["kitten", "dog"]
    assert table["relation"].tolist() == ["substitute", "co-occur"]
    # a word below the vocabulary's minimum count is left out, the others kept
    both = neighbour_table(X, counts, vocab, ["zebra", "cat"], k=2)
    assert both.equals(table)


def test_two_term_regression_separates_pmi_from_frequency():
    from bertflow_mini.chapters.pmi import regress_logits_on_terms

    J = make_joint(12, 30, rank=3, seed=4)
    P, lp = pmi_matrix(J), log_marginal(J)
    lam = np.random.default_rng(1).normal(scale=3.0, size=(12, 1))
    logits = 0.3 * P + 1.2 * lp[None, :] + lam  # a head that leans on frequency
    out = regress_logits_on_terms(logits, {"PMI": P, "log p(x)": lp[None, :]})
    assert out["slopes"]["PMI"] == pytest.approx(0.3) and out["slopes"][
        "log p(x)"
    ] == pytest.approx(1.2)
    assert out["r2"] == pytest.approx(1.0) and out["n_cells"] == 12 * 30
    # the one-term fit of the same logits on PMI alone agrees with regress_logits_on_pmi
    one = regress_logits_on_terms(logits, {"PMI": P})
    assert one["slopes"]["PMI"] == pytest.approx(
        regress_logits_on_pmi(logits, P, np.zeros(30))["slope"]
    )
    # unseen cells are left out, not fitted
    masked = np.where(np.arange(30) < 5, -np.inf, P)
    assert (
        regress_logits_on_terms(logits, {"PMI": masked, "f": lp})["n_cells"] == 12 * 25
    )


def _centred_log_conditional(N: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """log p(x|c) of ``N`` on ``cells``, centred per context over those cells."""
    with np.errstate(divide="ignore"):
        L = np.log(N) - np.log(N.sum(axis=1, keepdims=True))
    L = np.where(cells, L, 0.0)
    return (
        L
        - L.sum(axis=1, keepdims=True) / np.maximum(cells.sum(axis=1, keepdims=True), 1)
    )[cells]


@pytest.mark.parametrize("n", [50_000, 1_000_000])
def test_split_half_ceiling_matches_the_truth_it_cannot_see(n):
    # the oracle: with the true distribution known, the best R² against the whole corpus'
    # noisy log p(x|c) is the squared correlation of the truth with it
    J = make_joint(100, 300, rank=8, seed=0)
    a = counts_matrix(*sample_corpus(J, n // 2, seed=1), 100, 300)
    b = counts_matrix(*sample_corpus(J, n // 2, seed=2), 100, 300)
    cells = a + b >= 3
    out = split_half_ceiling(a, b, cells)
    used = cells & (a > 0) & (b > 0)
    assert out["n_cells"] == used.sum()
    truth = _centred_log_conditional(J, used)
    oracle = np.corrcoef(truth, _centred_log_conditional(a + b, used))[0, 1] ** 2
    assert out["ceiling"] == pytest.approx(oracle, abs=0.04)
    assert 0 < out["r"] < out["ceiling"] < 1


def test_split_half_ceiling_of_pmi_is_the_split_half_correlation_by_hand():
    # oracle: Pearson's r of the two halves' PMI, each centred per context over the cells
    # both halves saw, computed directly; then Spearman-Brown by hand
    J = make_joint(30, 60, rank=4, seed=0)
    a = counts_matrix(*sample_corpus(J, 40_000, seed=1), 30, 60)
    b = counts_matrix(*sample_corpus(J, 40_000, seed=2), 30, 60)
    f = np.log(J.sum(axis=0))
    used = (a > 0) & (b > 0)
    ya = _centred_pmi(a, f, used)
    yb = _centred_pmi(b, f, used)
    r = ya @ yb / np.sqrt((ya @ ya) * (yb @ yb))
    out = split_half_ceiling(a, b, offset=f)
    assert out["r"] == pytest.approx(r, abs=1e-9)
    assert out["ceiling"] == pytest.approx(2 * r / (1 + r), abs=1e-9)
    # a constant offset is a per-context constant: centring removes it
    plain = split_half_ceiling(a, b)
    assert split_half_ceiling(a, b, offset=np.full(60, 3.0))["r"] == pytest.approx(
        plain["r"], abs=1e-12
    )
    assert 0 < out["ceiling"] < 1
    with pytest.raises(ValueError, match="offset"):
        split_half_ceiling(a, b, offset=f[:5])


def _centred_pmi(N: np.ndarray, f: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """log p(x|c) − f(x) of ``N`` on ``cells``, centred per context over those cells."""
    out = []
    for row, f_row, ok in zip(N, np.broadcast_to(f, N.shape), cells):
        v = np.log(row[ok] / row.sum()) - f_row[ok]
        out.append(v - v.mean() if len(v) else v)
    return np.concatenate(out)


def test_split_half_ceiling_at_its_limits():
    J = make_joint(20, 40, rank=3, seed=0)
    same = np.round(J * 1e6)
    assert split_half_ceiling(same, same)["ceiling"] == pytest.approx(1.0)
    # two halves with nothing in common: no ceiling at all
    rng = np.random.default_rng(0)
    unrelated = split_half_ceiling(rng.poisson(50, (20, 40)), rng.poisson(50, (20, 40)))
    assert unrelated["ceiling"] < 0.15
    with pytest.raises(ValueError, match="shape"):
        split_half_ceiling(same, same[:, :5])
    with pytest.raises(ValueError, match="shape"):
        split_half_ceiling(same, same, cells=np.ones((3, 3), bool))
