"""Mixing channels between couplings: a fixed permutation, or a learned LU-parameterised matrix."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from bertflow_mini.postprocess.flow.base import Flow, ValueAndLogdet


# ---------------------------------------------------------------------------------------------
# 2. Mixing channels between couplings: a fixed permutation, or a learned LU-parameterised matrix
# ---------------------------------------------------------------------------------------------
class Permutation(Flow):
    """``y = x[:, order]`` for a fixed ``order``. A permutation matrix has det ±1: logdet = 0."""

    order: torch.Tensor
    undo: torch.Tensor

    def __init__(self, order: torch.Tensor):
        super().__init__()
        self.dim = len(order)
        self.register_buffer("order", order.long())
        self.register_buffer("undo", torch.argsort(order))

    def forward(self, x: torch.Tensor) -> ValueAndLogdet:
        return x[:, self.order], x.new_zeros(x.shape[0])

    def inverse(self, z: torch.Tensor) -> ValueAndLogdet:
        return z[:, self.undo], z.new_zeros(z.shape[0])


class Reverse(Permutation):
    """Reverse the channel order: what the official code does (``permutation: true`` in its config)."""

    def __init__(self, dim: int):
        super().__init__(torch.arange(dim - 1, -1, -1))


class Shuffle(Permutation):
    """A random permutation, drawn once from torch's generator: what the paper's text says."""

    def __init__(self, dim: int):
        super().__init__(torch.randperm(dim))


class InvertibleLinear(Flow):
    """``y = W x`` with ``W = P · L · (U + diag(sign · exp(log_s)))`` (Glow's "invertible 1×1 conv").

    Starting from a random rotation, ``P`` (a permutation) and ``sign`` are frozen; the unit
    lower-triangular ``L``, the strictly upper-triangular ``U`` and ``log_s`` are learned. The LU
    form makes the determinant free: det W = ±Π exp(log_s), so logdet = Σ log_s.
    """

    P: torch.Tensor
    sign_s: torch.Tensor
    lower_mask: torch.Tensor
    eye: torch.Tensor

    def __init__(self, dim: int):
        super().__init__()
        q, _ = torch.linalg.qr(torch.randn(dim, dim))
        p, lower, upper = torch.linalg.lu(q)
        s = torch.diagonal(upper)
        self.register_buffer("P", p)
        self.register_buffer("sign_s", torch.sign(s))
        self.register_buffer(
            "lower_mask", torch.tril(torch.ones(dim, dim), diagonal=-1)
        )
        self.register_buffer("eye", torch.eye(dim))
        self.L = nn.Parameter(lower * self.lower_mask)
        self.U = nn.Parameter(torch.triu(upper, diagonal=1))
        self.log_s = nn.Parameter(torch.log(s.abs()))

    def _factors(self) -> ValueAndLogdet:
        lower = self.L * self.lower_mask + self.eye
        upper = self.U * self.lower_mask.T + torch.diag(
            self.sign_s * torch.exp(self.log_s)
        )
        return lower, upper

    def weight(self) -> torch.Tensor:
        lower, upper = self._factors()
        return self.P @ lower @ upper

    def forward(self, x: torch.Tensor) -> ValueAndLogdet:
        return F.linear(x, self.weight()), self.log_s.sum().expand(x.shape[0])

    def inverse(self, z: torch.Tensor) -> ValueAndLogdet:
        # x = U⁻¹ L⁻¹ Pᵀ z, with two triangular solves instead of a general inverse.
        lower, upper = self._factors()
        h = torch.linalg.solve_triangular(
            lower, self.P.T @ z.T, upper=False, unitriangular=True
        )
        x = torch.linalg.solve_triangular(upper, h, upper=True).T
        return x, -self.log_s.sum().expand(z.shape[0])
