"""Chapter 0's measurements: random pairs and AUC against hand cases and scipy, the
first table's row, centring, the pooling grid on a tiny BERT, and the mean pooling with frequent
tokens left out against a mean computed by hand."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from bertflow_mini.chapters.puzzle import (
    centred_scores,
    mean_share,
    pooling_grid_table,
    random_pairs,
    separation_row,
)


def test_random_pairs_never_pair_a_sentence_with_itself():
    i, j = random_pairs(5, 20_000, seed=0)
    assert (i != j).all() and i.min() == j.min() == 0 and i.max() == j.max() == 4
    i2, j2 = random_pairs(5, 20_000, seed=0)
    assert (i == i2).all() and (j == j2).all()
    # every ordered pair (i, j), i != j, is equally likely: 20 cells, chi-square test
    cells = np.bincount(i * 5 + j, minlength=25).reshape(5, 5)[~np.eye(5, dtype=bool)]
    assert scipy.stats.chisquare(cells).pvalue > 1e-3
    with pytest.raises(ValueError):
        random_pairs(1, 3)


def test_separation_row_on_a_hand_made_benchmark():
    gold = np.array([5.0, 4.5, 0.5, 0.0, 2.5])
    sims = np.array([0.9, 0.8, 0.3, 0.1, 0.5])  # perfectly ordered
    row = separation_row(np.array([0.2, 0.0]), sims, gold)
    assert row["sim paraphrase"] == pytest.approx(0.85) and row[
        "sim unrelated"
    ] == pytest.approx(0.2)
    assert row["sim random"] == pytest.approx(0.1)
    assert row["AUC para > unrel."] == 1.0 and row["STS-B ρ×100"] == pytest.approx(
        100.0
    )
    assert set(row) == {
        "sim random",
        "sim unrelated",
        "sim paraphrase",
        "AUC para > unrel.",
        "STS-B ρ×100",
    }
    with pytest.raises(ValueError):
        separation_row(np.zeros(2), sims, gold[:3])


def test_centring_and_the_mean_share():
    a, b = np.array([[2.0, 1.0]]), np.array([[2.0, -1.0]])
    # (0,1) vs (0,-1)
    assert centred_scores(a, b, np.array([2.0, 0.0]))[0] == pytest.approx(-1.0)
    with pytest.raises(ValueError):
        centred_scores(a, b, np.zeros(3))
    assert mean_share(np.array([[1.0, 1.0], [1.0, -1.0]])) == pytest.approx(0.5)
    # Exercise 1: x = μ + e in high dimension -> mean random cosine ≈ ‖μ‖² / (‖μ‖² + s²) = 0.8
    rng = np.random.default_rng(0)
    d = 2000
    X = 2.0 * np.ones(d) / np.sqrt(d) + rng.normal(0, 1 / np.sqrt(d), (400, d))
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    cos = (Xn @ Xn.T)[np.triu_indices(400, 1)].mean()
    assert mean_share(X) == pytest.approx(0.8, abs=0.01) and cos == pytest.approx(
        0.8, abs=0.01
    )


def test_pooling_grid_table_on_a_tiny_bert(tiny_bert_dir, monkeypatch):
    from bertflow_mini.data import STSPairs
    from bertflow_mini.encoders.encoder import encode
    from bertflow_mini.encoders.names import load_encoder
    from bertflow_mini.encoders.pooling import pooling_grid
    from bertflow_mini.evaluation.sts import cosine_scores, spearman

    monkeypatch.setenv("BERTFLOW_MODELS", str(tiny_bert_dir.parent))
    enc = load_encoder("tiny-bert", device="cpu")
    s1 = [
        "A man plays a guitar.",
        "A dog runs.",
        "The sun is up.",
        "Kids play ball.",
        "It rains.",
    ]
    s2 = [
        "A man is playing guitar.",
        "A cat sleeps.",
        "It is night.",
        "Children play.",
        "A man plays a guitar.",
    ]
    pairs = STSPairs(
        "STSB", "test", s1, s2, np.array([5.0, 1.0, 0.5, 4.0, 0.0]), ["test"] * 5
    )
    table = pooling_grid_table(enc, pairs, pooling_grid(enc.n_layers))
    assert table.index.tolist() == ["cls", "mean", "max", "min"]
    assert table.columns.tolist() == ["last 1", "last 2 avg", "last 2 concat"]
    # one cell recomputed directly
    a, b = (
        encode(enc, s, "max-last2-concat", cache=False, progress=False)
        for s in (s1, s2)
    )
    assert table.loc["max", "last 2 concat"] == pytest.approx(
        spearman(cosine_scores(a, b), pairs.scores)
    )
    # one layer: averaging and concatenating are the same vector, scored once
    one = [
        encode(enc, s, p, cache=False, progress=False)
        for p in ("min-last1-avg", "min-last1-concat")
        for s in (s1, s2)
    ]
    np.testing.assert_array_equal(one[0], one[2])
    assert table.loc["min", "last 1"] == pytest.approx(
        spearman(cosine_scores(one[0], one[1]), pairs.scores)
    )


def test_the_grid_scores_one_layer_once(tiny_bert_dir, monkeypatch):
    from bertflow_mini.data import STSPairs
    from bertflow_mini.encoders.names import load_encoder
    from bertflow_mini.encoders.pooling import pooling_grid

    monkeypatch.setenv("BERTFLOW_MODELS", str(tiny_bert_dir.parent))
    enc = load_encoder("tiny-bert", device="cpu")
    s1, s2 = (
        ["A dog runs.", "It rains.", "Kids play."],
        ["A cat runs.", "The sun.", "Children play."],
    )
    pairs = STSPairs("STSB", "test", s1, s2, np.array([3.0, 0.0, 5.0]), ["test"] * 3)
    grid = pooling_grid(enc.n_layers)
    table = pooling_grid_table(enc, pairs, grid)
    # 4 token poolings x (2 combines x n_layers poolings, less the duplicate one-layer concat)
    assert table.size == 4 * (2 * enc.n_layers - 1) == len(grid) - 4


def test_most_frequent_tokens_counts_real_tokenisation(tiny_bert_dir):
    from transformers import AutoTokenizer

    from bertflow_mini.chapters.puzzle import most_frequent_tokens

    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)  # bert-base-uncased's vocabulary
    sentences = ["the cat and the dog", "the bird", "a dog"]
    top = most_frequent_tokens(tok, sentences, 4)
    # [CLS] and [SEP] 3 times each, "the" 3 times, then "dog" twice: ties broken by the smaller id
    expected = sorted(
        [tok.cls_token_id, tok.sep_token_id, tok.convert_tokens_to_ids("the")]
    )
    assert (
        top[:3].tolist() == expected and tok.convert_ids_to_tokens(int(top[3])) == "dog"
    )
    assert len(most_frequent_tokens(tok, sentences, 0)) == 0
    with pytest.raises(ValueError):
        most_frequent_tokens(tok, sentences, -1)


def test_mean_pool_dropping_against_a_hand_computed_mean(tiny_bert_dir, monkeypatch):
    import torch

    from bertflow_mini.chapters.puzzle import mean_pool_dropping
    from bertflow_mini.encoders.encoder import encode
    from bertflow_mini.encoders.names import load_encoder

    monkeypatch.setenv("BERTFLOW_MODELS", str(tiny_bert_dir.parent))
    enc = load_encoder("tiny-bert", device="cpu")
    sentences = ["A man plays a guitar.", "A dog runs in the park today.", "It rains."]
    tok = enc.tokenizer
    drop = [tok.cls_token_id, tok.sep_token_id, tok.convert_tokens_to_ids("a")]
    (full, without), empty = mean_pool_dropping(
        enc, sentences, [[], drop], batch_size=2
    )
    # nothing dropped: exactly the package's last-avg pooling (a different code path)
    np.testing.assert_allclose(
        full, encode(enc, sentences, "last-avg", cache=False, progress=False), atol=1e-5
    )
    first_last = mean_pool_dropping(enc, sentences, [[]], layers=(1, -1))[0][0]
    np.testing.assert_allclose(
        first_last,
        encode(enc, sentences, "first-last-avg", cache=False, progress=False),
        atol=1e-5,
    )
    # by hand, one sentence at a time, no padding: the mean of the kept positions only
    for n, s in enumerate(sentences):
        ids = tok(s, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            h = enc.model(input_ids=ids).last_hidden_state[0].numpy()
        keep = ~np.isin(ids[0].numpy(), drop)
        np.testing.assert_allclose(without[n], h[keep].mean(0), atol=1e-5)
    assert empty.tolist() == [0, 0]
    # a sentence made only of dropped tokens keeps its full mean, and is counted
    only = sorted(set(tok("a a")["input_ids"]))
    (v,), (n_empty,) = mean_pool_dropping(enc, ["a a"], [only])
    np.testing.assert_allclose(
        v, mean_pool_dropping(enc, ["a a"], [[]])[0][0], atol=1e-6
    )
    assert n_empty == 1
    with pytest.raises(ValueError):
        mean_pool_dropping(enc, "one string", [[]])


def test_cosine_by_stage_against_vectors_pooled_by_hand(tiny_bert_dir, monkeypatch):
    import torch

    from bertflow_mini.chapters.puzzle import STAGES, cosine_by_stage
    from bertflow_mini.encoders.encoder import Encoder, encode
    from bertflow_mini.encoders.names import load_encoder
    from bertflow_mini.evaluation.sts import cosine_scores

    monkeypatch.setenv("BERTFLOW_MODELS", str(tiny_bert_dir.parent))
    enc = load_encoder("tiny-bert", device="cpu")
    left = ["A man plays a guitar.", "A dog runs in the park today.", "It rains."]
    right = ["It rains.", "A woman is slicing an onion.", "A man plays a guitar."]
    emb = enc.model.embeddings
    before = {k: v.clone() for k, v in enc.model.state_dict().items()}

    def by_hand(sentence: str, zero: tuple[str, ...]) -> dict[str, np.ndarray]:
        """One sentence, no padding: each stage's mean over its tokens, from the tables."""
        ids = enc.tokenizer(sentence, return_tensors="pt")["input_ids"][0]
        word = emb.word_embeddings.weight[ids]
        pos = emb.position_embeddings.weight[: len(ids)]
        typ = emb.token_type_embeddings.weight[0].expand_as(word)
        summed = (
            word
            + (0 if "position" in zero else pos)
            + (0 if "token type" in zero else typ)
        )
        normed = torch.nn.functional.layer_norm(
            summed,
            summed.shape[-1:],
            emb.LayerNorm.weight,
            emb.LayerNorm.bias,
            emb.LayerNorm.eps,
        )
        return {"word vectors": word.mean(0), "+ position + token type": summed.mean(0),
                "after LayerNorm": normed.mean(0)}  # fmt: skip

    for zero in [(), ("token type",), ("position", "token type")]:
        got = cosine_by_stage(enc, left, right, zero=zero, batch_size=2)
        assert list(got) == list(STAGES)
        with torch.no_grad():
            hand = [[by_hand(s, zero) for s in side] for side in (left, right)]
        for stage in STAGES[:3]:
            a, b = (np.stack([h[stage].numpy() for h in side]) for side in hand)
            assert got[stage] == pytest.approx(cosine_scores(a, b).mean(), abs=1e-5)
        # nothing added to the word vectors
        if "position" in zero and "token type" in zero:
            assert got["+ position + token type"] == pytest.approx(
                got["word vectors"], abs=1e-6
            )
        # the weights are back as they were
        after = enc.model.state_dict()
        assert all(torch.equal(before[k], after[k]) for k in before)
    # nothing zeroed: the last stage is the package's own last-avg pooling (another code path)
    a, b = (
        encode(enc, side, "last-avg", cache=False, progress=False)
        for side in (left, right)
    )
    assert cosine_by_stage(enc, left, right)["last layer"] == pytest.approx(
        cosine_scores(a, b).mean(), abs=1e-5
    )

    # weights restored even when the forward pass fails
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(enc.model, "forward", broken)
    with pytest.raises(RuntimeError):
        cosine_by_stage(enc, left, right, zero=("position",))
    assert torch.equal(
        emb.position_embeddings.weight, before["embeddings.position_embeddings.weight"]
    )
    monkeypatch.undo()
    for bad in [
        dict(zero=("segment",)),
        dict(right=right[:2]),
        dict(left="one string"),
    ]:
        with pytest.raises(ValueError):
            cosine_by_stage(enc, **{"left": left, "right": right, **bad})
    glove = Encoder(name="glove", source="", fingerprint="", glove=object())
    with pytest.raises(ValueError):
        cosine_by_stage(glove, left, right)
