"""WordNet synonym swaps: the synset line format by hand, the real WordNet's counts, and the swap
rules (eligibility, capitals, the frequency gap)."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import DATA_DIR, need

from bertflow_mini.chapters.synonyms import (
    Swap,
    parse_synset_line,
    synonym_map,
    synonym_swaps,
    wordnet_synsets,
)


def test_parse_synset_line_by_hand():
    line = ("00002312 00 a 02 abaxial 0 dorsal(a) 4 002 ;c 06037666 n 0000 ! 00002527 a 0101 "
            "| facing away from the axis")
    assert parse_synset_line(line) == ["abaxial", "dorsal"]
    hexa = "00000001 00 n 0a " + " ".join(f"w{i} 0" for i in range(10)) + " 000 | many"
    assert parse_synset_line(hexa) == [f"w{i}" for i in range(10)]  # w_cnt is hexadecimal
    with pytest.raises(ValueError, match="not a synset"):
        parse_synset_line("garbage | x")


def test_the_real_wordnet_has_its_117659_synsets():
    need(DATA_DIR / "wordnet")
    synsets = wordnet_synsets(DATA_DIR)
    assert len(synsets) == 117_659  # WordNet 3.0: 82,115 + 13,767 + 18,156 + 3,621
    assert any({"car", "automobile"} <= set(s) for s in synsets)


def test_synonym_map_keeps_in_vocabulary_single_words():
    m = synonym_map([["car", "automobile", "motor_car"], ["car", "railcar"], ["big"]],
                    {"car", "automobile", "railcar", "big"})
    assert m == {"automobile": ["car"], "car": ["automobile", "railcar"], "railcar": ["car"]}


def test_synonym_swaps_rules():
    freq = {"girl": 1e-4, "miss": 1e-6, "cat": 1e-4, "in": 1e-2, "inch": 1e-5}.get
    f = lambda w: freq(w) or 0.0
    syn = {"girl": ["miss"], "in": ["inch"], "cat": ["kat"]}
    swaps = synonym_swaps(["Girl in a hat.", "A cat.", "Nothing here."], syn, f)
    assert swaps == [Swap("Girl in a hat.", "Miss in a hat.", "girl", "miss", pytest.approx(-2.0))]
    # "in" is too frequent, "cat"'s only synonym has no frequency, the third has no candidate
    many = synonym_swaps(["a girl and a girl"] * 50, syn, f, seed=1)
    assert {s.swapped for s in many} == {"a miss and a girl", "a girl and a miss"}
    assert all(np.isclose(s.gap, -2.0) for s in many)
