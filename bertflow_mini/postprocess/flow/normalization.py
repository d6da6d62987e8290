"""ActNorm: a per-channel affine map, initialised from data (Glow's normalisation layer)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from bertflow_mini.postprocess.flow.base import Flow, ValueAndLogdet


# ---------------------------------------------------------------------------------------------
# 1. ActNorm: a per-channel affine map, initialised from data
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
