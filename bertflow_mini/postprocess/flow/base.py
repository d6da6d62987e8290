"""The contract every block of the flow keeps: ``forward(x) -> (z, logdet)``, ``inverse(z) -> (x, logdet)``."""

from __future__ import annotations

import math

import torch
from torch import nn

LOG_2PI = math.log(2 * math.pi)
#: What every block's ``forward`` and ``inverse`` return: the mapped tensor and, per sample, the
#: log-determinant of the map's Jacobian.
ValueAndLogdet = tuple[torch.Tensor, torch.Tensor]


class Flow(nn.Module):
    """An invertible block: ``forward(x) -> (z, logdet)``, ``inverse(z) -> (x, logdet)``.

    ``logdet`` has one entry per sample: ``log|det ∂z/∂x|`` forward, ``log|det ∂x/∂z|`` inverse,
    so ``inverse(forward(x))`` returns ``x`` and minus the forward log-det.
    """

    def forward(self, x: torch.Tensor) -> ValueAndLogdet:
        raise NotImplementedError

    def inverse(self, z: torch.Tensor) -> ValueAndLogdet:
        raise NotImplementedError
