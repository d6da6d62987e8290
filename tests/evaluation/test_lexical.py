"""Edit distance by hand and against a brute-force recursion; Li et al.'s Table 6 gold row from the data."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from scipy.stats import spearmanr

from bertflow_mini.evaluation.lexical import (
    edit_distance,
    lexical_table,
    word_edit_distances,
)
from bertflow_mini.evaluation.published import LEXICAL_TABLE6


def _brute(a: tuple, b: tuple) -> int:
    """The textbook recursion, written independently of the dynamic programme under test."""

    @cache
    def d(i: int, j: int) -> int:
        if i == 0 or j == 0:
            return i + j
        return min(
            d(i - 1, j) + 1, d(i, j - 1) + 1, d(i - 1, j - 1) + (a[i - 1] != b[j - 1])
        )

    return d(len(a), len(b))


def test_edit_distance_by_hand():
    assert edit_distance("kitten", "sitting") == 3
    assert (
        edit_distance("the cat sat on the mat".split(), "a cat sat on a mat".split())
        == 2
    )
    assert edit_distance([], ["a", "b"]) == 2 and edit_distance(["a"], []) == 1
    assert edit_distance("abc", "abc") == 0


def test_edit_distance_against_the_recursion_on_random_lists():
    rng = np.random.default_rng(0)
    for _ in range(200):
        a = tuple(rng.integers(0, 3, rng.integers(0, 7)).tolist())
        b = tuple(rng.integers(0, 3, rng.integers(0, 7)).tolist())
        assert edit_distance(a, b) == _brute(a, b) == edit_distance(b, a)


def test_word_edit_distances_split_words_and_check_lengths():
    got = word_edit_distances(
        ["A man is playing a guitar.", "Dogs run!"], ["A man plays guitar.", "dogs run"]
    )
    # "is playing a" -> "plays"; case ignored, "!" is a token
    assert got.tolist() == [
        3,
        1,
    ]
    with pytest.raises(ValueError, match="equally long"):
        word_edit_distances(["a"], [])


def test_lexical_table_is_spearman_against_distance_and_gold():
    rng = np.random.default_rng(1)
    gold, dist = rng.uniform(0, 5, 50), rng.integers(0, 10, 50)
    sim = gold + rng.normal(size=50)
    table = lexical_table({"model": sim}, gold, dist)
    assert list(table.index) == ["gold similarity", "model"]
    assert table.loc["gold similarity", "gold similarity"] == pytest.approx(100.0)
    assert table.loc["model", "edit distance"] == pytest.approx(
        100 * spearmanr(sim, dist).statistic
    )


def test_the_gold_row_of_li_et_al_table6_is_reproduced_from_the_data():
    """The one cell of Table 6 that needs no model: gold score vs word edit distance on the STS-B
    validation pairs. Words (not characters) reproduce it; this pins the protocol and the transcription."""
    from conftest import SHARED, need

    need(SHARED / "data" / "sts")
    from bertflow_mini.data import load_sts

    dev = load_sts("STSB", "dev")
    rho = (
        100 * spearmanr(dev.scores, word_edit_distances(dev.sent1, dev.sent2)).statistic
    )
    assert len(dev) == 1500
    assert rho == pytest.approx(
        LEXICAL_TABLE6["gold similarity"]["edit distance"], abs=1.0
    )
