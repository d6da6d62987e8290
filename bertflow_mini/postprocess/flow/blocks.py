"""The blocks of the flow, each a :class:`Flow`: ActNorm, the channel mixings (a fixed permutation
or a learned LU matrix) and the couplings."""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

# ---------------------------------------------------------------------------------------------
# The contract every block keeps: ``forward(x) -> (z, logdet)``, ``inverse(z) -> (x, logdet)``
# ---------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------
# ActNorm: a per-channel affine map, initialised from data
# ---------------------------------------------------------------------------------------------
class ActNorm(Flow):
    """``y = (x + b) · exp(logscale_factor · logs)`` per channel (Kingma & Dhariwal 2018).

    The first batch seen in training sets ``b`` and ``logs`` so that batch has zero mean and unit
    variance per channel ("data-dependent init"); afterwards they are ordinary parameters. The
    stored ``logs`` is multiplied by ``logscale_factor`` (3 in Glow and BERT-flow) before use, which
    lets Adam move the effective log-scale three times faster.

    ``dead_tol``: a channel whose std is below ``dead_tol`` × the largest channel std is taken as
    constant and centred, not scaled (our choice, see :meth:`initialize`); ``dead_tol=0`` is the
    official rule, scale ``1/(std + 1e-6)`` for every channel.

    logdet = Σ_channels logscale_factor · logs   (the same for every sample)
    """

    initialized: torch.Tensor

    def __init__(self, dim: int, logscale_factor: float = 3.0, dead_tol: float = 1e-4):
        super().__init__()
        if dead_tol < 0:
            raise ValueError(f"dead_tol must be >= 0, got {dead_tol}")
        self.logscale_factor = logscale_factor
        self.dead_tol = dead_tol
        self.b = nn.Parameter(torch.zeros(dim))
        self.logs = nn.Parameter(torch.zeros(dim))
        # A buffer, so a saved/loaded flow remembers that it was initialised and never re-inits.
        self.register_buffer("initialized", torch.tensor(False))
        # Python mirror of `initialized`: skips a tensor→bool check per call
        self._ready = False

    @torch.no_grad()
    def initialize(self, x: torch.Tensor) -> None:
        """Set ``b`` and ``logs`` so that ``forward(x)`` has zero mean and unit variance per channel.

        With the official scale 1/(std + 1e-6) a (numerically) constant channel is multiplied by up
        to 10⁶ (all-MiniLM-L6-v2's last-layer average has three such channels, std ≈ 1e-32, 1e-32,
        2e-9): rounding noise becomes a unit-variance feature, and each such factor adds log 10⁶
        nats to log p(x) without modelling anything — the whole of the likelihood gap between
        this flow and normflows' on those vectors (the flow's speed benchmark compares the two).
        """
        mean = x.mean(dim=0)
        # biased variance, as in the official Glow code
        std = (x - mean).pow(2).mean(dim=0).sqrt()
        dead = std < self.dead_tol * std.max()
        log_scale = torch.where(dead, torch.zeros_like(std), -torch.log(std + 1e-6))
        self.b.copy_(-mean)
        self.logs.copy_(log_scale / self.logscale_factor)
        self.initialized.fill_(True)
        self._ready = True

    # keep the Python mirror in sync on load
    def _load_from_state_dict(self, *args: Any, **kwargs: Any) -> None:
        super()._load_from_state_dict(*args, **kwargs)
        self._ready = bool(self.initialized)

    def _log_scale(self, x: torch.Tensor) -> torch.Tensor:
        if not self._ready:
            if bool(self.initialized):
                self._ready = True
            elif self.training:
                self.initialize(x)
        return self.logscale_factor * self.logs

    def forward(self, x: torch.Tensor) -> ValueAndLogdet:
        log_scale = self._log_scale(x)
        return (x + self.b) * torch.exp(log_scale), log_scale.sum().expand(x.shape[0])

    def inverse(self, z: torch.Tensor) -> ValueAndLogdet:
        log_scale = self.logscale_factor * self.logs
        return z * torch.exp(-log_scale) - self.b, -log_scale.sum().expand(z.shape[0])


# ---------------------------------------------------------------------------------------------
# Mixing channels between couplings: a fixed permutation, or a learned LU-parameterised matrix
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


# ---------------------------------------------------------------------------------------------
# Coupling layers: transform one half of the channels conditioned on the other half
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
