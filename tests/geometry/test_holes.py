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
