"""Coupling layers: transform one half of the channels conditioned on the other half."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from bertflow_mini.postprocess.flow.base import Flow, ValueAndLogdet
from bertflow_mini.postprocess.flow.normalization import ActNorm


# ---------------------------------------------------------------------------------------------
# 3. Coupling layers: transform one half of the channels conditioned on the other half
# ---------------------------------------------------------------------------------------------
class ZeroLinear(nn.Module):
    """A Linear layer that starts at exactly zero, with Glow's learned output scale ``exp(3·logs)``.

    Zero output at init makes every coupling start as the identity, so a deep flow starts as
    (ActNorm-ed) identity and trains stably.
    """

    def __init__(self, d_in: int, d_out: int, logscale_factor: float = 3.0):
        super().__init__()
        self.logscale_factor = logscale_factor
        self.linear = nn.Linear(d_in, d_out)
        nn.init.zeros_(self.linear.weight)
        nn.init.zeros_(self.linear.bias)
        self.logs = nn.Parameter(torch.zeros(d_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.linear(x) * torch.exp(self.logscale_factor * self.logs)
        return out


class CouplingNet(nn.Module):
    """The coupling network: (Linear → ActNorm → ReLU) × 2 → ZeroLinear, as in the official code.

    The ActNorms here only normalise hidden activations; their logdets are not part of the flow's
    logdet (this network is never inverted).
    """

    def __init__(self, d_in: int, d_out: int, width: int = 32):
        super().__init__()
        self.fc1 = nn.Linear(d_in, width, bias=False)  # ActNorm supplies the bias
        self.norm1 = ActNorm(width)
        self.fc2 = nn.Linear(width, width, bias=False)
        self.norm2 = ActNorm(width)
        self.out = ZeroLinear(width, d_out)
        for fc in (self.fc1, self.fc2):
            nn.init.normal_(fc.weight, std=0.05)  # the official initialiser

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.norm1(self.fc1(x))[0])
        h = F.relu(self.norm2(self.fc2(h))[0])
        out: torch.Tensor = self.out(h)
        return out


class Coupling(Flow):
    """Leave the first ⌈dim/2⌉ channels ``x₁`` alone; transform the rest with a function of ``x₁``."""

    outputs_per_channel = 1

    def __init__(self, dim: int, width: int = 32):
        super().__init__()
        if dim < 2:
            raise ValueError(f"a coupling layer needs at least 2 channels, got {dim}")
        self.split = (dim + 1) // 2
        self.net = CouplingNet(
            self.split, self.outputs_per_channel * (dim - self.split), width
        )

    def halves(self, x: torch.Tensor) -> ValueAndLogdet:
        return x[:, : self.split], x[:, self.split :]


class AdditiveCoupling(Coupling):
    """``y₁ = x₁,  y₂ = x₂ + t(x₁)`` (NICE; the BERT-flow choice). A shear: logdet = 0."""

    def forward(self, x: torch.Tensor) -> ValueAndLogdet:
        x1, x2 = self.halves(x)
        return torch.cat([x1, x2 + self.net(x1)], dim=1), x.new_zeros(x.shape[0])

    def inverse(self, z: torch.Tensor) -> ValueAndLogdet:
        z1, z2 = self.halves(z)
        return torch.cat([z1, z2 - self.net(z1)], dim=1), z.new_zeros(z.shape[0])


class AffineCoupling(Coupling):
    """``y₁ = x₁,  y₂ = (x₂ + shift(x₁)) · σ(raw(x₁) + 2)`` (Glow's affine coupling).

    The sigmoid keeps the scale in (0, 1) and starts it near σ(2) ≈ 0.88, which is far more stable
    than ``exp``. The Jacobian is triangular, so logdet = Σ log σ(raw + 2) over the second half.
    The network's outputs are interleaved: even columns are shifts, odd columns raw scales.
    """

    outputs_per_channel = 2

    def _shift_and_log_scale(self, x1: torch.Tensor) -> ValueAndLogdet:
        h = self.net(x1)
        return h[:, 0::2], F.logsigmoid(h[:, 1::2] + 2.0)

    def forward(self, x: torch.Tensor) -> ValueAndLogdet:
        x1, x2 = self.halves(x)
        shift, log_scale = self._shift_and_log_scale(x1)
        y2 = (x2 + shift) * torch.exp(log_scale)
        return torch.cat([x1, y2], dim=1), log_scale.sum(dim=1)

    def inverse(self, z: torch.Tensor) -> ValueAndLogdet:
        z1, z2 = self.halves(z)
        shift, log_scale = self._shift_and_log_scale(z1)
        return torch.cat(
            [z1, z2 * torch.exp(-log_scale) - shift], dim=1
        ), -log_scale.sum(dim=1)
