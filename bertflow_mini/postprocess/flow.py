"""A Glow-style normalizing flow for sentence vectors, built piece by piece (BERT-flow, Li et al. 2020).

Used by chapter 5 (the blocks, the fit) and chapter 6 (the STS table, through :class:`FlowTransform`).

A normalizing flow is an invertible map ``z = f(x)`` trained so that ``z`` looks like a standard
Gaussian. The change-of-variables formula gives the exact log-likelihood of a data point:

    log p(x) = log N(f(x); 0, I) + log |det ∂f/∂x|

Every block is a :class:`Flow`: ``forward(x)`` returns ``(z, logdet)`` and ``inverse(z)`` returns
``(x, logdet)``, one log-determinant per sample, the inverse's being minus the forward's (the
contract of ``normflows``). A stack's log-det is the sum of its blocks' — written out in
``FlowStep`` and ``Glow``, the only places it grows.

The configuration follows the authors' code (a 1×1×C "image", i.e. per-channel ops on a vector):

    FlowStep  = ActNorm → fixed channel reversal → additive coupling
    Glow      = `levels` × (`depth` FlowSteps, then factor out half the channels to N(0, I))
    coupling  = (Linear → ActNorm → ReLU) × 2 → zero-initialised Linear, width 32

Conventions: ``forward`` maps data → latent (``x → z``), ``inverse`` maps latent → data (``normflows``
names them the other way round; see ``tests/postprocess/test_flow.py``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field, fields, replace

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from bertflow_mini._checks import check_matrix, check_tensor
from bertflow_mini._device import default_device
from bertflow_mini._progress import tqdm
from bertflow_mini._threads import torch_threads

LOG_2PI = math.log(2 * math.pi)
#: What every block's ``forward`` and ``inverse`` return: the mapped tensor and, per sample, the
#: log-determinant of the map's Jacobian.
ValueAndLogdet = tuple[torch.Tensor, torch.Tensor]


class Flow(nn.Module):
    """An invertible block: ``forward(x) -> (z, logdet)``, ``inverse(z) -> (x, logdet)``.

    ``logdet`` has one entry per sample: ``log|det ∂z/∂x|`` forward, ``log|det ∂x/∂z|`` inverse,
    so ``inverse(forward(x))`` returns ``x`` and minus the forward log-det.
    """

    def forward(self, x: torch.Tensor) -> ValueAndLogdet:  # pragma: no cover - abstract
        raise NotImplementedError

    def inverse(self, z: torch.Tensor) -> ValueAndLogdet:  # pragma: no cover - abstract
        raise NotImplementedError


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
        self._ready = (
            False  # Python mirror of `initialized`: skips a tensor→bool check per call
        )

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
        std = (
            (x - mean).pow(2).mean(dim=0).sqrt()
        )  # biased variance, as in the official Glow code
        dead = std < self.dead_tol * std.max()
        log_scale = torch.where(dead, torch.zeros_like(std), -torch.log(std + 1e-6))
        self.b.copy_(-mean)
        self.logs.copy_(log_scale / self.logscale_factor)
        self.initialized.fill_(True)
        self._ready = True

    def _load_from_state_dict(
        self, *args, **kwargs
    ):  # keep the Python mirror in sync on load
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
# 2. Mixing channels between couplings: a fixed permutation, or a learned LU-parameterised matrix
# ---------------------------------------------------------------------------------------------
class Permutation(Flow):
    """``y = x[:, order]`` for a fixed ``order``. A permutation matrix has det ±1: logdet = 0."""

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
        return self.linear(x) * torch.exp(self.logscale_factor * self.logs)


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
        return self.out(h)


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


# ---------------------------------------------------------------------------------------------
# 4. One step of flow, the prior, and the multi-scale Glow
# ---------------------------------------------------------------------------------------------
PERMUTATIONS = {"reverse": Reverse, "shuffle": Shuffle, "lu": InvertibleLinear}
COUPLINGS = {"additive": AdditiveCoupling, "affine": AffineCoupling}


def _choice(kind: str, value: str, options: dict) -> type:
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
        return (
            x,
            logdet_norm + logdet_perm + logdet_coup,
        )  # log|det| of a composition adds up

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
        self.dims = [
            dim
        ]  # channels each level works on: every split keeps the first ⌈d/2⌉
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
            for step in steps:
                h, step_logdet = step(h)
                logdet = (
                    logdet + step_logdet
                )  # ← the only place the flow's logdet grows
            if level < len(self.levels) - 1:
                keep = self.dims[level + 1]
                h, z_out = (
                    h[:, :keep],
                    h[:, keep:],
                )  # a split is a relabelling: logdet += 0
                factored.append(z_out)
        z = torch.cat(
            [h, *reversed(factored)], dim=1
        )  # each part back in its own channels
        return z, logdet

    def inverse(self, z: torch.Tensor) -> ValueAndLogdet:
        logdet = z.new_zeros(z.shape[0])
        h = z[:, : self.dims[-1]]
        for level in reversed(range(len(self.levels))):
            if (
                level < len(self.levels) - 1
            ):  # bring back the part factored out after this level
                h = torch.cat([h, z[:, self.dims[level + 1] : self.dims[level]]], dim=1)
            for step in reversed(self.levels[level]):
                h, step_logdet = step.inverse(h)
                logdet = logdet + step_logdet
        return h, logdet

    def log_prob(self, x: torch.Tensor) -> torch.Tensor:
        """Exact ``log p(x) = log N(z; 0, I) + log|det ∂z/∂x|`` per sample, in nats."""
        z, logdet = self(x)
        return self.prior.log_prob(z) + logdet

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
        rows = {
            f"level {i + 1}, step {j + 1}": float(
                (step.actnorm.logscale_factor * step.actnorm.logs).detach().sum()
            )
            for i, steps in enumerate(self.levels)
            for j, step in enumerate(steps)
        }
        return pd.Series(rows, name="ActNorm log|det|")

    @torch.no_grad()
    def sample(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """``n`` new points ``f⁻¹(z)``, ``z`` drawn from the prior."""
        param = next(self.parameters())
        z = self.prior.sample(n, generator).to(device=param.device, dtype=param.dtype)
        return self.inverse(z)[0]


# ---------------------------------------------------------------------------------------------
# 5. Training: maximum likelihood with the official optimiser settings
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FlowConfig:
    """Everything a flow fit depends on; the defaults are the official BERT-flow code's, except
    ``dead_tol`` and ``bias_correction`` (see :class:`ActNorm` and :class:`BertAdamW`)."""

    levels: int = 3  # the code's config_l3_d3_w32 (the paper's Table 7 says 2)
    depth: int = 3
    width: int = 32
    coupling: str = "additive"
    permutation: str = (
        "reverse"  # the code's fixed reversal ("shuffle": the paper's text)
    )
    dead_tol: float = (
        1e-4  # 0: the official ActNorm init, which scales constant channels by 1e6
    )
    epochs: int = 1
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.01
    clip_norm: float = 1.0
    bias_correction: bool = (
        True  # False: BERT's AdamWeightDecayOptimizer, as the official code
    )
    init_size: int | None = (
        None  # rows for ActNorm's data-dependent init (None: the first batch)
    )
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("depth", "width", "epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not (self.lr > 0 and self.clip_norm > 0 and self.weight_decay >= 0):
            raise ValueError(
                f"need lr > 0, clip_norm > 0, weight_decay >= 0; got {self}"
            )

    @classmethod
    def official(cls, **overrides) -> FlowConfig:
        """The authors' code exactly where a switch exists: official ActNorm init, no bias correction."""
        return cls(**{"dead_tol": 0.0, "bias_correction": False, **overrides})


