"""Mahalanobis cosine, standardisation and BERTScore-style greedy matching against independent oracles."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import mahalanobis

from bertflow_mini.evaluation.sts import cosine_scores
from bertflow_mini.geometry import similarity as sim
from bertflow_mini.postprocess.whitening import Whitening


def correlated(n: int = 400, d: int = 6, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) + 3.0


def test_mahalanobis_cosine_is_cosine_after_whitening_to_1e_6():
    x = correlated()
    w = Whitening().fit(x)
    a, b = x[:50], x[50:100]
    got = sim.mahalanobis_cosine(a, b, w.mean, np.cov(x, rowvar=False))
    np.testing.assert_allclose(
        got, cosine_scores(w.transform(a), w.transform(b)), atol=1e-6, rtol=0
    )


def test_mahalanobis_cosine_matches_scipys_mahalanobis_distance_by_polarisation():
    x = correlated(seed=1)
    mu, cov = x.mean(0), np.cov(x, rowvar=False)
    vi = np.linalg.inv(cov)
    a, b = x[0], x[1]
    na, nb, nab = mahalanobis(a, mu, vi), mahalanobis(b, mu, vi), mahalanobis(a, b, vi)
    # ⟨u, v⟩ = (|u|² + |v|² − |u − v|²) / 2
    want = (na**2 + nb**2 - nab**2) / 2 / (na * nb)
    assert sim.mahalanobis_cosine(a[None], b[None], mu, cov)[0] == pytest.approx(
        want, abs=1e-10
    )


def test_mahalanobis_cosine_rejects_bad_input():
    x = correlated()
    with pytest.raises(ValueError, match="cov"):
        sim.mahalanobis_cosine(x[:2], x[2:4], x.mean(0), np.eye(3))
    with pytest.raises(ValueError, match="same shape"):
        sim.mahalanobis_cosine(x[:2], x[2:5], x.mean(0), np.eye(6))
    with pytest.raises(ValueError, match="not positive definite"):
        sim.mahalanobis_cosine(x[:2], x[2:4], x.mean(0), np.zeros((6, 6)))
    singular = np.diag([1.0, 1, 1, 1, 1, 0])  # one direction without variance, exactly
    with pytest.raises(ValueError, match="fewer rows than its 6 dimensions"):
        sim.mahalanobis_cosine(x[:2], x[2:4], x.mean(0), singular)


def test_standardisation_gives_every_dimension_unit_variance_and_is_diagonal_mahalanobis():
    x = correlated(seed=2) * np.array([100.0, 1, 1, 1, 1, 0.01])  # one rogue dimension
    s = sim.Standardisation().fit(x)
    z = s.transform(x)
    np.testing.assert_allclose(z.mean(0), 0, atol=1e-9)
    np.testing.assert_allclose(z.std(0, ddof=1), 1, atol=1e-9)
    diag = np.diag(np.var(x, axis=0, ddof=1))
    np.testing.assert_allclose(
        cosine_scores(s.transform(x[:20]), s.transform(x[20:40])),
        sim.mahalanobis_cosine(x[:20], x[20:40], x.mean(0), diag),
        atol=1e-9,
    )
    with pytest.raises(ValueError, match="constant"):
        sim.Standardisation().fit(np.c_[x, np.ones(len(x))])
    with pytest.raises(RuntimeError):
        sim.Standardisation().transform(x)


def test_greedy_match_by_hand():
    a = np.array([[1.0, 0.0], [0.0, 1.0]])  # reference: two orthogonal tokens
    b = np.array([[2.0, 0.0]])  # candidate: one token, parallel to a's first
    p, r, f = sim.greedy_match(a, b, np.ones(2), np.ones(1))
    assert (p, r) == (1.0, 0.5) and f == pytest.approx(2 / 3)
    # the matched token weighs 3
    p, r, f = sim.greedy_match(a, b, np.array([3.0, 1.0]), np.ones(1))
    assert r == pytest.approx(0.75)
    with pytest.raises(ValueError):
        sim.greedy_match(a, np.zeros((0, 2)), np.ones(2), np.ones(0))


def test_idf_by_hand():
    docs = [np.array([1, 2, 2]), np.array([2, 3])]
    idf = sim.token_idf(docs)
    assert idf[2] == pytest.approx(np.log(3 / 3)) and idf[1] == pytest.approx(
        np.log(3 / 2)
    )
    assert set(idf) == {1, 2, 3}


def test_bertscore_of_a_sentence_with_itself_is_one_and_is_symmetric_in_f1():
    rng = np.random.default_rng(0)
    vecs = [rng.normal(size=(n, 4)) for n in (3, 5, 2)]
    ids = [rng.integers(0, 9, size=len(v)) for v in vecs]
    tv = sim.TokenVectors(vecs, ids)
    np.testing.assert_allclose(
        sim.bertscore(tv, tv, sim.token_idf(ids + [np.array([99])])), 1.0
    )
    other = sim.TokenVectors(vecs[::-1], ids[::-1])
    np.testing.assert_allclose(sim.bertscore(tv, other), sim.bertscore(other, tv))
    with pytest.raises(ValueError):
        sim.bertscore(tv, sim.TokenVectors(vecs[:2], ids[:2]))


def test_token_vectors_average_to_the_sentence_vector(tiny_bert_dir):
    from bertflow_mini.encoders.encoder import encode
    from bertflow_mini.encoders.names import load_encoder

    enc = load_encoder(str(tiny_bert_dir), device="cpu")
    sentences = ["A man is playing a guitar.", "Two dogs run", "ok"]
    full = sim.token_vectors(enc, sentences, keep_special=True)
    means = np.stack([v.mean(0) for v in full.vectors])
    np.testing.assert_allclose(
        means,
        encode(enc, sentences, "first-last-avg", cache=False, progress=False),
        atol=1e-5,
    )
    content = sim.token_vectors(enc, sentences)
    # without [CLS] and [SEP]
    n_tokens = [len(enc.tokenizer(s)["input_ids"]) - 2 for s in sentences]
    assert (
        [len(v) for v in content.vectors] == n_tokens == [len(i) for i in content.ids]
    )
    # shortest first: sorted by length into other batches, the result still in input order
    batched = sim.token_vectors(enc, sentences[::-1], batch_size=2)
    for one, other in zip(
        content.vectors[::-1] + content.ids[::-1], batched.vectors + batched.ids
    ):
        np.testing.assert_allclose(one, other, atol=1e-5)
    mapped = content.mapped(sim.Standardisation().fit(content.stacked()))
    assert [len(v) for v in mapped.vectors] == n_tokens


# ---------------------------------------------------------------------------------------- paired rows
def test_sampled_similarities_table_scores_every_row_and_averages():
    from conftest import noisy, random_sts_pairs

    from bertflow_mini.evaluation.sts import score_similarities

    pairs = {
        t: random_sts_pairs(t, 80, ["test"] * 80, seed=i) for i, t in enumerate("AB")
    }
    rows = {
        "good": {t: noisy(p.scores, 0.5, 1) for t, p in pairs.items()},
        "bad": {t: noisy(p.scores, 5.0, 2) for t, p in pairs.items()},
    }
    table = sim.SampledSimilarities(pairs, rows).table()
    assert list(table.index) == ["good", "bad"]
    assert list(table.columns) == ["A", "B", "Avg."]
    for row, by_task in rows.items():
        for t, s in by_task.items():
            assert table.loc[row, t] == pytest.approx(
                score_similarities(pairs[t], s).wmean
            )
        assert table.loc[row, "Avg."] == pytest.approx(
            table.loc[row, ["A", "B"]].mean()
        )
