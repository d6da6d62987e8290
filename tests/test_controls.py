"""The no-semantics controls every gain is shown beside: plain word overlap, and any similarity scored."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from bertflow_mini.data import STSPairs
from bertflow_mini.evaluation.sts import score_similarities, word_overlap


def test_word_overlap_by_hand():
    got = word_overlap(["A man is playing a guitar.", "Dogs run!", "", "x"],
                       ["A man plays the guitar", "cats sleep", "", "X."])
    # {a, man, is, playing, guitar} vs {a, man, plays, the, guitar}: 3 shared of 7
    assert got.tolist() == pytest.approx([3 / 7, 0.0, 0.0, 1.0])


def test_score_similarities_against_scipy():
    rng = np.random.default_rng(0)
    gold, sims = rng.uniform(0, 5, 40), rng.normal(size=40)
    pairs = STSPairs("STS12", "test", ["s"] * 40, ["t"] * 40, gold, ["A"] * 25 + ["B"] * 15)
    r = score_similarities(pairs, sims)
    a, b = spearmanr(sims[:25], gold[:25]).statistic, spearmanr(sims[25:], gold[25:]).statistic
    assert r.wmean == pytest.approx(100 * (25 * a + 15 * b) / 40)
    assert r.all == pytest.approx(100 * spearmanr(sims, gold).statistic)
    with pytest.raises(ValueError, match="40 pairs"):
        score_similarities(pairs, sims[:-1])


def test_word_overlap_on_stsb_matches_the_issues_measurement():
    """Measured independently when the control was proposed: Jaccard of word sets, STS-B test, 56.5."""
    from conftest import SHARED, need

    need(SHARED / "data" / "sts")
    from bertflow_mini.evaluation.reproduce import word_overlap_row

    row = word_overlap_row(["STSB"])
    assert row.loc["word overlap (no model)", "STSB"] == pytest.approx(56.5, abs=0.05)
