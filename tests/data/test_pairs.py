"""bertflow_mini.data.pairs: task names, splits, and the $BERTFLOW_MAX_PAIRS cap."""

from __future__ import annotations

import numpy as np
import pytest

from bertflow_mini.data import TASKS, STSPairs
from bertflow_mini.data.pairs import (
    MAX_PAIRS_ENV,
    canonical_task,
    capped,
    max_pairs,
    splits,
)


@pytest.mark.parametrize(
    "alias,name",
    [("STS-B", "STSB"), ("stsb", "STSB"), ("STSBenchmark", "STSB"), ("SICK", "SICK-R"),
     ("sickr", "SICK-R"), ("SICK-R", "SICK-R"), ("sts12", "STS12"), ("STS2016", "STS16"),
     ("sts-14", "STS14")],
)  # fmt: skip
def test_canonical_task(alias, name):
    assert canonical_task(alias) == name


def test_unknown_task_and_the_splits_of_each():
    with pytest.raises(ValueError, match="unknown task 'STS17'"):
        canonical_task("STS17")
    want = [("train", "dev", "test"), ("train", "trial", "test")] + [("test",)] * 5
    assert [splits(t) for t in TASKS] == want


def test_pairs_of_unequal_length_are_refused():
    with pytest.raises(ValueError, match="equally long"):
        STSPairs("STSB", "test", ["a"], ["b", "c"], np.zeros(1), ["test"])


@pytest.mark.parametrize("value", ["0", "-3", "ten", "2.5"])
def test_max_pairs_must_be_a_positive_integer(monkeypatch, value):
    monkeypatch.setenv(MAX_PAIRS_ENV, value)
    with pytest.raises(
        ValueError, match=f"BERTFLOW_MAX_PAIRS must be a positive integer.*{value!r}"
    ):
        max_pairs()


def test_max_pairs_unset_or_empty_keeps_everything(monkeypatch):
    assert max_pairs() is None
    monkeypatch.setenv(MAX_PAIRS_ENV, "")
    assert max_pairs() is None
    pairs = STSPairs(
        "STSB", "dev", ["a", "b"], ["c", "d"], np.array([1.0, 2.0]), ["dev"] * 2
    )
    assert capped(pairs) is pairs
    monkeypatch.setenv(MAX_PAIRS_ENV, "1")
    assert capped(pairs).sent2 == ["c"] and capped(pairs).scores.tolist() == [1.0]
