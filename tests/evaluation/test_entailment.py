"""The unsupervised entailment test: AUC and the cosine AUC (the loaders: tests/data/test_entailment.py)."""

from __future__ import annotations

import numpy as np
import pytest

from bertflow_mini.evaluation import entailment as ent


def test_auc_equals_the_fraction_of_correctly_ordered_pairs():
    rng = np.random.default_rng(0)
    # rounding makes ties, which count one half
    scores = np.round(rng.normal(size=60), 1)
    labels = (rng.random(60) < 0.4).astype(int)
    pos, neg = scores[labels == 1], scores[labels == 0]
    want = np.mean([(p > n) + 0.5 * (p == n) for p in pos for n in neg])
    assert ent.auc(scores, labels) == pytest.approx(want)
    assert ent.auc(np.array([1.0, 2, 3, 4]), np.array([0, 0, 1, 1])) == 1.0
    # pos 3 beats 1 and 2 and ties 3; pos 4 beats all three: (1 + 1 + 0.5 + 3) / 6; reversed: 1 - that
    scores, labels = np.array([3.0, 4.0, 1.0, 2.0, 3.0]), np.array([1, 1, 0, 0, 0])
    assert ent.auc(scores, labels) == pytest.approx(5.5 / 6)
    assert ent.auc(scores, 1 - labels) == pytest.approx(0.5 / 6)
    with pytest.raises(ValueError):
        ent.auc(np.ones(3), np.ones(3))
    with pytest.raises(ValueError):
        ent.auc(np.array([np.nan, 1]), np.array([0, 1]))


def test_cosine_auc_is_perfect_when_entailing_pairs_are_copies():
    from bertflow_mini.postprocess.whitening import Whitening

    rng = np.random.default_rng(0)
    vocab = {f"s{i}": rng.normal(size=8) for i in range(40)}
    # t_i points where s_i does
    vocab.update({f"t{i}": vocab[f"s{i}"] * 2 for i in range(20)})
    first = [f"s{i}" for i in range(40)]
    second = [f"t{i}" if i < 20 else f"s{(i + 1) % 40}" for i in range(40)]
    pairs = ent.LabelledPairs(
        "toy", first, second, np.r_[np.ones(20), np.zeros(20)].astype(int)
    )

    def embed(s):
        return np.stack([vocab[x] for x in s])

    assert ent.cosine_auc(pairs, embed) == 100.0
    fitted_on = []

    class Spy(Whitening):
        def fit(self, X):
            fitted_on.append(len(X))
            return super().fit(X)

    assert 0 <= ent.cosine_auc(pairs, embed, Spy()) <= 100
    # the paper's target fit: every sentence once
    assert fitted_on == [len(pairs.sentences())] == [60]


def _pairwise_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """By definition: the share of (positive, negative) pairs ranked right, ties half."""
    pos, neg = scores[labels == 1][:, None], scores[labels == 0][None, :]
    return float(((pos > neg) + 0.5 * (pos == neg)).mean())


def test_resampled_aucs_are_the_auc_by_definition_on_shared_draws():
    from bertflow_mini.evaluation.entailment import resampled_aucs

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 60)
    good, bad = labels + rng.normal(0, 0.5, 60), rng.normal(0, 1, 60)
    got = resampled_aucs(
        {"good": good, ("bad", 1): bad, "twin": good}, labels, 40, seed=7
    )
    draws = np.random.default_rng(7).integers(
        0, 60, (40, 60)
    )  # one subset: plain draws
    for key, s in (("good", good), (("bad", 1), bad)):
        want = [100 * _pairwise_auc(s[d], labels[d]) for d in draws]
        np.testing.assert_allclose(got[key], want)
    assert (got["twin"] == got["good"]).all()  # the same draws for every key
    assert (got["good"] - got[("bad", 1)]).mean() > 20


def test_a_draw_of_one_label_has_no_auc_and_the_rest_are_kept():
    from bertflow_mini.evaluation.entailment import resampled_aucs

    labels = np.array([1] + [0] * 5)  # one positive in six: many draws miss it
    scores = np.arange(6.0)
    got = resampled_aucs({"a": scores, "b": -scores}, labels, 200, seed=0)["a"]
    draws = np.random.default_rng(0).integers(0, 6, (200, 6))
    one_label = np.array([labels[d].sum() in (0, 6) for d in draws])
    assert one_label.any() and (~one_label).any()
    assert np.isnan(got[one_label]).all()
    want = [100 * _pairwise_auc(scores[d], labels[d]) for d in draws[~one_label]]
    np.testing.assert_allclose(got[~one_label], want)
