"""One step of flow, the prior, the multi-scale Glow built from them, and the exact
log-likelihood of vectors under a fitted flow."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd
import torch
from torch import nn

from bertflow_mini._checks import check_matrix
from bertflow_mini.postprocess.flow.blocks import (
    LOG_2PI,
    ActNorm,
    AdditiveCoupling,
    AffineCoupling,
    Flow,
    InvertibleLinear,
    Reverse,
    Shuffle,
    ValueAndLogdet,
)

# ---------------------------------------------------------------------------------------------
# One step of flow, the prior, and the multi-scale Glow
# ---------------------------------------------------------------------------------------------
PERMUTATIONS = {"reverse": Reverse, "shuffle": Shuffle, "lu": InvertibleLinear}
COUPLINGS = {"additive": AdditiveCoupling, "affine": AffineCoupling}


def _choice(
    kind: str, value: str, options: Mapping[str, Callable[..., Flow]]
) -> Callable[..., Flow]:
    if value not in options:
        raise ValueError(f"{kind} must be one of {sorted(options)}, got {value!r}")
    return options[value]


class FlowStep(Flow):
    """ActNorm → permutation → coupling; logdet is the sum of the three blocks' logdets."""

    def __init__(
        self,
        dim: int,
        width: int = 32,
        coupling: str = "additive",
        permutation: str = "reverse",
        dead_tol: float = 1e-4,
    ):
        super().__init__()
        coupling_cls = _choice("coupling", coupling, COUPLINGS)
        permutation_cls = _choice("permutation", permutation, PERMUTATIONS)
        self.actnorm = ActNorm(dim, dead_tol=dead_tol)
        self.permute = permutation_cls(dim)
        self.coupling = coupling_cls(dim, width)

    def forward(self, x: torch.Tensor) -> ValueAndLogdet:
        x, logdet_norm = self.actnorm(x)
        x, logdet_perm = self.permute(x)
        x, logdet_coup = self.coupling(x)
        # log|det| of a composition adds up
        return x, logdet_norm + logdet_perm + logdet_coup

    def inverse(self, z: torch.Tensor) -> ValueAndLogdet:
        z, logdet_coup = self.coupling.inverse(z)
        z, logdet_perm = self.permute.inverse(z)
        x, logdet_norm = self.actnorm.inverse(z)
        return x, logdet_coup + logdet_perm + logdet_norm


