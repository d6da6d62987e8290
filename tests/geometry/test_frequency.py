"""Tests for bertflow_mini.geometry.frequency: exact k-NN, rank buckets, the whole-word filter and Table 1."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bertflow_mini.geometry.frequency import (
    assign_buckets,
    bucket_labels,
    exclusion_counts,
    frequency_norm_correlation,
    frequency_ranks,
    frequency_table,
    knn,
    ranks_from_frequencies,
    whole_word_vocab,
)


def brute_force_knn(E: np.ndarray, k: int):
    """Reference: every distance from its definition, self excluded, sorted per row."""
    d = np.sqrt(((E[:, None, :] - E[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(d, np.inf)
    idx = np.argsort(d, axis=1)[:, :k]
    return np.take_along_axis(d, idx, axis=1), idx


def test_knn_matches_brute_force():
    rng = np.random.default_rng(0)
    # continuous random data: no tied distances (almost surely)
    E = rng.normal(size=(150, 12))
    dist_ref, idx_ref = brute_force_knn(E, 7)
    dist, idx, dot = knn(E, 7, chunk=64)
    np.testing.assert_array_equal(idx, idx_ref)
    np.testing.assert_allclose(dist, dist_ref, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(
        dot, np.einsum("nd,nkd->nk", E, E[idx]), rtol=1e-10, atol=1e-10
    )
    assert (idx != np.arange(150)[:, None]).all()
    assert (np.diff(dist, axis=1) >= 0).all()


def test_knn_chunk_size_does_not_matter():
    E = np.random.default_rng(1).normal(size=(101, 5))
    ref = knn(E, 4, chunk=1000)
    for chunk in (1, 7, 50, 101):
        out = knn(E, 4, chunk=chunk)
        np.testing.assert_array_equal(out.idx, ref.idx)
        np.testing.assert_allclose(out.dist, ref.dist, rtol=1e-12)
        np.testing.assert_allclose(out.dot, ref.dot, rtol=1e-12)


def test_knn_rejects_bad_input():
    with pytest.raises(ValueError, match="NaN"):
        knn(np.array([[0.0, np.nan], [1.0, 1.0], [2.0, 2.0]]), 1)
    with pytest.raises(ValueError, match="k_max"):
        knn(np.zeros((3, 2)), 3)
    with pytest.raises(ValueError, match="2-D"):
        knn(np.zeros(5), 1)


def test_ranks_and_buckets_on_synthetic_vocabulary():
    freqs = np.array([5.0, 9.0, 0.0, 9.0, 1.0, 0.0])
    # 9 (first at 1), 9 (at 3), 5, 1, 0 (at 2), 0 (at 5): ties keep input order
    np.testing.assert_array_equal(ranks_from_frequencies(freqs), [2, 0, 4, 1, 3, 5])

    ranks = np.arange(6000)
    which = assign_buckets(ranks)
    np.testing.assert_array_equal(np.bincount(which), [100, 400, 4500, 1000])
    assert which[99] == 0 and which[100] == 1 and which[4999] == 2 and which[5000] == 3
    assert (assign_buckets(np.array([0, 3, 5]), ((1, 5),)) == [-1, 0, -1]).all()
    assert bucket_labels() == ["[0,100)", "[100,500)", "[500,5K)", "[5K,…)"]


def test_frequency_ranks_uses_wordfreq_and_puts_unknown_words_last():
    ranks = frequency_ranks(["zebra", "the", "qqxqzvbn", "house"])
    np.testing.assert_array_equal(ranks, [2, 0, 3, 1])


def test_whole_word_vocab_on_hand_written_vocab():
    vocab = [
        "[PAD]",
        "[unused0]",
        "[unused17]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "[UNK]",
        "the",
        "##ing",
        "!",
        "--",
        "$",
        "1999",
        "7",
        "²",
        "cat",
        "don't",
        "x1",
        "##s",
        "é",
    ]
    kept = whole_word_vocab(vocab)
    assert [vocab[i] for i in kept] == ["the", "cat", "don't", "x1", "é"]
    counts = exclusion_counts(vocab)
    assert counts == {
        "special": 7,
        "word piece": 2,
        "punctuation/symbol": 3,
        "digits": 3,
        "whole words (kept)": 5,
    }
    assert sum(counts.values()) == len(vocab)


def test_table_shows_norm_growing_with_rank():
    rng = np.random.default_rng(0)
    n, d = 700, 16
    # the last three must be ignored
    words = [f"w{i}" for i in range(n)] + [
        "[CLS]",
        "##x",
        "42",
    ]
    # word i has rank i
    freqs = np.concatenate([1.0 / np.arange(1, n + 1), [1.0, 1.0, 1.0]])
    directions = rng.normal(size=(n + 3, d))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    norms = 1.0 + np.concatenate([np.arange(n), [0, 0, 0]]) / n  # norm grows with rank
    E = directions * norms[:, None]
    E[n:] *= 100.0  # huge rows that would dominate the means if the filter failed

    table = frequency_table(
        E, words, buckets=((0, 100), (100, 500), (500, None)), frequencies=freqs
    )
    assert list(table.columns) == ["[0,100)", "[100,500)", "[500,…)"]
    assert list(table.loc["words"]) == [100, 400, 200]
    expected = [norms[:100].mean(), norms[100:500].mean(), norms[500:n].mean()]
    np.testing.assert_allclose(table.loc["mean ℓ2 norm"], expected, rtol=1e-12)
    assert table.loc["mean ℓ2 norm"].is_monotonic_increasing
    # neighbour statistics average more neighbours as k grows: distances grow with k
    for k in (
        3,
        5,
        7,
    ):
        assert (table.loc[f"k-NN ℓ2 distance, k={k}"] > 0).all()
    assert (
        table.loc["k-NN ℓ2 distance, k=7"] >= table.loc["k-NN ℓ2 distance, k=3"]
    ).all()


def test_table_dot_products_agree_with_neighbour_definition():
    rng = np.random.default_rng(3)
    E = rng.normal(size=(40, 4))
    words = [f"w{i}" for i in range(40)]
    table = frequency_table(
        E, words, ks=(2,), buckets=((0, None),), frequencies=np.ones(40)
    )
    dist, idx = brute_force_knn(E, 2)
    assert table.loc["k-NN ℓ2 distance, k=2", "[0,…)"] == pytest.approx(dist.mean())
    assert table.loc["k-NN dot product, k=2", "[0,…)"] == pytest.approx(
        np.einsum("nd,nkd->nk", E, E[idx]).mean()
    )


def test_table_of_a_hand_computed_case():
    # Four words in 2-D, ranked by the given frequencies, two rank buckets, k = 1. By hand:
    #   norms 5, 1, 2, 10; nearest neighbours w0→w2 (√13, dot 8), w1→w2 (1, dot 2), w2→w1 (1, dot 2),
    #   w3→w0 (5, dot 50); ranks 0, 1 | 2, 3.
    E = np.array([[3.0, 4.0], [0.0, 1.0], [0.0, 2.0], [6.0, 8.0]])
    table = frequency_table(
        E,
        ["w0", "w1", "w2", "w3"],
        ks=(1,),
        buckets=((0, 2), (2, None)),
        frequencies=[4.0, 3.0, 2.0, 1.0],
    )
    assert list(table.columns) == ["[0,2)", "[2,…)"]
    assert list(table.index) == [
        "mean ℓ2 norm",
        "k-NN ℓ2 distance, k=1",
        "k-NN dot product, k=1",
        "words",
    ]
    np.testing.assert_allclose(
        table["[0,2)"], [3.0, (np.sqrt(13) + 1) / 2, 5.0, 2], rtol=1e-12
    )
    np.testing.assert_allclose(table["[2,…)"], [6.0, 3.0, 26.0, 2], rtol=1e-12)
    # The frequencies decide the buckets: reversed, the two buckets swap their words.
    flipped = frequency_table(
        E,
        ["w0", "w1", "w2", "w3"],
        ks=(1,),
        buckets=((0, 2), (2, None)),
        frequencies=[1.0, 2.0, 3.0, 4.0],
    )
    np.testing.assert_allclose(flipped["[0,2)"], table["[2,…)"], rtol=1e-12)


def test_frequency_norm_correlation_sign():
    rng = np.random.default_rng(0)
    E = rng.normal(size=(200, 8))
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    freqs = rng.uniform(size=200)
    E *= (2.0 - freqs)[:, None]  # frequent -> short
    rho, p = frequency_norm_correlation(
        E, [f"w{i}" for i in range(200)], frequencies=freqs
    )
    assert rho == pytest.approx(-1.0) and p < 1e-10


def test_table_rejects_mismatched_words():
    with pytest.raises(ValueError, match="rows"):
        frequency_table(np.zeros((5, 2)), ["a", "b"])


def test_side_by_side_pairs_each_bucket_with_the_paper():
    from bertflow_mini.geometry.frequency import published_table1, side_by_side

    ours = published_table1().fillna(1.0) * 2  # a stand-in table of the right shape
    both = side_by_side(ours, "ours")
    assert list(both.columns.get_level_values(0)[:2]) == [ours.columns[0]] * 2
    assert both.loc["mean ℓ2 norm", (ours.columns[0], "ours")] == round(
        2 * published_table1().iloc[0, 0], 2
    )
    assert (
        both.loc["mean ℓ2 norm", (ours.columns[0], "paper (bert-base)")]
        == published_table1().iloc[0, 0]
    )
    assert "words" not in both.index


# ----------------------------------------------------------------------------- unknown words, comparisons
def test_unknown_words_rank_last_or_are_dropped():
    from bertflow_mini.geometry.frequency import known_word_rows

    rng = np.random.default_rng(20)
    words = ["the", "zzqxj", "cat", "[CLS]", "dog", "qqzzv", "of", "a", "is", "in"]
    E = rng.normal(size=(len(words), 4))
    freqs = [5.0, 0.0, 2.0, 0.0, 1.0, 0.0, 4.0, 3.0, 2.5, 1.5]
    keep, f = known_word_rows(E, words, freqs, unknown="drop")
    assert [words[i] for i in keep] == ["the", "cat", "dog", "of", "a", "is", "in"]
    assert (f > 0).all()
    keep_last, _ = known_word_rows(E, words, freqs)
    assert len(keep_last) == 9  # only [CLS] is not a word
    buckets = ((0, 3), (3, None))
    dropped = frequency_table(
        E, words, ks=(1,), buckets=buckets, frequencies=freqs, unknown="drop"
    )
    kept = frequency_table(E, words, ks=(1,), buckets=buckets, frequencies=freqs)
    assert dropped.loc["words"].tolist() == [3, 4] and kept.loc["words"].tolist() == [
        3,
        6,
    ]
    norms = np.linalg.norm(E, axis=1)
    assert dropped.loc["mean ℓ2 norm", "[0,3)"] == pytest.approx(
        norms[[0, 6, 7]].mean()
    )
    rho = frequency_norm_correlation(E, words, freqs, unknown="drop").statistic
    import scipy.stats

    assert rho == pytest.approx(
        scipy.stats.spearmanr(np.array(freqs)[keep], norms[keep]).statistic
    )
    with pytest.raises(ValueError, match="unknown must be"):
        known_word_rows(E, words, freqs, unknown="floor")


def test_table1_comparison_stacks_the_paper_and_computes_the_trend():
    from bertflow_mini.geometry.frequency import published_table1, table1_comparison

    paper = published_table1()
    mine = paper * 2.0
    out = table1_comparison({"mine": mine})
    assert list(out.index.get_level_values(1)[:2]) == ["paper: bert-base", "mine"]
    row = out.loc[("mean ℓ2 norm", "paper: bert-base")]
    assert row["rare / frequent"] == pytest.approx(1.45 / 0.95)
    assert out.loc[("mean ℓ2 norm", "mine"), "[0,100)"] == pytest.approx(1.90)
    assert out.loc[("mean ℓ2 norm", "mine"), "rare / frequent"] == pytest.approx(
        1.45 / 0.95
    )
    with pytest.raises(ValueError, match="unknown rows"):
        table1_comparison({"mine": mine}, rows=("no such row",))


def test_norm_by_corpus_count_by_hand():
    from bertflow_mini.geometry.frequency import norm_by_corpus_count

    E0 = np.zeros((6, 2)) + np.array([1.0, 0.0])
    shift = np.array([[0, 1], [0, 2], [1, 0], [-1, 0], [0, 1], [3, 4]], dtype=float)
    E = E0 + shift
    counts = np.array([0, 0, 3, 3, 50, 50])
    t = norm_by_corpus_count(E, E0, counts, rows=range(6), edges=(0, 1, 5))
    assert list(t.index) == ["0", "1–4", "≥ 5"]
    assert t.loc["0", "tokens"] == 2
    # both moved along +y
    assert t.loc["0", "displacements' mean cosine"] == pytest.approx(1.0)
    # opposite ways
    assert t.loc["1–4", "displacements' mean cosine"] == pytest.approx(-1.0)
    assert t.loc["0", "norm after"] == pytest.approx((np.sqrt(2) + np.sqrt(5)) / 2)
    assert t.loc["≥ 5", "norm before"] == pytest.approx(1.0)
    # |(0,1)| and |(3,4)|, averaged
    assert t.loc["≥ 5", "displacement norm"] == pytest.approx(3.0)
    with pytest.raises(ValueError, match="must agree"):
        norm_by_corpus_count(E, E0[:5], counts, rows=range(5))


def test_checkpoint_token_counts_explains_a_missing_file(tmp_path):
    from bertflow_mini.encoders.checkpoints import checkpoint_token_counts

    with pytest.raises(FileNotFoundError, match="token_counts.npy"):
        checkpoint_token_counts(str(tmp_path))
    np.save(tmp_path / "token_counts.npy", np.array([0, 3, 1]))
    assert checkpoint_token_counts(str(tmp_path)).tolist() == [0, 3, 1]


def test_token_counts_reads_a_checkpoint_or_estimates_from_wordfreq(tmp_path):
    import wordfreq

    from bertflow_mini.geometry.corpus_counts import token_counts

    vocab = ["the", "cat", "zzqxv"]
    # no token_counts.npy
    counts, source = token_counts(str(tmp_path), vocab, corpus_words=1e6)
    expected = [round(wordfreq.word_frequency(w, "en") * 1e6) for w in vocab]
    assert (
        counts.tolist() == expected
        and counts[2] == 0
        and source.startswith("estimated")
    )
    np.save(tmp_path / "token_counts.npy", np.array([5, 0, 1]))
    counts, source = token_counts(str(tmp_path), vocab)
    assert counts.tolist() == [5, 0, 1] and "corpus counts" in source
    with pytest.raises(ValueError, match="3 tokens"):
        token_counts(str(tmp_path), vocab + ["dog"])


def _fake_checkpoint(root, name, counts, steps=10, batch_size=4, sentences=10):
    folder = root / name
    folder.mkdir()
    facts = {
        "recipe": {"steps": steps, "batch_size": batch_size},
        "train_sentences": sentences,
    }
    (folder / "recipe.json").write_text(json.dumps(facts))
    np.save(folder / "token_counts.npy", np.array(counts))
    return folder


def test_target_counts_from_a_runs_facts_by_hand(tmp_path):
    from bertflow_mini.geometry.corpus_counts import target_counts

    # 10 sentences in batches of 4: 3 batches an epoch; the 50% checkpoint of a 10-step run is
    # step 5, so each sentence was drawn 5/3 times, and 15% of its tokens chosen as targets
    folder = _fake_checkpoint(tmp_path, "pct-050", [0, 3, 6])
    targets, source = target_counts(str(folder), ["[PAD]", "cat", "dog"])
    assert targets == pytest.approx([0.0, 3 * 5 / 3 * 0.15, 6 * 5 / 3 * 0.15])
    assert "1.67 epoch" in source and "15% masking" in source
    # the random-init checkpoint: no step taken, no target drawn
    start = _fake_checkpoint(tmp_path, "pct-000", [0, 3, 6])
    assert target_counts(str(start), ["[PAD]", "cat", "dog"])[0].tolist() == [0, 0, 0]
    # counts beside no checkpoint name: no step to read
    other = _fake_checkpoint(tmp_path, "final", [0, 3, 6])
    with pytest.raises(ValueError, match="pct-<percent>"):
        target_counts(str(other), ["[PAD]", "cat", "dog"])


def test_target_counts_of_another_model_are_an_estimate_from_googles_recipe(tmp_path):
    import wordfreq

    from bertflow_mini.geometry.corpus_counts import target_counts

    vocab = ["the", "cat"]
    targets, source = target_counts(str(tmp_path), vocab, corpus_words=1e6)
    # 40 epochs of Google's recipe, 15% of each occurrence a target: 6 per occurrence
    by_hand = [round(wordfreq.word_frequency(w, "en") * 1e6) * 40 * 0.15 for w in vocab]
    assert targets == pytest.approx(by_hand) and source.startswith("estimated")
    assert "40 epochs" in source


def test_target_groups_cut_counts_where_the_expected_targets_cross_each_threshold():
    from bertflow_mini.geometry.corpus_counts import target_groups
    from bertflow_mini.geometry.frequency import norm_by_corpus_count

    counts = np.arange(0, 3000)
    # 0.07 targets per occurrence: 1 target from count 15 (14 x 0.07 = 0.98), 10 from 143
    # (142 x 0.07 = 9.94), 100 from 1,429 (1,428 x 0.07 = 99.96)
    edges, labels = target_groups(counts, 0.07 * counts, thresholds=(1, 10, 100))
    assert edges == [0, 1, 15, 143, 1429]
    assert labels == [
        "0 (count 0)",
        "under 1 (count 1–14)",
        "1–10 (count 15–142)",
        "10–100 (count 143–1,428)",
        "≥ 100 (count ≥ 1,429)",
    ]
    # 6 targets per occurrence (Google's recipe): no whole count is expected under once
    edges, labels = target_groups(counts, 6.0 * counts, thresholds=(1, 10, 100))
    assert edges == [0, 1, 2, 17]
    assert labels[1:] == ["1–10 (count 1)", "10–100 (count 2–16)", "≥ 100 (count ≥ 17)"]
    # the groups fit the tables that take edges and labels
    E0 = np.zeros((6, 2))
    E = np.arange(12.0).reshape(6, 2)
    table = norm_by_corpus_count(
        E, E0, np.array([0, 0, 20, 30, 5, 7]), range(6), [0, 1, 15], ["a", "b", "c"]
    )
    assert table.index.tolist() == ["a", "b", "c"]
    assert table["tokens"].tolist() == [2, 2, 2]
    with pytest.raises(ValueError, match="multiple of counts"):
        target_groups(counts, counts + 1.0)


def test_sentence_draws_are_the_epochs_seen():
    from bertflow_mini.encoders.pretrain import sentence_draws

    facts = {"recipe": {"batch_size": 64}, "train_sentences": 6400}
    # the batch size divides the corpus: step x batch size / sentences
    assert sentence_draws(facts, 50) == pytest.approx(50 * 64 / 6400)
    assert sentence_draws(facts, 0) == 0.0
    # one sentence more: 101 batches an epoch, the last a batch of one
    assert sentence_draws({**facts, "train_sentences": 6401}, 101) == 1.0
    with pytest.raises(ValueError, match="step"):
        sentence_draws(facts, -1)


def test_drift_along_tells_the_way_each_group_moved():
    from bertflow_mini.geometry.frequency import drift_along

    rng = np.random.default_rng(0)
    E0 = rng.normal(size=(9, 4))
    h = np.array([1.0, 0.0, 0.0, 0.0])
    counts = np.array([0, 0, 0, 2, 2, 2, 50, 50, 50])
    move = np.where(counts[:, None] == 0, -h, 0.0)  # never seen: pushed against h
    move += np.where(counts[:, None] == 50, 3 * h, 0.0)  # frequent: pulled along h
    # mean (0, 0, 2/3, 0): orthogonal
    move[3:6] = [
        [0, 1, 0, 0],
        [0, -1, 0, 0],
        [0, 0, 2, 0],
    ]
    s = drift_along(
        E0 + move, E0, counts, rows=range(9), direction=5 * h, edges=(0, 1, 10)
    )
    assert list(s.index) == ["0", "1–9", "≥ 10"]
    np.testing.assert_allclose(s.to_numpy(), [-1.0, 0.0, 1.0], atol=1e-12)
    with pytest.raises(ValueError, match="non-zero vector"):
        drift_along(E0, E0, counts, range(9), np.zeros(4))
    with pytest.raises(ValueError, match="must agree"):
        drift_along(E0, E0[:5], counts, range(5), h)
