"""WordNet synonym swaps: the synset line format by hand, the real WordNet's counts, and the swap
rules (eligibility, capitals, the frequency gap)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import DATA_DIR, need

from bertflow_mini.chapters.synonyms import (
    CLEAN_SYNONYMS,
    Swap,
    clean_synonym_map,
    gap_correlation,
    pair_labels,
    parse_synset_line,
    spearman_half_width,
    synonym_map,
    synonym_swaps,
    wordnet_synsets,
)


def test_parse_synset_line_by_hand():
    line = (
        "00002312 00 a 02 abaxial 0 dorsal(a) 4 002 ;c 06037666 n 0000 ! 00002527 a 0101 "
        "| facing away from the axis"
    )
    assert parse_synset_line(line) == ["abaxial", "dorsal"]
    hexa = "00000001 00 n 0a " + " ".join(f"w{i} 0" for i in range(10)) + " 000 | many"
    # w_cnt is hexadecimal
    assert parse_synset_line(hexa) == [f"w{i}" for i in range(10)]
    with pytest.raises(ValueError, match="not a synset"):
        parse_synset_line("garbage | x")


def test_the_real_wordnet_has_its_117659_synsets():
    need(DATA_DIR / "wordnet")
    synsets = wordnet_synsets(DATA_DIR)
    assert len(synsets) == 117_659  # WordNet 3.0: 82,115 + 13,767 + 18,156 + 3,621
    assert any({"car", "automobile"} <= set(s) for s in synsets)


def test_synonym_map_keeps_in_vocabulary_single_words():
    m = synonym_map(
        [["car", "automobile", "motor_car"], ["car", "railcar"], ["big"]],
        {"car", "automobile", "railcar", "big"},
    )
    assert m == {
        "automobile": ["car"],
        "car": ["automobile", "railcar"],
        "railcar": ["car"],
    }


def test_synonym_swaps_rules():
    freq = {"girl": 1e-4, "miss": 1e-6, "cat": 1e-4, "in": 1e-2, "inch": 1e-5}.get

    def f(w):
        return freq(w) or 0.0

    syn = {"girl": ["miss"], "in": ["inch"], "cat": ["kat"]}
    swaps = synonym_swaps(["Girl in a hat.", "A cat.", "Nothing here."], syn, f)
    assert swaps == [
        Swap("Girl in a hat.", "Miss in a hat.", "girl", "miss", pytest.approx(-2.0))
    ]
    # "in" is too frequent, "cat"'s only synonym has no frequency, the third has no candidate
    many = synonym_swaps(["a girl and a girl"] * 50, syn, f, seed=1)
    assert {s.swapped for s in many} == {"a miss and a girl", "a girl and a miss"}
    assert all(np.isclose(s.gap, -2.0) for s in many)


def test_clean_synonyms_share_a_wordnet_synset():
    need(DATA_DIR / "wordnet")
    synsets = wordnet_synsets(DATA_DIR)
    lemmas = {w for s in synsets for w in s}
    base = [(a, b) for a, b in CLEAN_SYNONYMS if a in lemmas and b in lemmas]
    assert len(base) >= 20  # most pairs are base forms WordNet lists
    for a, b in base:
        if (a, b) in {("talking", "speaking"), ("jumping", "leaping")}:
            continue  # WordNet's nouns "talking"/"speaking"; the verbs talk/speak share a synset
        assert any(a in s and b in s for s in synsets), (a, b)


def test_clean_synonym_map_both_directions_inside_the_vocabulary():
    m = clean_synonym_map(
        {"car", "automobile", "big"}, pairs=[("car", "automobile"), ("big", "large")]
    )
    assert m == {"automobile": ["car"], "car": ["automobile"]}
    swaps = synonym_swaps(
        ["The car is red."],
        m,
        lambda w: {"car": 1e-4, "automobile": 1e-5}[w],
        max_frequency=1.0,
    )
    assert swaps[0].swapped == "The automobile is red." and swaps[
        0
    ].gap == pytest.approx(-1.0)


def test_an_article_follows_the_new_word():
    f = {"car": 1e-4, "automobile": 1e-5, "apple": 1e-4, "pear": 1e-5}.get
    syn = {"car": ["automobile"], "apple": ["pear"]}
    out = [
        s.swapped
        for s in synonym_swaps(
            ["A man drives a car.", "An apple.", "Banana car."], syn, f
        )
    ]
    assert out == ["A man drives an automobile.", "A pear.", "Banana automobile."]


def test_pair_labels_ignore_the_direction_of_a_swap():
    swaps = [
        Swap("a", "b", "car", "automobile", -1.5),
        Swap("b", "a", "automobile", "car", 1.5),
    ]
    assert list(pair_labels(swaps)) == ["automobile/car", "automobile/car"]


def test_spearman_half_width_is_fieller_hartley_pearson():
    assert spearman_half_width(103) == pytest.approx(1.96 * np.sqrt(1.06 / 100))
    with pytest.raises(ValueError, match="at least 4"):
        spearman_half_width(3)


def test_gap_correlation_counts_a_repeated_pair_once():
    rng = np.random.default_rng(0)
    gap, cos = rng.random(40), rng.random(40)
    single = gap_correlation(gap, cos, np.arange(40), n_resamples=300)
    # each pair's swap repeated 10 times, identically: the same evidence, ten times the rows
    many = gap_correlation(
        np.repeat(gap, 10),
        np.repeat(cos, 10),
        np.repeat(np.arange(40), 10),
        n_resamples=300,
    )
    assert many.n == 400 and many.pairs == single.pairs == 40
    assert many.rho == pytest.approx(single.rho) and single.pair_rho == pytest.approx(
        single.rho
    )
    # not √10 narrower
    assert (many.low, many.high) == pytest.approx((single.low, single.high))
    assert single.low < single.rho < single.high
    assert single.pair_half_width == pytest.approx(spearman_half_width(40))


def test_gap_correlation_sees_a_real_dependence_and_rejects_bad_input():
    gap = np.linspace(0, 2, 60)
    strong = gap_correlation(
        gap, -gap + 0.01 * np.sin(np.arange(60)), np.arange(60) // 2
    )
    assert strong.rho < -0.9 and strong.excludes_zero and strong.pairs == 30
    with pytest.raises(ValueError, match="one length"):
        gap_correlation(gap, gap[:-1], np.arange(60))
    with pytest.raises(ValueError, match="finite"):
        gap_correlation(np.r_[gap[:-1], np.nan], gap, np.arange(60))


def test_gap_correlation_gives_no_interval_below_four_word_pairs():
    gap = np.linspace(0, 2, 60)
    few = gap_correlation(gap, -gap, np.arange(60) % 3)  # 3 pairs: nothing to resample
    assert (few.pairs, few.n) == (3, 60) and few.rho == pytest.approx(-1.0)
    assert np.isnan([few.low, few.high, few.pair_rho, few.pair_half_width]).all()
    assert not few.excludes_zero
    assert np.isnan(gap_correlation(gap[:1], gap[:1], np.zeros(1)).rho)


def test_gap_correlation_change_counts_a_repeated_pair_once():
    from bertflow_mini.chapters.synonyms import gap_correlation_change

    rng = np.random.default_rng(1)
    gap = rng.random(40)
    before, after = rng.random(40), -gap + 0.3 * rng.random(40)
    change, low, high = gap_correlation_change(gap, before, after, np.arange(40))
    by_parts = (
        gap_correlation(gap, after, np.arange(40)).rho
        - gap_correlation(gap, before, np.arange(40)).rho
    )
    assert change == pytest.approx(by_parts) and low < change < high < 0
    # each pair's swap ten times: the same evidence, the same interval
    again = gap_correlation_change(
        *(np.repeat(v, 10) for v in (gap, before, after, np.arange(40)))
    )
    assert again == pytest.approx((change, low, high))
    # no change at all: a zero-width interval at 0
    assert gap_correlation_change(gap, before, before, np.arange(40)) == (0.0, 0.0, 0.0)
    assert np.isnan(gap_correlation_change(gap, before, after, np.arange(40) % 3)[1])


def test_clustered_se_is_the_plain_se_for_single_values_and_ignores_copies():
    from bertflow_mini.chapters.synonyms import clustered_se

    v = np.random.default_rng(2).random(30)
    plain = v.std(ddof=1) / np.sqrt(30)
    assert clustered_se(v, np.arange(30)) == pytest.approx(plain)
    # ten copies of each value in its own cluster: not √10 smaller
    assert clustered_se(
        np.repeat(v, 10), np.repeat(np.arange(30), 10)
    ) == pytest.approx(plain)
    with pytest.raises(ValueError, match="2 clusters"):
        clustered_se(v, np.zeros(30))


def test_gap_correlation_change_rejects_what_gap_correlation_rejects():
    from bertflow_mini.chapters.synonyms import gap_correlation_change

    gap = np.linspace(0, 2, 40)
    with pytest.raises(ValueError, match="before, after and pairs must be 1-D"):
        gap_correlation_change(gap, gap, gap[:-1], np.arange(40))
    with pytest.raises(ValueError, match="finite"):
        gap_correlation_change(gap, np.r_[gap[:-1], np.inf], gap, np.arange(40))
    with pytest.raises(ValueError, match="0 < level < 1"):
        gap_correlation_change(gap, gap, -gap, np.arange(40), level=1.5)
