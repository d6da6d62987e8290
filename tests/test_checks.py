"""The shared input checks (``_checks``) and the torch thread-count guard (``_threads``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bertflow_mini._checks import check_matrix, check_tensor
from bertflow_mini._threads import torch_threads


def test_check_matrix_passes_good_input_through():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    assert check_matrix(x) is x  # float input: no copy, dtype kept
    ints = check_matrix([[1, 2], [3, 4]])
    assert ints.dtype == np.float64 and ints.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    t = torch.ones(2, 3, requires_grad=True)
    np.testing.assert_array_equal(
        check_matrix(t, dim=3), np.ones((2, 3), dtype=np.float32)
    )


@pytest.mark.parametrize(
    "x,kwargs,message",
    [
        (np.zeros(3), {}, r"x must be a 2-D \(n, d\) matrix, got shape \(3,\)"),
        (np.zeros((2, 3, 1)), {}, "2-D"),
        (np.zeros((2, 3)), {"dim": 4}, r"must have 4 columns, got shape \(2, 3\)"),
        (np.zeros((2, 3)), {"min_rows": 3}, "needs at least 3 rows, got 2"),
        (np.array([["a", "b"]]), {}, "must be numeric"),
        (np.array([[True, False]]), {}, "must be numeric"),
        (
            np.array([[1.0, np.nan], [0.0, 1.0], [np.inf, -np.inf]]),
            {},
            r"NaN or infinity in 2 row\(s\)",
        ),
    ],
)
def test_check_matrix_rejects_each_bad_input_with_a_value_error(x, kwargs, message):
    with pytest.raises(ValueError, match=message):
        check_matrix(x, **kwargs)


def test_check_matrix_names_the_argument():
    with pytest.raises(ValueError, match="^embeddings must"):
        check_matrix(np.zeros(2), "embeddings")


def test_check_tensor():
    x = torch.zeros(4, 3)
    assert check_tensor(x, dim=3) is x
    for bad, message in [
        (np.zeros((4, 3)), "must be a torch.Tensor, got ndarray"),
        (torch.zeros(4), r"2-D \(n, d\) tensor, got shape \(4,\)"),
        (torch.zeros(4, 2), "must have 3 columns"),
        (torch.tensor([[0.0, float("nan"), 0.0]]), "NaN or infinity"),
    ]:
        with pytest.raises(ValueError, match=message):
            check_tensor(bad, dim=3)


def test_torch_threads_sets_and_restores_even_on_error():
    before = torch.get_num_threads()
    other = 1 if before != 1 else 2
    with torch_threads(other):
        assert torch.get_num_threads() == other
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError, match="boom"):
        with torch_threads(other):
            raise RuntimeError("boom")
    assert torch.get_num_threads() == before
    with torch_threads(None):  # None leaves the setting alone
        assert torch.get_num_threads() == before
