"""The MLM-head probe: the head recomputed from its parts against transformers' own, the bias-vs-
frequency statistics on hand-made biases, trigram contexts counted by hand, and masked logits
checked against a one-sentence-at-a-time run."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special
import torch
from conftest import tiny_mlm

from bertflow_mini.chapters.mlm_probe import (
    bias_vs_frequency,
    context_logits,
    frequent_contexts,
    head_by_hand,
    output_bias,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")
CLS, SEP, PAD, MASK = 1, 2, 0, 3  # ids inside the tiny model's 40-token vocabulary


@pytest.fixture(scope="module")
def model():
    """A tiny two-layer masked LM over a 40-token vocabulary."""
    return tiny_mlm(vocab=40, layers=2)


def test_head_by_hand_is_the_models_head(model):
    h = torch.randn(5, 16, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        h_tilde, logits = head_by_hand(model, h)
        want = model.cls(h)
    torch.testing.assert_close(logits, want, atol=1e-5, rtol=1e-5)
    assert h_tilde.shape == (5, 16)
    np.testing.assert_allclose(
        output_bias(model), model.cls.predictions.bias.detach().numpy(), atol=1e-7
    )


def test_bias_vs_frequency_on_hand_made_biases():
    counts = np.array([0, 1, 10, 100, 1000, 0])
    bias = np.where(counts > 0, 2.0 * np.log(np.maximum(counts, 1)) + 1.0, -7.0)
    out = bias_vs_frequency(bias, counts)
    assert out["slope"] == pytest.approx(2.0) and out["spearman"] == pytest.approx(1.0)
    assert out["pearson"] == pytest.approx(1.0) and out["tokens seen"] == 4
    assert out["mean b unseen"] == pytest.approx(-7.0)
    with pytest.raises(ValueError):
        bias_vs_frequency(bias[:3], counts)


SEQS = [
    np.array([CLS, 5, 7, 9, SEP]),
    np.array([CLS, 5, 8, 9, SEP]),
    np.array([CLS, 5, 7, 9, 6, SEP]),
    np.array([CLS, 6, SEP]),
]


def test_frequent_contexts_counted_by_hand():
    ctx = frequent_contexts(SEQS, vocab_size=40, n_contexts=1)
    # "5 _ 9" occurs 3 times, every other context less
    assert (ctx.left[0], ctx.right[0]) == (
        5,
        9,
    )
    assert ctx.counts[0, 7] == 2 and ctx.counts[0, 8] == 1 and ctx.counts.sum() == 3
    assert sorted(map(tuple, ctx.occurrences[0].tolist())) == [(0, 2), (1, 2), (2, 2)]
    logp = ctx.log_p_x_given_c()
    assert logp[0, 7] == pytest.approx(np.log(2 / 3)) and logp[0, 8] == pytest.approx(
        np.log(1 / 3)
    )
    assert logp[0, 5] == -np.inf and ctx.log_p_x_given_c(min_count=2)[0, 8] == -np.inf
    # [CLS] and [SEP] are never the middle token
    every = frequent_contexts(SEQS, vocab_size=40, n_contexts=100)
    assert every.counts[:, [CLS, SEP]].sum() == 0
    assert every.counts.sum() == sum(len(s) - 2 for s in SEQS)


def test_context_logits_match_one_sentence_at_a_time(model):
    seqs = [np.array([CLS, 5, 7, 9, SEP]), np.array([CLS, 5, 8, 9, 11, 12, SEP])]
    ctx = frequent_contexts(seqs, vocab_size=40, n_contexts=1)
    got = context_logits(
        model,
        seqs,
        ctx,
        mask_id=MASK,
        pad_id=PAD,
        special_ids=[PAD],
        per_context=8,
        batch_size=2,
    )
    assert got.n_occurrences == 2
    rows = []
    with torch.no_grad():
        for s in seqs:  # alone: no padding at all
            ids = torch.tensor(s).clone()
            ids[2] = MASK
            rows.append(model(input_ids=ids[None]).logits[0, 2].double().numpy())
    np.testing.assert_allclose(got.mean_logits[0], np.mean(rows, axis=0), atol=1e-4)
    mix = scipy.special.logsumexp(
        [scipy.special.log_softmax(r) for r in rows], axis=0
    ) - np.log(2)
    np.testing.assert_allclose(got.log_mixture[0], mix, atol=1e-4)
    # h at the [MASK] against the sentence's mean vector, and against the other sentence's
    h, pooled, rest = [], [], []
    with torch.no_grad():
        for s in seqs:
            ids = torch.tensor(s).clone()
            ids[2] = MASK
            hidden = model.bert(input_ids=ids[None]).last_hidden_state[0]
            h.append(hidden[2].numpy())
            pooled.append(hidden.mean(0).numpy())
            rest.append(torch.cat([hidden[:2], hidden[3:]]).mean(0).numpy())
    cos = lambda a, b: float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))  # noqa: E731
    assert got.cos_mask_vs_pooled == pytest.approx(
        (cos(h[0], pooled[0]) + cos(h[1], pooled[1])) / 2, abs=1e-5
    )
    assert got.cos_mask_vs_other == pytest.approx(
        (cos(h[0], pooled[1]) + cos(h[1], pooled[0])) / 2, abs=1e-5
    )
    # the [MASK] (position 2) left out of its own sentence's mean
    assert got.cos_mask_vs_rest == pytest.approx(
        (cos(h[0], rest[0]) + cos(h[1], rest[1])) / 2, abs=1e-5
    )
    # and the other sentence's mean without its own [MASK]: the like-for-like baseline
    assert got.cos_mask_vs_other_rest == pytest.approx(
        (cos(h[0], rest[1]) + cos(h[1], rest[0])) / 2, abs=1e-5
    )
    # the per-sentence cosines behind the means, in job order (one job per sentence here)
    order = [
        int(n) for n, _ in ctx.occurrences[0][np.random.default_rng(0).permutation(2)]
    ]
    want_each = {
        "pooled": [cos(h[n], pooled[n]) for n in order],
        "other": [cos(h[n], pooled[1 - n]) for n in order],
        "rest": [cos(h[n], rest[n]) for n in order],
        "other rest": [cos(h[n], rest[1 - n]) for n in order],
    }
    for key, want in want_each.items():
        np.testing.assert_allclose(got.cos_each[key], want, atol=1e-5)


def test_training_sequences_are_cached_and_equal_a_fresh_tokenisation(monkeypatch):
    from bertflow_mini.chapters import mlm_probe
    from bertflow_mini.data import corpus
    from bertflow_mini.encoders import pretrain
    from bertflow_mini.encoders.mlm import tokenize

    sentences = [f"sentence number {i} about a dog." for i in range(60)] + ["Hi."]
    monkeypatch.setattr(
        corpus, "corpus_sentences", lambda name, root=None: list(sentences)
    )
    # any recipe: the cache is keyed by its hash
    recipe = pretrain.with_overrides(steps=7)
    first = mlm_probe.training_sequences(recipe)
    train, held = corpus.split_held_out(sentences, recipe.held_out)
    want = tokenize(train, pretrain.load_tokenizer(), recipe.max_length).seqs
    assert len(first) == len(train) and all((a == b).all() for a, b in zip(first, want))
    monkeypatch.setattr(
        corpus, "corpus_sentences", lambda *a, **k: pytest.fail("not cached")
    )
    again = mlm_probe.training_sequences(recipe)
    assert all((a == b).all() for a, b in zip(again, first)) and len(again) == len(
        first
    )


def test_corpus_token_counts_against_a_counter():
    from collections import Counter

    from bertflow_mini.chapters.mlm_probe import corpus_token_counts

    seqs = [
        np.array([101, 7, 7, 9, 102]),
        np.array([101, 9, 102]),
        np.array([], dtype=np.int64),
    ]
    counts = corpus_token_counts(seqs, 200, special_ids=[101, 102, 0])
    expected = Counter(int(t) for s in seqs for t in s if t not in (101, 102, 0))
    assert counts.shape == (200,) and counts.sum() == sum(expected.values())
    assert {int(i): int(counts[i]) for i in np.flatnonzero(counts)} == dict(expected)
    with pytest.raises(ValueError):
        corpus_token_counts([np.array([5, 300])], 200, special_ids=[])


def test_all_masked_evaluation_hides_every_target(model):
    from bertflow_mini.encoders.mlm import IGNORE, MLMData, evaluate_mlm, mask_tokens

    rng = np.random.default_rng(0)
    seqs = [
        np.concatenate([[CLS], rng.integers(5, 40, size=12), [SEP]]) for _ in range(6)
    ]
    data = MLMData(
        seqs, pad_id=PAD, mask_id=MASK, special_ids=(PAD, CLS, SEP, MASK), vocab_size=40
    )
    got = evaluate_mlm(model, data, batch_size=6, seed=3, all_masked=True)
    # by hand: the same draw of targets, every one of them [MASK]ed, scored by the full model
    b = data.batch(range(6))
    _, labels = mask_tokens(
        b.ids,
        b.special,
        mask_id=MASK,
        vocab_size=40,
        gen=torch.Generator().manual_seed(3),
    )
    chosen = labels != IGNORE
    with torch.no_grad():
        logits = model(
            input_ids=b.ids.masked_fill(chosen, MASK), attention_mask=b.attention
        ).logits
    want = torch.nn.functional.cross_entropy(logits[chosen], labels[chosen]).item()
    assert got == pytest.approx(want, abs=1e-5)
    assert evaluate_mlm(model, data, batch_size=6, seed=3) != pytest.approx(
        got, abs=1e-5
    )


def test_locate_contexts_counts_the_same_contexts_in_other_sequences():
    from bertflow_mini.chapters.mlm_probe import locate_contexts

    ctx = frequent_contexts(SEQS, vocab_size=40, n_contexts=3)
    other = [
        np.array([CLS, 5, 8, 9, SEP]),
        np.array([CLS, 4, 4, 4, SEP]),
        np.array([CLS, 5, 7, 9, 5, 6, 9, SEP]),
    ]
    got = locate_contexts(other, ctx)
    assert (got.left == ctx.left).all() and (got.right == ctx.right).all()
    for k, (lft, rgt) in enumerate(zip(ctx.left, ctx.right)):  # brute force
        where = [
            (n, p)
            for n, s in enumerate(other)
            for p in range(1, len(s) - 1)
            if (s[p - 1], s[p + 1]) == (lft, rgt)
        ]
        assert sorted(map(tuple, got.occurrences[k].tolist())) == where
        want = np.bincount([other[n][p] for n, p in where], minlength=40)
        assert (got.counts[k] == want).all()
    assert got.counts.sum() < sum(len(s) - 2 for s in other)  # "4 _ 4" is not a context


def test_held_out_sequences_drop_what_tokenises_like_a_training_sentence(monkeypatch):
    from bertflow_mini.chapters import mlm_probe
    from bertflow_mini.data import corpus
    from bertflow_mini.encoders import pretrain
    from bertflow_mini.encoders.mlm import tokenize

    recipe = pretrain.with_overrides(held_out=0.5, steps=5)
    sentences = [f"a sentence numbered {i} about a cat." for i in range(40)]
    _, held = corpus.split_held_out(sentences, recipe.held_out)
    twin = next(  # the same words as a held-out sentence, in another case, in training
        v
        for h in held
        for v in (h.upper(), h.capitalize(), h.title())
        if not corpus.is_held_out(v, recipe.held_out)
    )
    copied = next(h for h in held if twin.lower() == h)
    monkeypatch.setattr(
        corpus, "corpus_sentences", lambda name, root=None: [*sentences, twin]
    )
    got, dropped = mlm_probe.held_out_sequences(recipe)
    keep = [h for h in held if h != copied]
    want = tokenize(keep, pretrain.load_tokenizer(), recipe.max_length).seqs
    assert dropped == 1 and len(got) == len(keep) == len(held) - 1
    assert all((a == b).all() for a, b in zip(got, want))


def test_model_token_counts_says_where_its_counts_come_from(model, monkeypatch):
    from bertflow_mini.chapters import mlm_probe

    class Tok:
        """A tokenizer's two attributes the counts need."""

        all_special_ids = [CLS, SEP, PAD, MASK]

        def __init__(self, size: int) -> None:
            self.size = size

        def __len__(self) -> int:
            return self.size

    seqs = [np.array([CLS, 7, 7, 9, SEP]), np.array([CLS, 9, SEP])]
    tokenizer = Tok(40)
    counts, source = mlm_probe.model_token_counts(
        "bert-base-uncased", model, seqs, tokenizer
    )
    assert counts[7] == 2 and counts[9] == 2 and counts[CLS] == 0 and counts.sum() == 4
    assert "book's corpus" in source and "bert-base-uncased" in source

    # the book's model reads its own checkpoint's counts instead
    stored = np.arange(40)
    monkeypatch.setattr(mlm_probe, "checkpoint_token_counts", lambda name: stored)
    counts, source = mlm_probe.model_token_counts(
        "scratch-bert@50%", model, seqs, tokenizer
    )
    assert counts is stored and source == "scratch-bert@50%'s own training corpus"

    with pytest.raises(ValueError, match="no token counts"):
        mlm_probe.model_token_counts("bert-base-uncased", model, seqs, Tok(41))
