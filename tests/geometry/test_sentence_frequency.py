"""Tests for the sentence-level frequency axis of bertflow_mini.geometry.frequency (Chapter 3):
hand-made sentences whose answers are worked out on paper."""

from __future__ import annotations

import numpy as np
import pytest

from bertflow_mini.geometry.frequency import mean_log_frequency, sentence_frequency_axis

#: token 0 has no frequency (a word piece, say); tokens 1-4 have 10^-4 … 10^-1
FREQ = np.array([0.0, 1e-4, 1e-3, 1e-2, 1e-1])


def test_mean_log_frequency_by_hand():
    got = mean_log_frequency([[1, 3], [4, 0, 4], [0], []], FREQ)
    # (−4 − 2) / 2 = −3; token 0 left out, (−1 − 1) / 2 = −1; no known token: NaN
    np.testing.assert_allclose(got[:2], [-3.0, -1.0])
    assert np.isnan(got[2]) and np.isnan(got[3])


def test_a_top_direction_that_is_frequency_gives_one():
    ids = [[1], [2, 2], [3, 0], [4], [0]]  # mean log10 frequency −4, −3, −2, −1, none
    # the first coordinate is the frequency (variance 1.25), the second a smaller wobble
    X = np.array([[-4.0, 0.1], [-3.0, -0.1], [-2.0, 0.1], [-1.0, -0.1], [9.0, 9.0]])
    rho, used = sentence_frequency_axis(X, ids, FREQ)
    assert used == 4  # the last sentence, with no known word, is left out first
    assert rho == pytest.approx(1.0)


def test_a_top_direction_unrelated_to_frequency_by_hand():
    ids = [[1], [2], [3], [4]]  # mean log10 frequency −4, −3, −2, −1: ranks 1, 2, 3, 4
    X = np.array([[20.0, 0.0], [-20.0, 0.0], [-10.0, 0.0], [10.0, 0.0]])
    # coordinates ±(20, −20, −10, 10): ranks 4, 1, 2, 3 (or reversed); d = 3, −1, −1, −1,
    # Spearman ρ = 1 − 6·12 / (4·15) = −0.2
    rho, used = sentence_frequency_axis(X, ids, FREQ)
    assert used == 4 and rho == pytest.approx(0.2)


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError):
        mean_log_frequency([[1]], np.array([-1.0, 0.5]))
    with pytest.raises(ValueError):
        sentence_frequency_axis(np.zeros((3, 2)), [[1], [2]], FREQ)
