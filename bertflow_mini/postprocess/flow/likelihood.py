"""The exact log-likelihood of vectors under a fitted flow."""

from __future__ import annotations

import numpy as np
import torch

from bertflow_mini._checks import check_matrix
from bertflow_mini.postprocess.flow.glow import Glow


@torch.no_grad()
def log_likelihood(flow: Glow, X: np.ndarray | torch.Tensor) -> np.ndarray:
    """``log p(x)`` in nats of each row of ``X`` under ``flow`` (eval mode), computed on the flow's
    own device and dtype and returned as a float64 NumPy array: safe with a flow fitted on a GPU."""
    param = next(flow.parameters())
    x = torch.as_tensor(
        check_matrix(X, "X", dim=flow.dim), dtype=param.dtype, device=param.device
    )
    return flow.eval().log_prob(x).cpu().numpy().astype(np.float64)
