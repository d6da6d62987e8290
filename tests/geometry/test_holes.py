"""Holes measured: convex mixtures, k-NN distances and the hole ratio on clouds whose holes we know."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from bertflow_mini.geometry import holes


def test_split_is_a_partition():
    q, r = holes.query_reference_split(101, reference=0.3, seed=1)
    assert len(r) == 30 and len(q) == 71
    assert sorted(np.r_[q, r].tolist()) == list(range(101))
    with pytest.raises(ValueError):
        holes.query_reference_split(3)


def test_midpoints_are_averages_and_mixing_commutes_with_affine_maps():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20, 3))
    plan = holes.mixture_plan(20, 7, kind="midpoint", seed=2)
    m = holes.mix(x, plan)
    np.testing.assert_allclose(m, (x[plan.parents[:, 0]] + x[plan.parents[:, 1]]) / 2)
    assert (plan.parents[:, 0] != plan.parents[:, 1]).all()
    rand = holes.mixture_plan(20, 50, parents=4, kind="random", seed=3)
    np.testing.assert_allclose(rand.weights.sum(1), 1.0)
    assert (rand.weights >= 0).all() and rand.parents.shape == (50, 4)
    A, c = rng.normal(size=(3, 3)), rng.normal(size=3)
    np.testing.assert_allclose(
        holes.mix(x @ A + c, rand), holes.mix(x, rand) @ A + c, atol=1e-12
    )
    with pytest.raises(ValueError):
        holes.mixture_plan(20, 5, kind="spline")
    with pytest.raises(ValueError):
        holes.mix(x[:3], plan)


def test_knn_distance_equals_brute_force():
    rng = np.random.default_rng(1)
    q, r = rng.normal(size=(37, 5)), rng.normal(size=(50, 5))
    want = np.sort(cdist(q, r), axis=1)[:, :4].mean(1)
    np.testing.assert_allclose(holes.knn_distance(q, r, k=4, chunk=8), want, rtol=1e-9)
    with pytest.raises(ValueError):
        holes.knn_distance(q, r, k=51)
    with pytest.raises(ValueError):
        holes.knn_distance(q, r[:, :4])


def circle(n: int, seed: int) -> np.ndarray:
    t = np.random.default_rng(seed).uniform(0, 2 * np.pi, n)
    return np.c_[np.cos(t), np.sin(t)]


def test_a_ring_has_a_hole_and_its_gaussian_twin_has_less_of_one():
    x = circle(2000, 0)  # midpoints of a ring fall inside it, where no real point lies
    q, r = holes.query_reference_split(len(x), seed=0)
    plan = holes.mixture_plan(len(q), 500, seed=1)
    ring = holes.hole_ratio(x[q], holes.mix(x[q], plan), x[r])
    g = holes.gaussian_twin(x, seed=0)
    twin = holes.hole_ratio(g[q], holes.mix(g[q], plan), g[r])
    assert ring > 5 and twin < 2


def test_hole_table_affine_space_agrees_both_ways_and_a_nonlinear_one_need_not():
    x = circle(600, 1) + 3.0
    q, r = holes.query_reference_split(len(x), seed=0)
    plan = holes.mixture_plan(len(q), 200, seed=1)
    spaces = {
        "raw": None,
        "affine": lambda v: v @ np.array([[2.0, 1], [0, 1]]) - 1,
        "cube": lambda v: v**3,
    }
    dists = {name: holes.hole_distances(x, f, plan, q, r) for name, f in spaces.items()}
    np.testing.assert_allclose(
        dists["raw"]["mixed before"], dists["raw"]["mixed inside"]
    )
    np.testing.assert_allclose(
        dists["affine"]["mixed before"], dists["affine"]["mixed inside"], rtol=1e-9
    )
    assert not np.allclose(dists["cube"]["mixed before"], dists["cube"]["mixed inside"])
    table = holes.hole_table(dists)
    want = np.median(dists["cube"]["mixed inside"]) / np.median(dists["cube"]["real"])
    assert table.loc["cube", "hole ratio, mixed inside"] == pytest.approx(want)
    assert table.loc["raw", "hole ratio, mixed before"] == pytest.approx(
        holes.hole_ratio(x[q], holes.mix(x[q], plan), x[r])
    )


def test_token_counts_fall_back_to_the_sentences_and_content_ids_drop_cls_sep(
    tiny_bert_dir,
):
    from bertflow_mini.encoders.names import load_encoder

    enc = load_encoder(str(tiny_bert_dir), device="cpu")
    sentences = ["the cat", "the dog the"]
    ids = holes.content_ids(enc.tokenizer, sentences)
    the = enc.tokenizer.convert_tokens_to_ids("the")
    assert [len(i) for i in ids] == [2, 3]
    # no token_counts.npy in the tiny model's folder
    counts = holes.token_counts(enc, sentences)
    assert (
        counts[the] == 3
        and counts[enc.tokenizer.cls_token_id] == 2
        and counts.sum() == 9
    )


def test_gaussian_twin_has_the_datas_moments():
    x = (
        np.random.default_rng(2).normal(size=(5000, 3))
        @ np.array([[2.0, 0, 0], [1, 1, 0], [0, 0, 0.5]])
        + 7
    )
    g = holes.gaussian_twin(x, seed=1)
    np.testing.assert_allclose(g.mean(0), x.mean(0), atol=0.1)
    np.testing.assert_allclose(
        np.cov(g, rowvar=False), np.cov(x, rowvar=False), atol=0.15
    )


def test_sentence_rarity_by_hand():
    # relative frequencies .9, .09, .01, unseen
    counts = np.array([90.0, 9.0, 1.0, 0.0])
    got = holes.sentence_rarity([[0], [1, 2], [3]], counts)
    np.testing.assert_allclose(
        got, [-np.log10(0.9), (-np.log10(0.09) - np.log10(0.01)) / 2, 2.0]
    )
    with pytest.raises(ValueError):
        holes.sentence_rarity([[]], counts)


def test_pair_split_keeps_every_pair_on_one_side():
    sentences = [f"s{i}" for i in range(200)]
    rng = np.random.default_rng(0)
    # chains s0-s1-s2 and random pairs: linked sentences must share a side, transitively
    first = ["s0", "s1", *(f"s{i}" for i in rng.integers(3, 200, 60))]
    second = ["s1", "s2", *(f"s{i}" for i in rng.integers(3, 200, 60))]
    q, r = holes.pair_split(sentences, first, second, reference=0.5, seed=3)
    assert sorted(np.r_[q, r].tolist()) == list(range(200))
    side = {sentences[i]: "r" for i in r} | {sentences[i]: "q" for i in q}
    assert all(side[a] == side[b] for a, b in zip(first, second))
    assert side["s0"] == side["s2"]
    # whole groups are drawn until the reference part reaches its share: it overshoots by less
    # than one group (here at most 61 + 1 sentences in a group, far fewer in practice)
    assert 100 <= len(r) < 100 + 62 and len(q) > 0
    with pytest.raises(ValueError):
        holes.pair_split(sentences, ["s0"], ["nowhere"])
    with pytest.raises(ValueError):
        holes.pair_split(sentences, ["s0"], [])
    with pytest.raises(ValueError):  # one group holds everything: no query side is left
        holes.pair_split(sentences[:4], ["s0", "s1", "s2"], ["s1", "s2", "s3"])


def test_excess_interval_is_zero_for_a_copy_and_exact_for_scaled_mixtures():
    rng = np.random.default_rng(2)
    twin = {"real": rng.gamma(4, size=500), "mixed inside": rng.gamma(3, size=400)}
    same = holes.excess_interval(twin, dict(twin), draws=200)
    assert same == (0.0, 0.0, 0.0)
    h_twin = np.median(twin["mixed inside"]) / np.median(twin["real"])
    # mixtures 20 % further from their neighbours: the ratio is 1.2 times the twin's in every draw
    emptier = {"real": twin["real"], "mixed inside": 1.2 * twin["mixed inside"]}
    diff, low, high = holes.excess_interval(emptier, twin, draws=300, seed=1)
    assert diff == pytest.approx(0.2 * h_twin)
    assert 0 < low < diff < high
    # an independent noisy copy: the interval is wide enough to hold zero
    other = {"real": rng.gamma(4, size=500), "mixed inside": rng.gamma(3, size=400)}
    _, low, high = holes.excess_interval(other, twin, draws=500)
    assert low < 0 < high
    with pytest.raises(ValueError):
        holes.excess_interval(
            twin, {"real": twin["real"][:10], "mixed inside": twin["mixed inside"]}
        )


def test_task_pair_split_links_pairs_across_all_splits():
    from types import SimpleNamespace

    # a pair in train and one in test share "b": a, b, c must land on one side together
    split_pairs = {
        "train": (["a", "d"], ["b", "e"]),
        "dev": (["f"], ["g"]),
        "test": (["b", "h"], ["c", "i"]),
    }

    class Stub:
        def load(self, task, split):
            return SimpleNamespace(
                sent1=split_pairs[split][0], sent2=split_pairs[split][1]
            )

        def sentences(self, task):
            return list("abcdefghi")

    for seed in range(5):
        q, r = holes.task_pair_split(Stub(), "STSB", seed=seed)
        side = np.zeros(9, dtype=bool)
        side[r] = True
        assert (
            side[0] == side[1] == side[2] and side[3] == side[4] and side[5] == side[6]
        )
        assert sorted(np.r_[q, r].tolist()) == list(range(9))
