"""Chapter 1's added measurements against hand-computed cases: the split-half reliability of
any two-half estimate (the model's side of the PMI regression), the even/odd halves that
``context_logits`` keeps, and the second-order (PPMI-row) similarity of word neighbours."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.special
import torch
from conftest import tiny_mlm

from bertflow_mini.chapters.cooccurrence import (
    ppmi_row_cosines,
    second_order_percentile,
)
from bertflow_mini.chapters.mlm_probe import context_logits, frequent_contexts
from bertflow_mini.chapters.pmi import (
    counts_matrix,
    make_joint,
    sample_corpus,
    split_half_ceiling,
    split_half_reliability,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_split_half_reliability_by_hand():
    # 2 contexts × 3 tokens; cell (1, 2) missing in half b. Centre each context's row over
    # its usable cells, then Pearson's r of the stacked values, then Spearman-Brown.
    a = np.array([[0.0, 1.0, 2.0], [1.0, 3.0, 5.0]])
    b = np.array([[0.0, 2.0, 1.0], [2.0, 0.0, -np.inf]])
    # row 0: a centred (-1, 0, 1), b centred (-1, 1, 0); row 1: a (-1, 1), b (1, -1)
    ya = np.array([-1.0, 0.0, 1.0, -1.0, 1.0])
    yb = np.array([-1.0, 1.0, 0.0, 1.0, -1.0])
    r = ya @ yb / np.sqrt((ya @ ya) * (yb @ yb))  # = -1/4
    assert r == pytest.approx(-0.25)
    out = split_half_reliability(a, b)
    assert out["n_cells"] == 5
    assert out["r"] == pytest.approx(r)
    assert out["reliability"] == 0.0  # a negative r: no reliable part at all
    # the first row alone: r = 1/2, reliability 2(1/2)/(1 + 1/2) = 2/3
    only_first = np.array([[True] * 3, [False] * 3])
    one = split_half_reliability(a, b, cells=only_first)
    assert one["r"] == pytest.approx(0.5)
    assert one["reliability"] == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="shape"):
        split_half_reliability(a, b[:, :2])


def test_split_half_ceiling_is_the_reliability_of_the_halves_log_conditionals():
    J = make_joint(30, 60, rank=4, seed=0)
    a = counts_matrix(*sample_corpus(J, 40_000, seed=1), 30, 60)
    b = counts_matrix(*sample_corpus(J, 40_000, seed=2), 30, 60)
    with np.errstate(divide="ignore"):
        la, lb = (np.log(N / N.sum(axis=1, keepdims=True)) for N in (a, b))
    want = split_half_reliability(la, lb)
    got = split_half_ceiling(a, b)
    assert got["r"] == pytest.approx(want["r"], abs=1e-12)
    assert got["ceiling"] == pytest.approx(want["reliability"], abs=1e-12)


CLS, SEP, PAD, MASK = 1, 2, 0, 3


def test_context_logits_keeps_even_and_odd_occurrences_apart():
    model = tiny_mlm(vocab=40, layers=2)
    seqs = [
        np.array([CLS, 5, 7, 9, SEP]),
        np.array([CLS, 5, 8, 9, 11, SEP]),
        np.array([CLS, 5, 6, 9, SEP]),
    ]
    ctx = frequent_contexts(seqs, vocab_size=40, n_contexts=1)
    got = context_logits(
        model, seqs, ctx, mask_id=MASK, pad_id=PAD, special_ids=[PAD], per_context=8
    )
    logp = []
    with torch.no_grad():
        for s in seqs:
            ids = torch.tensor(s).clone()
            ids[2] = MASK
            row = model(input_ids=ids[None]).logits[0, 2].double().numpy()
            logp.append(scipy.special.log_softmax(row))
    # the order the occurrences were drawn in: the first and third go to half 0
    order = [
        int(n) for n, _ in ctx.occurrences[0][np.random.default_rng(0).permutation(3)]
    ]
    even = np.logaddexp(logp[order[0]], logp[order[2]]) - np.log(2)
    np.testing.assert_allclose(got.log_mixture_halves[0, 0], even, atol=1e-4)
    np.testing.assert_allclose(got.log_mixture_halves[1, 0], logp[order[1]], atol=1e-4)


def test_ppmi_row_cosines_and_percentiles_by_hand():
    # words a, b keep the same company (both only beside c); d is beside e only
    counts = np.array(
        [
            [0, 0, 4, 0, 0],
            [0, 0, 4, 0, 0],
            [4, 4, 0, 1, 0],
            [0, 0, 1, 0, 3],
            [0, 0, 0, 3, 0],
        ],
        dtype=float,
    )
    S = ppmi_row_cosines(counts)
    # rows a and b are identical (one positive PMI, at c): cosine 1; a and d share nothing
    assert S[0, 1] == pytest.approx(1.0)
    assert S[0, 3] == pytest.approx(0.0)
    np.testing.assert_allclose(S, S.T)
    vocab = ["a", "b", "c", "d", "e"]
    table = pd.DataFrame({"word": ["a", "a"], "neighbour": ["b", "d"]})
    pct = second_order_percentile(counts, vocab, table)
    # a's other candidates besides the neighbour: 3 words; b beats all three (c, d, e have
    # cosine 0 with a: c's row has its PPMI at a, b and d, a's only at c) → 1; d beats none → 0
    assert pct[0] == pytest.approx(1.0)
    assert pct[1] == pytest.approx(0.0)
