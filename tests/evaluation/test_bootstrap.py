"""The paired bootstrap of a Spearman difference: each resample against scipy, the interval against
scipy.stats.bootstrap, stratification by subset, and the cases whose answer is known."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from conftest import noisy, random_sts_pairs
from scipy import stats

from bertflow_mini.data import STSPairs
from bertflow_mini.evaluation.bootstrap import (
    average_difference,
    compare,
    paired_bootstrap,
    resample_indices,
    resampled_scores,
    spearman_rows,
    subset_mean_difference,
)
from bertflow_mini.evaluation.sts import score_similarities


def _data(n: int = 200, seed: int = 0):
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, 6, n).astype(float)  # ties, like STS gold scores
    good = gold + rng.normal(scale=1.5, size=n)
    worse = gold + rng.normal(scale=3.0, size=n)
    return good, worse, gold


def test_spearman_rows_equals_scipy_row_by_row_with_ties():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 4, (5, 30)).astype(float)
    y = x + rng.normal(size=(5, 30))
    want = [100 * stats.spearmanr(a, b).statistic for a, b in zip(x, y)]
    np.testing.assert_allclose(spearman_rows(x, y), want, atol=1e-10)


def test_every_resample_is_the_difference_scipy_computes_on_that_draw():
    good, worse, gold = _data(60)
    scores = resampled_scores({"a": good, "b": worse}, gold, n_resamples=50, seed=7)
    diffs = scores["a"] - scores["b"]
    # the same draws
    (draws,) = resample_indices(np.zeros(60), 50, np.random.default_rng(7))
    want = [
        100
        * (
            stats.spearmanr(good[i], gold[i]).statistic
            - stats.spearmanr(worse[i], gold[i]).statistic
        )
        for i in draws
    ]
    np.testing.assert_allclose(diffs, want, atol=1e-9)


def test_interval_agrees_with_scipy_bootstrap_percentile():
    good, worse, gold = _data(300)

    def diff(a, b, g, axis=-1):
        return spearman_rows(a, g) - spearman_rows(b, g)

    # scipy names the generator `rng` from 1.15 on, `random_state` before (the floor is 1.10)
    seed = (
        "rng"
        if "rng" in inspect.signature(stats.bootstrap).parameters
        else "random_state"
    )
    ref = stats.bootstrap(
        (good, worse, gold),
        diff,
        paired=True,
        vectorized=True,
        n_resamples=2000,
        method="percentile",
        **{seed: np.random.default_rng(1)},
    ).confidence_interval
    ours = paired_bootstrap(good, worse, gold, n_resamples=2000, seed=2)
    width = ref.high - ref.low
    # two independent Monte Carlo runs of the same interval: endpoints agree to a few % of its width
    assert ours.low == pytest.approx(ref.low, abs=0.1 * width)
    assert ours.high == pytest.approx(ref.high, abs=0.1 * width)
    assert ours.observed == pytest.approx(diff(good[None], worse[None], gold[None])[0])
    # sd 1.5 noise beats sd 3 noise on 300 pairs
    assert ours.low > 0 and ours.excludes_zero


def test_identical_methods_differ_by_exactly_zero_on_every_draw():
    good, _, gold = _data(80)
    res = paired_bootstrap(good, good.copy(), gold, n_resamples=200)
    assert (res.observed, res.low, res.high) == (
        0.0,
        0.0,
        0.0,
    ) and not res.excludes_zero


def test_a_95_percent_interval_covers_a_true_zero_difference_95_percent_of_the_time():
    # two methods that are the same noisy predictor with different noise draws: their true
    # difference is 0, so a 95% interval must contain 0 in 95% of independent trials. The count of
    # 250 seeded trials is binomial(250, 0.95) for a correct interval; a two-sided binomial test at
    # the 0.01 level fails an interval that is too narrow (a 90% one: 225/250) or too wide (a 99.9%
    # one: 249/250). Seeded, so the verdict is the same on every run (here 238/250, p = 1.0).
    trials, covered = 250, 0
    for trial in range(trials):
        rng = np.random.default_rng(100 + trial)
        gold = rng.normal(size=100)
        a, b = gold + rng.normal(size=100), gold + rng.normal(size=100)
        covered += not paired_bootstrap(
            a, b, gold, n_resamples=200, seed=trial
        ).excludes_zero
    assert stats.binomtest(covered, trials, 0.95).pvalue > 0.01, (
        f"{covered}/{trials} covered"
    )


def test_stratified_draws_keep_subset_sizes_and_the_observed_value_is_wmean():
    rng = np.random.default_rng(5)
    subsets = np.array(["a"] * 30 + ["b"] * 50)
    draws = resample_indices(subsets, 20, rng)
    assert [d.shape for d in draws] == [(20, 30), (20, 50)]
    assert (subsets[draws[0]] == "a").all() and (subsets[draws[1]] == "b").all()

    good, worse, gold = _data(80, seed=6)
    pairs = STSPairs("T", "test", ["s"] * 80, ["t"] * 80, gold, subsets.tolist())
    res = paired_bootstrap(good, worse, gold, subsets, n_resamples=100)
    want = (
        score_similarities(pairs, good).wmean - score_similarities(pairs, worse).wmean
    )
    assert res.observed == pytest.approx(want)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"sims_b": np.ones(5)}, "sims_b must be 1-D"),
        ({"gold": np.array([1.0, np.nan, 2.0, 3.0])}, "gold contains NaN"),
        ({"n_resamples": 0}, "n_resamples"),
        ({"level": 1.0}, "level"),
        ({"subsets": np.zeros(3)}, "subsets must have one label per pair"),
    ],
)
def test_bad_input_is_a_clear_error(kwargs, message):
    args = {
        "sims_a": np.arange(4.0),
        "sims_b": np.arange(4.0)[::-1].copy(),
        "gold": np.arange(4.0),
    }
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        paired_bootstrap(**args)


def test_compare_shares_draws_and_equals_pairwise_bootstraps():
    good, worse, gold = _data(120, seed=9)
    subsets = np.array(["a"] * 50 + ["b"] * 70)
    both = compare(
        good, {"worse": worse, "self": good}, gold, subsets, n_resamples=300, seed=4
    )
    alone = paired_bootstrap(good, worse, gold, subsets, n_resamples=300, seed=4)
    assert both["worse"] == alone  # same seed, same draws: the same interval
    assert (both["self"].low, both["self"].high) == (0.0, 0.0)


def test_subset_mean_difference_matches_normal_theory() -> None:
    # independent oracle: for large subsets the bootstrap interval of a difference of
    # means approaches observed ± 1.96 · sqrt(s_a²/n_a + s_b²/n_b)
    rng = np.random.default_rng(1)
    a, b = rng.normal(0.55, 0.15, 750), rng.normal(0.52, 0.28, 459)
    values = np.concatenate([rng.normal(0.3, 0.2, 300), a, b])
    labels = np.array(["x"] * 300 + ["a"] * 750 + ["b"] * 459)
    d = subset_mean_difference(values, labels, "a", "b", n_resamples=4000)
    assert d.observed == pytest.approx(a.mean() - b.mean())
    half = 1.96 * np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
    assert (d.high - d.low) / 2 == pytest.approx(half, rel=0.1)
    assert d.low < d.observed < d.high


def test_subset_mean_difference_rejects_unknown_subset() -> None:
    with pytest.raises(ValueError, match="subset 'z'"):
        subset_mean_difference(np.ones(4), np.array(list("aabb")), "a", "z")


def test_average_difference_of_one_task_is_the_paired_bootstrap():
    p = random_sts_pairs("STSB", 200, ["test"] * 200, seed=0)
    a, b = noisy(p.scores, 1.0, 1), noisy(p.scores, 2.0, 2)
    got = average_difference({"STSB": a}, {"STSB": b}, {"STSB": p}, seed=3)
    want = paired_bootstrap(a, b, p.scores, np.asarray(p.subsets), seed=3)
    assert (got.low, got.high, got.n_resamples) == (want.low, want.high, 1000)
    assert got.observed == pytest.approx(want.observed)
    assert got.excludes_zero and got.observed > 0


def test_average_difference_averages_the_tasks_as_the_avg_column_does():
    pairs = {
        "STS12": random_sts_pairs("STS12", 150, ["x"] * 50 + ["y"] * 100, seed=0),
        "SICK-R": random_sts_pairs("SICK-R", 120, ["test"] * 120, seed=1),
    }
    a = {t: noisy(p.scores, 1.0, 2) for t, p in pairs.items()}
    b = {t: noisy(p.scores, 1.5, 3) for t, p in pairs.items()}
    got = average_difference(a, b, pairs, n_resamples=200)
    per_task = [
        score_similarities(p, a[t]).wmean - score_similarities(p, b[t]).wmean
        for t, p in pairs.items()
    ]
    assert got.observed == pytest.approx(np.mean(per_task))
    assert got.low <= got.observed <= got.high and got.n_resamples == 200
    same = average_difference(a, a, pairs, n_resamples=50)
    assert (same.observed, same.low, same.high) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="same tasks"):
        average_difference(a, {"STS12": b["STS12"]}, pairs)
