"""Tests for bertflow_mini.geometry.token_geometry: a checkpoint's output layer, its cone measures, count groups,
the softmax inputs, and the share of uniformly negative directions."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats
import torch
from conftest import TOKENIZER_DIR, need, save_with_bert_tokenizer, tiny_mlm

from bertflow_mini.geometry import token_geometry as tg

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def layer_from(
    E: np.ndarray, bias: np.ndarray, counts: np.ndarray, special: list[int]
) -> tg.OutputLayer:
    mask = np.zeros(len(counts), dtype=bool)
    mask[special] = True
    return tg.OutputLayer(
        "hand", np.asarray(E, float), np.asarray(bias, float), np.asarray(counts), mask
    )


# ----------------------------------------------------------------------------- the output layer
def test_output_layer_reads_the_tied_decoder_and_bias():
    model = tiny_mlm(vocab=50)
    counts = np.arange(50) % 3  # 0, 1, 2, 0, 1, 2, …
    layer = tg.output_layer(model, counts, special_ids=[0, 3])
    np.testing.assert_array_equal(
        layer.embeddings, model.bert.embeddings.word_embeddings.weight.detach().double()
    )
    np.testing.assert_array_equal(
        layer.bias, model.cls.predictions.decoder.bias.detach().double()
    )
    assert layer.seen.sum() == (counts > 0).sum() and not layer.seen[[0, 3]].any()
    assert (
        layer.unseen.sum() == (counts == 0).sum() - 2 and not layer.unseen[[0, 3]].any()
    )
    assert not (layer.seen & layer.unseen).any()


def test_output_layer_rejects_untied_models_and_wrong_counts():
    with pytest.raises(ValueError, match="not tied"):
        tg.output_layer(tiny_mlm(vocab=50, tie=False), np.ones(50), [0])
    with pytest.raises(ValueError, match="one entry per token"):
        tg.output_layer(tiny_mlm(vocab=50), np.ones(49), [0])


def test_load_output_layer_reads_a_checkpoint_folder_with_its_counts(tmp_path):
    model = tiny_mlm()
    save_with_bert_tokenizer(model, tmp_path)
    counts = np.random.default_rng(0).integers(0, 3, size=30522)
    np.save(tmp_path / "token_counts.npy", counts)
    layer = tg.load_output_layer(str(tmp_path))
    np.testing.assert_array_equal(layer.counts, counts)
    np.testing.assert_allclose(
        layer.bias, model.cls.predictions.bias.detach().double().numpy()
    )
    assert set(np.flatnonzero(layer.special)) == {
        0,
        100,
        101,
        102,
        103,
    }  # [PAD] [UNK] [CLS] [SEP] [MASK]


def test_load_output_layer_estimates_counts_where_the_checkpoint_has_none(tmp_path):
    import wordfreq
    from transformers import AutoTokenizer

    save_with_bert_tokenizer(tiny_mlm(), tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(tmp_path)
    layer = tg.load_output_layer(str(tmp_path))  # no token_counts.npy
    assert layer.counts_from == tg.ESTIMATED
    ids = tokenizer.convert_tokens_to_ids(["the", "##ing", "[unused7]", "zygote"])
    from bertflow_mini.geometry.corpus_counts import BERT_CORPUS_WORDS

    expected = [
        round(wordfreq.word_frequency(w, "en") * BERT_CORPUS_WORDS)
        for w in ("the", "ing")
    ]
    assert layer.counts[ids[:2]].tolist() == expected and expected[0] > expected[1] > 0
    assert (
        layer.counts[ids[2]] == 0 and layer.unseen[ids[2]]
    )  # reserved, never in the corpus
    assert layer.counts[ids[0]] > layer.counts[ids[3]]


def test_checkpoint_step_reads_multiberts_names_and_controls():
    assert tg.checkpoint_step("google/multiberts-seed_0-step_20k") == 20_000
    assert tg.checkpoint_step("multiberts-seed_3-step_2000k") == 2_000_000
    assert tg.checkpoint_step("bert-base-uncased@0") == 0
    assert tg.checkpoint_step("bert-base-uncased") is None


# ----------------------------------------------------------------------------- measures
def test_top_singular_share_matches_an_svd_and_hand_cases():
    X = np.random.default_rng(0).normal(size=(200, 10)) + 3.0
    s2 = np.linalg.svd(X, compute_uv=False) ** 2
    assert tg.top_singular_share(X, 1) == pytest.approx(s2[0] / s2.sum(), rel=1e-10)
    assert tg.top_singular_share(X, 3) == pytest.approx(
        s2[:3].sum() / s2.sum(), rel=1e-10
    )
    assert tg.top_singular_share(
        np.outer(np.arange(1, 6), [1.0, -2.0, 0.5]), 1
    ) == pytest.approx(1.0)
    assert tg.top_singular_share(np.eye(4), 1) == pytest.approx(0.25)  # isotropic: k/d
    with pytest.raises(ValueError, match="k must be"):
        tg.top_singular_share(X, 11)


def test_geometry_leaves_out_special_tokens_and_splits_seen_from_unseen():
    rng = np.random.default_rng(0)
    E = rng.normal(size=(40, 6))
    E[0] = 1e6  # a special row that would dominate every measure if it were counted
    counts = np.r_[0, rng.integers(0, 20, size=39)]
    bias = rng.normal(size=40)
    layer = layer_from(E, bias, counts, special=[0])
    row = tg.cone_measures(layer)
    norms = np.linalg.norm(E, axis=1)
    seen, unseen = counts > 0, counts == 0
    unseen[0] = False
    assert row["norm seen"] == pytest.approx(norms[seen].mean())
    assert row["norm unseen"] == pytest.approx(norms[unseen].mean())
    assert row["bias unseen"] == pytest.approx(bias[unseen].mean())
    assert row["Spearman(count, norm)"] == pytest.approx(
        scipy.stats.spearmanr(counts[seen], norms[seen]).statistic
    )
    assert row["top-1 singular share"] == pytest.approx(tg.top_singular_share(E[1:]))
    assert (
        abs(row["mean cosine"]) < 0.1
    )  # Gaussian rows; the 1e6 row would make it ≈ 0.4 if kept
    table = tg.geometry_table({"a": layer, "b": layer})
    assert (
        list(table.index) == ["a", "b"]
        and table.loc["b", "norm seen"] == row["norm seen"]
    )


def test_count_groups_by_hand():
    E = np.array([[9.0, 9.0], [1, 0], [0, 2], [3, 0], [0, 4], [5, 0], [0, 6], [7, 0]])
    counts = np.array([0, 0, 0, 1, 1, 50, 50, 50])  # token 0 is special
    bias = np.arange(8.0)
    groups = tg.count_groups(
        layer_from(E, bias, counts, special=[0]), edges=(0, 1, 2, 10)
    )
    assert list(groups.index) == [
        "unseen (0)",
        "1",
        "≥ 10",
    ]  # the empty 2–9 group is left out
    assert groups["tokens"].tolist() == [2, 2, 3]
    np.testing.assert_allclose(groups["mean norm"], [1.5, 3.5, 6.0])
    # norms (1, 2), (3, 4), (5, 6, 7): sample sds √0.5, √0.5, 1 over √n
    np.testing.assert_allclose(
        groups["norm s.e."], [0.5, 0.5, 1 / np.sqrt(3)], rtol=1e-12
    )
    np.testing.assert_allclose(groups["mean bias"], [1.5, 3.5, 6.0])
    assert groups.loc["unseen (0)", "mean cosine within"] == pytest.approx(
        0.0
    )  # (1, 0) ⟂ (0, 2)
    with pytest.raises(ValueError, match="increasing"):
        tg.count_groups(layer_from(E, bias, counts, special=[0]), edges=(0, 10, 2))
    # named groups, and which rows are uniformly negative for the one context h = (−1, −1):
    # every row of positive coordinates is
    named = tg.count_groups(
        layer_from(E, bias, counts, special=[0]),
        edges=(0, 1, 10),
        labels=["none", "few", "many"],
        H=np.array([[-1.0, -1.0]]),
    )
    assert list(named.index) == ["none", "few", "many"]
    assert named["uniformly negative"].tolist() == [1.0, 1.0, 1.0]
    flipped = tg.count_groups(
        layer_from(E * [[1], [-1], [1], [1], [1], [-1], [1], [1]], bias, counts, [0]),
        edges=(0, 1, 10),
        H=np.array([[-1.0, -1.0]]),
    )
    assert flipped["uniformly negative"].tolist() == [0.5, 1.0, 2 / 3]
    with pytest.raises(ValueError, match="2 labels for 3 groups"):
        tg.count_groups(layer_from(E, bias, counts, [0]), (0, 1, 10), labels=["a", "b"])


def test_negative_direction_share_by_hand():
    H = np.array([[1.0, 0.0], [1.0, 1.0]])
    W = np.array([[-1.0, 0.0], [-1.0, 0.5], [0.0, -1.0], [-1.0, -1.0]])
    assert tg.negative_direction_share(W, H) == pytest.approx(
        0.75
    )  # not row 2: h₁·w = 0
    with pytest.raises(ValueError, match="width"):
        tg.negative_direction_share(W, np.ones((2, 3)))


# ----------------------------------------------------------------------------- softmax inputs
@pytest.fixture(scope="module")
def three_sentences():
    """(model, tokenizer, sentences): a tiny masked LM over bert-base-uncased's vocabulary, its
    tokenizer, and three sentences of different lengths (so the batch is padded)."""
    need(TOKENIZER_DIR)
    from transformers import AutoTokenizer

    sentences = [
        "a man plays the guitar .",
        "the cat sits",
        "dogs run in a green field today",
    ]
    return tiny_mlm(), AutoTokenizer.from_pretrained(TOKENIZER_DIR), sentences


def test_softmax_inputs_give_the_models_own_logits(three_sentences):
    model, tokenizer, sentences = three_sentences
    H = tg.softmax_inputs(model, tokenizer, sentences)
    batch = tokenizer(sentences, padding=True, return_tensors="pt")
    assert H.shape == (
        int(batch["attention_mask"].sum()),
        model.config.hidden_size,
    )  # one row per real token, padding left out
    with torch.no_grad():
        logits = model(**batch).logits[batch["attention_mask"].bool()].double().numpy()
    E = model.get_input_embeddings().weight.detach().double().numpy()
    b = model.cls.predictions.bias.detach().double().numpy()
    np.testing.assert_allclose(H @ E.T + b, logits, atol=1e-4)
    with pytest.raises(ValueError, match="at least one"):
        tg.softmax_inputs(model, tokenizer, [])


# ----------------------------------------------------------------------------- logit attribution
def _two_layers(seed: int = 0):
    rng = np.random.default_rng(seed)
    V, d = 12, 4
    counts = np.array([0, 5, 0, 3, 0, 9, 1, 0, 2, 0, 7, 4])
    before = layer_from(
        rng.normal(size=(V, d)), rng.normal(size=V), counts, special=[11]
    )
    after = layer_from(
        before.embeddings + rng.normal(size=(V, d)),
        before.bias + rng.normal(size=V),
        counts,
        [11],
    )
    return before, after, rng.normal(size=(7, d))


def test_logit_attribution_against_a_brute_force_softmax():
    before, after, H = _two_layers()
    table = tg.logit_attribution(H, before, after, chunk=3)
    un, se = after.unseen, after.seen

    def mean_logp(W, b):
        L = H @ W.T + b
        return (L - np.log(np.exp(L).sum(axis=1, keepdims=True)))[:, un].mean()

    W_e, b_b = after.embeddings.copy(), after.bias.copy()
    W_e[un], b_b[un] = before.embeddings[un], before.bias[un]
    full = mean_logp(after.embeddings, after.bias)
    assert table.loc["embedding", "log-probability (nats)"] == pytest.approx(
        full - mean_logp(W_e, after.bias)
    )
    assert table.loc["bias", "log-probability (nats)"] == pytest.approx(
        full - mean_logp(after.embeddings, b_b)
    )
    dW = after.embeddings - before.embeddings
    raw = np.mean([h @ dW[x] for h in H for x in np.flatnonzero(un)])
    assert table.loc["embedding", "raw logit change"] == pytest.approx(raw)
    db = after.bias - before.bias
    assert table.loc["bias", "relative to seen tokens"] == pytest.approx(
        db[un].mean() - db[se].mean()
    )


def test_logit_attribution_relative_column_ignores_a_shift_shared_by_all():
    before, _, H = _two_layers()
    shifted = tg.OutputLayer(
        "shifted",
        before.embeddings.copy(),
        before.bias + 2.5,
        before.counts,
        before.special,
    )
    table = tg.logit_attribution(H, before, shifted)
    assert table.loc["bias", "raw logit change"] == pytest.approx(2.5)
    assert table.loc["bias", "relative to seen tokens"] == pytest.approx(0, abs=1e-12)
    assert table.loc["embedding", "log-probability (nats)"] == pytest.approx(
        0, abs=1e-12
    )


# ----------------------------------------------------------------------------- shared offsets
def test_shared_offsets_split_every_logit_into_a_context_part_and_an_offset():
    before, _, H = _two_layers()
    offset = tg.shared_offsets(before, H)
    logits = H @ before.embeddings.T + before.bias
    centred = (H - H.mean(axis=0)) @ before.embeddings.T
    np.testing.assert_allclose(logits, centred + offset, atol=1e-12)


def test_offset_frequency_reads_an_offset_that_is_the_log_count():
    counts = np.array([0, 0, 1, 2, 4, 8, 16, 32, 3])
    d = 3
    h_bar = np.array([1.0, 0.0, 0.0])
    H = np.array([h_bar + [0, 1, 0], h_bar - [0, 1, 0]])  # mean h̄
    E = np.zeros((len(counts), d))
    E[:, 0] = np.log(np.maximum(counts, 1)) - 5.0 * (
        counts == 0
    )  # offset = log count, unseen −5
    layer = layer_from(E, np.zeros(len(counts)), counts, special=[8])
    stats = tg.offset_frequency(layer, H)
    assert stats["ρ(count, offset)"] == pytest.approx(1.0)
    assert stats["slope on log count"] == pytest.approx(1.0)
    assert stats["Pearson r"] == pytest.approx(1.0)
    assert stats["unseen − seen offset"] == pytest.approx(
        -5.0 - np.log([1, 2, 4, 8, 16, 32]).mean()
    )


# ----------------------------------------------------------------------------- common component
def test_repeat_share_by_hand():
    assert tg.repeat_share([1, 2, 3, 4]) == pytest.approx(0.25)
    assert tg.repeat_share([[7, 7], [7, 7]]) == pytest.approx(1.0)
    assert tg.repeat_share([1, 1, 2, 3]) == pytest.approx(0.5**2 + 2 * 0.25**2)
    with pytest.raises(ValueError, match="at least one"):
        tg.repeat_share([])


def test_repeat_share_predicts_the_common_part_of_random_token_vectors():
    rng = np.random.default_rng(0)
    ids = rng.choice(50, size=4000, p=np.r_[0.3, np.full(49, 0.7 / 49)])
    E = rng.normal(size=(50, 200))
    X = E[ids]
    mean = X.mean(axis=0)
    share = mean @ mean / (X * X).sum(axis=1).mean()
    assert share == pytest.approx(tg.repeat_share(ids), rel=0.15)


def test_common_component_by_stage_ends_at_the_softmax_inputs(three_sentences):
    model, tokenizer, sentences = three_sentences
    table = tg.common_component_by_stage(model, tokenizer, sentences)
    assert list(table.index) == [
        "word embeddings",
        "embedding block",
        "after layer 1",
        "head: dense + GELU",
        "softmax input h",
    ]
    H = tg.softmax_inputs(model, tokenizer, sentences)
    mean = H.mean(axis=0)
    assert table.loc["softmax input h", "‖mean x‖"] == pytest.approx(
        np.linalg.norm(mean), rel=1e-5
    )
    assert table.loc["softmax input h", "‖mean‖² / mean ‖x‖²"] == pytest.approx(
        mean @ mean / (H * H).sum(axis=1).mean(), rel=1e-5
    )
    assert (
        (table["‖mean‖² / mean ‖x‖²"] >= 0) & (table["‖mean‖² / mean ‖x‖²"] <= 1)
    ).all()
    with pytest.raises(ValueError, match="at least one"):
        tg.common_component_by_stage(model, tokenizer, [])