class StandardNormal(nn.Module):
    """The prior N(0, I) of a ``dim``-dimensional latent: ``log_prob`` per row and ``sample``."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def log_prob(self, z: torch.Tensor) -> torch.Tensor:
        return -0.5 * (z.pow(2).sum(dim=1) + self.dim * LOG_2PI)

    def sample(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        return torch.randn(n, self.dim, generator=generator)


class Glow(Flow):
    """Multi-scale Glow for vectors: ``levels`` × (``depth`` FlowSteps, then factor out half).

    After each level but the last, the second half of the channels is *factored out*: it is final,
    is modelled directly as N(0, I), and skips the remaining levels (cheaper, and gives the model
    a coarse-to-fine structure). ``forward`` returns the full latent ``z`` — the final latent in
    the first channels, each factored-out part in the channels it left from — so ``z`` has the
    same shape as ``x`` and the prior N(0, I) covers every part at once. BERT-flow uses this whole
    ``z`` as the sentence embedding.
    """

    def __init__(
        self,
        dim: int,
        levels: int = 3,
        depth: int = 3,
        width: int = 32,
        coupling: str = "additive",
        permutation: str = "reverse",
        dead_tol: float = 1e-4,
    ):
        super().__init__()
        if levels < 1 or depth < 1:
            raise ValueError(
                f"levels and depth must be >= 1, got levels={levels}, depth={depth}"
            )
        # channels each level works on: every split keeps the first ⌈d/2⌉
        self.dims = [dim]
        for _ in range(levels - 1):
            self.dims.append((self.dims[-1] + 1) // 2)
        if self.dims[-1] < 2:
            raise ValueError(
                f"dim={dim} is too small for levels={levels}: the last level would have "
                f"{self.dims[-1]} channel(s), a coupling needs 2 (level sizes {self.dims})"
            )
        self.dim = dim
        self.prior = StandardNormal(dim)
        self.levels = nn.ModuleList(
            nn.ModuleList(
                FlowStep(d, width, coupling, permutation, dead_tol)
                for _ in range(depth)
            )
            for d in self.dims
        )

    def forward(self, x: torch.Tensor) -> ValueAndLogdet:
        logdet = x.new_zeros(x.shape[0])
        factored = []  # the parts taken out after each level, outermost first
        h = x
        for level, steps in enumerate(self.levels):
            for step in steps:  # type: ignore[attr-defined]  # a ModuleList of ModuleLists
                h, step_logdet = step(h)
                # ← the only place the flow's logdet grows
                logdet = logdet + step_logdet
            if level < len(self.levels) - 1:
                keep = self.dims[level + 1]
                # a split is a relabelling: logdet += 0
                h, z_out = h[:, :keep], h[:, keep:]
                factored.append(z_out)
        # each part back in its own channels
        z = torch.cat([h, *reversed(factored)], dim=1)
        return z, logdet

    def inverse(self, z: torch.Tensor) -> ValueAndLogdet:
        logdet = z.new_zeros(z.shape[0])
        h = z[:, : self.dims[-1]]
        for level in reversed(range(len(self.levels))):
            # bring back the part factored out after this level
            if level < len(self.levels) - 1:
                h = torch.cat([h, z[:, self.dims[level + 1] : self.dims[level]]], dim=1)
            for step in reversed(self.levels[level]):  # type: ignore[call-overload]  # a ModuleList of ModuleLists
                h, step_logdet = step.inverse(h)
                logdet = logdet + step_logdet
        return h, logdet

    def log_prob(self, x: torch.Tensor) -> torch.Tensor:
        """Exact ``log p(x) = log N(z; 0, I) + log|det ∂z/∂x|`` per sample, in nats."""
        z, logdet = self(x)
        log_prob: torch.Tensor = self.prior.log_prob(z) + logdet
        return log_prob

    def bits_per_dim(self, x: torch.Tensor) -> torch.Tensor:
        """Negative log-likelihood per sample in bits per dimension: ``-log₂ p(x) / dim``.

        This is the training loss, and the official code's (no constant added). For continuous
        data it can be negative: ``p`` is a *density*, and a density concentrated on a small region
        exceeds 1. Its expectation is a differential entropy, not a code length — it becomes one
        (and non-negative) only once the data are discretised into bins, which is why image flows
        add dequantisation noise and BERT-flow's numbers are not comparable to theirs.
        """
        return -self.log_prob(x) / (self.dim * math.log(2.0))

    def actnorm_logdets(self) -> pd.Series:
        """``log|det|`` of each flow step's ActNorm (``Σ 3·s``, the same for every input), indexed
        ``level i, step j``: where a flow's volume change sits (the couplings' own ActNorms are not
        part of the flow's log-det and are left out)."""
        rows = {  # type: ignore[var-annotated]  # a ModuleList of ModuleLists
            f"level {i + 1}, step {j + 1}": float(
                (step.actnorm.logscale_factor * step.actnorm.logs).detach().sum()
            )
            for i, steps in enumerate(self.levels)
            for j, step in enumerate(steps)  # type: ignore[arg-type]  # a ModuleList of ModuleLists
        }
        return pd.Series(rows, name="ActNorm log|det|")

    @torch.no_grad()
    def sample(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """``n`` new points ``f⁻¹(z)``, ``z`` drawn from the prior."""
        param = next(self.parameters())
        z = self.prior.sample(n, generator).to(device=param.device, dtype=param.dtype)
        return self.inverse(z)[0]


# ---------------------------------------------------------------------------------------------
# The exact log-likelihood of vectors under a fitted flow
# ---------------------------------------------------------------------------------------------


@torch.no_grad()
def log_likelihood(flow: Glow, X: np.ndarray | torch.Tensor) -> np.ndarray:
    """``log p(x)`` in nats of each row of ``X`` under ``flow`` (eval mode), computed on the flow's
    own device and dtype and returned as a float64 NumPy array: safe with a flow fitted on a GPU."""
    param = next(flow.parameters())
    x = torch.as_tensor(
        check_matrix(X, "X", dim=flow.dim), dtype=param.dtype, device=param.device
    )
    return flow.eval().log_prob(x).cpu().numpy().astype(np.float64)