class BertAdamW(torch.optim.Optimizer):
    """BERT's ``AdamWeightDecayOptimizer``, which the official flow is trained with.

    Adam with decoupled weight decay but **no bias correction**: the update is ``m / (√v + eps)``
    with ``m, v`` the raw moving averages. Early on ``m`` and ``v`` are biased towards 0 by factors
    ``1 − β₁ᵗ`` and ``1 − β₂ᵗ``, so the step is ``(1 − β₁ᵗ)/√(1 − β₂ᵗ)`` times Adam's
    (:func:`missing_bias_correction`): 3.2× at step 1, a peak of 6.6× at step 12, 4.5× at step
    50, still 2.1× at step 270 (the official STS-B fit's length); it tends to 1 from above.
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        weight_decay: float = 0.01,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-6,
    ):
        super().__init__(
            params, {"lr": lr, "weight_decay": weight_decay, "betas": betas, "eps": eps}
        )

    @torch.no_grad()
    def step(self, closure=None) -> None:
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["m"], state["v"] = torch.zeros_like(p), torch.zeros_like(p)
                m, v = state["m"], state["v"]
                m.mul_(beta1).add_(p.grad, alpha=1 - beta1)
                v.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                update = m / (v.sqrt() + group["eps"]) + group["weight_decay"] * p
                p.sub_(group["lr"] * update)


def missing_bias_correction(
    t: np.ndarray | int, betas: tuple[float, float] = (0.9, 0.999)
) -> np.ndarray:
    """How many times larger :class:`BertAdamW`'s step ``t`` (from 1) is than bias-corrected Adam's
    for the same gradients: ``(1 − β₁ᵗ) / √(1 − β₂ᵗ)``."""
    t = np.asarray(t, dtype=np.float64)
    if np.any(t < 1):
        raise ValueError("steps are counted from 1")
    beta1, beta2 = betas
    return (1 - beta1**t) / np.sqrt(1 - beta2**t)


def build_flow(dim: int, config: FlowConfig) -> Glow:
    """A fresh :class:`Glow` for ``config``, its random parts drawn from ``config.seed`` only."""
    with torch.random.fork_rng(
        devices=[]
    ):  # seed the init without touching the caller's RNG
        torch.manual_seed(config.seed)
        return Glow(
            dim,
            config.levels,
            config.depth,
            config.width,
            config.coupling,
            config.permutation,
            config.dead_tol,
        )


def make_optimizer(flow: nn.Module, config: FlowConfig) -> torch.optim.Optimizer:
    """AdamW (eps 1e-6, decay on every flow parameter, as the official code), with or without bias correction."""
    if config.bias_correction:
        return torch.optim.AdamW(
            flow.parameters(),
            lr=config.lr,
            weight_decay=config.weight_decay,
            eps=1e-6,
            foreach=True,
        )
    return BertAdamW(flow.parameters(), lr=config.lr, weight_decay=config.weight_decay)


def batches(n: int, config: FlowConfig) -> Iterator[torch.Tensor]:
    """Row indices of each training batch: a fresh shuffle per epoch, from ``config.seed``."""
    generator = torch.Generator().manual_seed(config.seed)
    for _ in range(config.epochs):
        order = torch.randperm(n, generator=generator)
        yield from order.split(config.batch_size)


def train_step(
    flow: Glow, optimizer: torch.optim.Optimizer, batch: torch.Tensor, clip_norm: float
) -> float:
    """One gradient step on the mean bits/dim of ``batch``; returns that loss (before the step)."""
    loss = flow.bits_per_dim(batch).mean()
    value = loss.item()
    if not math.isfinite(value):
        return value  # the caller stops before a NaN reaches the parameters
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(flow.parameters(), clip_norm, foreach=True)
    optimizer.step()
    return value


@dataclass
class FitResult:
    """A fitted flow (in eval mode) and its training loss, in bits/dim, one value per step."""

    flow: Glow
    losses: list[float] = field(default_factory=list)


def _as_tensor(embeddings: np.ndarray | torch.Tensor, name: str) -> torch.Tensor:
    if isinstance(embeddings, torch.Tensor):
        check_tensor(embeddings, name)
        return embeddings.detach().float()
    return torch.from_numpy(
        np.ascontiguousarray(check_matrix(embeddings, name), dtype=np.float32)
    )


def _config(config: FlowConfig | None, overrides: dict) -> FlowConfig:
    unknown = set(overrides) - {f.name for f in fields(FlowConfig)}
    if unknown:
        raise TypeError(f"unknown flow setting(s) {sorted(unknown)}; see FlowConfig")
    return replace(config or FlowConfig(), **overrides)


def fit_flow(
    embeddings: np.ndarray | torch.Tensor,
    config: FlowConfig | None = None,
    *,
    device: str | torch.device | None = None,
    progress: bool = True,
    **overrides,
) -> FitResult:
    """Fit a :class:`Glow` to ``embeddings`` (n, d) by maximum likelihood.

    ``config`` (default :class:`FlowConfig`, the official settings) can be changed by keyword,
    e.g. ``fit_flow(x, lr=3e-3, epochs=2)``. Equal seeds give equal losses (on CPU). Raises
    ``ValueError`` for bad input and ``RuntimeError`` as soon as the loss is NaN or infinite.
    """
    config = _config(config, overrides)
    x_all = _as_tensor(embeddings, "embeddings")
    device = torch.device(device or default_device())
    flow = build_flow(x_all.shape[1], config).to(device).train()
    x_all = x_all.to(device)
    optimizer = make_optimizer(flow, config)
    steps = config.epochs * math.ceil(len(x_all) / config.batch_size)
    losses: list[float] = []
    with (
        torch_threads(1 if device.type == "cpu" else None),
        tqdm(
            total=steps, disable=not progress, desc="fitting flow", unit="step"
        ) as bar,
    ):
        if config.init_size is not None:
            with (
                torch.no_grad()
            ):  # every ActNorm's data-dependent init sees `init_size` rows
                flow(
                    x_all[
                        next(
                            batches(
                                len(x_all), replace(config, batch_size=config.init_size)
                            )
                        )
                    ]
                )
        for batch in batches(len(x_all), config):
            value = train_step(
                flow, optimizer, x_all[batch.to(device)], config.clip_norm
            )
            if not math.isfinite(value):
                raise RuntimeError(
                    f"flow loss became {value} at step {len(losses)}; the fit diverged - "
                    f"try a smaller lr (now {config.lr}) or check the embeddings"
                )
            losses.append(value)
            bar.update(1)
    return FitResult(flow=flow.eval(), losses=losses)


@torch.no_grad()
def log_likelihood(flow: Glow, X: np.ndarray | torch.Tensor) -> np.ndarray:
    """``log p(x)`` in nats of each row of ``X`` under ``flow`` (eval mode), computed on the flow's
    own device and dtype and returned as a float64 NumPy array: safe with a flow fitted on a GPU."""
    param = next(flow.parameters())
    x = torch.as_tensor(
        check_matrix(X, "X", dim=flow.dim), dtype=param.dtype, device=param.device
    )
    return flow.eval().log_prob(x).cpu().numpy().astype(np.float64)


# ---------------------------------------------------------------------------------------------
# 6. The post-processor interface shared with whitening.py
# ---------------------------------------------------------------------------------------------
class FlowTransform:
    """``FlowTransform(**settings).fit(X).transform(X)``: numpy in, latent ``z`` out.

    Keywords are :class:`FlowConfig` fields (``batch_size`` is the *training* batch) plus
    ``config``, ``device`` and ``progress`` of :func:`fit_flow`; ``transform`` runs in eval mode
    without gradients, ``rows_per_chunk`` rows at a time.
    """

    rows_per_chunk = 4096

    def __init__(self, **fit_kwargs):
        _config(
            fit_kwargs.get("config"),
            {
                k: v
                for k, v in fit_kwargs.items()
                if k not in ("config", "device", "progress")
            },
        )
        self.fit_kwargs = fit_kwargs
        self.flow: Glow | None = None
        self.losses: list[float] = []

    def fit(self, X: np.ndarray | torch.Tensor) -> FlowTransform:
        result = fit_flow(X, **self.fit_kwargs)
        self.flow, self.losses = result.flow, result.losses
        return self

    @torch.no_grad()
    def transform(self, X: np.ndarray | torch.Tensor) -> np.ndarray:
        if self.flow is None:
            raise RuntimeError("FlowTransform.transform called before fit")
        x = check_matrix(X, "X", dim=self.flow.dim)
        device = next(self.flow.parameters()).device
        out = np.empty(x.shape, dtype=x.dtype)
        with torch_threads(
            1 if device.type == "cpu" else None
        ):  # tiny matrices: see _threads
            for start in range(0, len(x), self.rows_per_chunk):
                chunk = np.ascontiguousarray(
                    x[start : start + self.rows_per_chunk], dtype=np.float32
                )
                z, _ = self.flow.eval()(torch.from_numpy(chunk).to(device))
                out[start : start + self.rows_per_chunk] = z.cpu().numpy()
        return out
