"""A Glow-style normalizing flow for sentence vectors, built piece by piece (BERT-flow, Li et al. 2020).

A normalizing flow is an invertible map ``z = f(x)`` trained so that ``z`` looks like a standard
Gaussian. The change-of-variables formula gives the exact log-likelihood of a data point:

    log p(x) = log N(f(x); 0, I) + log |det ∂f/∂x|

so every block below returns its output *and* its contribution to ``log |det J|`` ("logdet", one
number per sample). A flow is a stack of blocks, and the logdet of the stack is the sum of the
blocks' logdets — that sum is the whole bookkeeping, written out explicitly in ``FlowStep`` and
``Glow``.

The configuration follows the authors' code (a 1×1×C "image", i.e. per-channel ops on a vector):

    FlowStep  = ActNorm → fixed channel reversal → additive coupling
    Glow      = `levels` × (`depth` FlowSteps, then factor out half the channels to N(0, I))
    coupling  = (Linear → ActNorm → ReLU) × 2 → zero-initialised Linear, width 32

Conventions: ``forward`` maps data → latent (``x → z``), ``inverse`` maps latent → data. (Some
libraries, e.g. ``normflows``, use the opposite naming; see ``tests/test_flow.py``.)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field


import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ._checks import check_matrix, check_tensor
from ._progress import tqdm
from ._threads import torch_threads

LOG_2PI = math.log(2 * math.pi)


# ---------------------------------------------------------------------------------------------
# 1. ActNorm: a per-channel affine map, initialised from data
# ---------------------------------------------------------------------------------------------
class ActNorm(nn.Module):
    """``y = (x + b) · exp(logscale_factor · logs)`` per channel (Kingma & Dhariwal 2018).

    The first batch seen in training sets ``b`` and ``logs`` so that batch has zero mean and unit
    variance per channel ("data-dependent init"); afterwards they are ordinary parameters. The
    stored ``logs`` is multiplied by ``logscale_factor`` (3 in Glow and BERT-flow) before use, which
    lets Adam move the effective log-scale three times faster.

    logdet = Σ_channels logscale_factor · logs   (the same for every sample)
    """

    def __init__(self, dim: int, logscale_factor: float = 3.0):
        super().__init__()
        self.logscale_factor = logscale_factor
        self.b = nn.Parameter(torch.zeros(dim))
        self.logs = nn.Parameter(torch.zeros(dim))
        # A buffer, so a saved/loaded flow remembers that it was initialised and never re-inits.
        self.register_buffer("initialized", torch.tensor(False))
        self._ready = False  # Python mirror of `initialized`: skips a tensor→bool check per call

    @torch.no_grad()
    def initialize(self, x: torch.Tensor) -> None:
        """Set ``b`` and ``logs`` so that ``forward(x)`` has zero mean and unit variance per channel.

        One deliberate departure from the official code: a channel whose std is below 1e-4 × the
        largest channel std is (numerically) constant, and is centred but not scaled. The official
        scale 1/(std + 1e-6) would multiply it by up to 10⁶, the next ActNorm by 10⁶ again, and so
        on: all-MiniLM-L6-v2's last-layer average has three such dead dimensions (std ≈ 1e-32,
        1e-32, 2e-9), and with the official rule the fit reaches NaN within three steps.
        """
        mean = x.mean(dim=0)
        std = (x - mean).pow(2).mean(dim=0).sqrt()  # biased variance, as in the official Glow code
        constant = std < 1e-4 * std.max()
        log_scale = torch.where(constant, torch.zeros_like(std), -torch.log(std + 1e-6))
        self.b.copy_(-mean)
        self.logs.copy_(log_scale / self.logscale_factor)
        self.initialized.fill_(True)
        self._ready = True

    def _load_from_state_dict(self, *args, **kwargs):  # keep the Python mirror in sync on load
        super()._load_from_state_dict(*args, **kwargs)
        self._ready = bool(self.initialized)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if not self._ready:
            if bool(self.initialized):
                self._ready = True
            elif self.training:
                self.initialize(x)
        log_scale = self.logscale_factor * self.logs
        y = (x + self.b) * torch.exp(log_scale)
        logdet = log_scale.sum().expand(x.shape[0])
        return y, logdet

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        return y * torch.exp(-self.logscale_factor * self.logs) - self.b


# ---------------------------------------------------------------------------------------------
# 2. Mixing channels between couplings: a fixed reversal, or a learned LU-parameterised matrix
# ---------------------------------------------------------------------------------------------
class Reverse(nn.Module):
    """Reverse the channel order (the official BERT-flow choice). A permutation: logdet = 0."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x.flip(1), x.new_zeros(x.shape[0])

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        return y.flip(1)


class InvertibleLinear(nn.Module):
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
        self.register_buffer("lower_mask", torch.tril(torch.ones(dim, dim), diagonal=-1))
        self.register_buffer("eye", torch.eye(dim))
        self.L = nn.Parameter(lower * self.lower_mask)
        self.U = nn.Parameter(torch.triu(upper, diagonal=1))
        self.log_s = nn.Parameter(torch.log(s.abs()))

    def _factors(self) -> tuple[torch.Tensor, torch.Tensor]:
        lower = self.L * self.lower_mask + self.eye
        upper = self.U * self.lower_mask.T + torch.diag(self.sign_s * torch.exp(self.log_s))
        return lower, upper

    def weight(self) -> torch.Tensor:
        lower, upper = self._factors()
        return self.P @ lower @ upper

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = F.linear(x, self.weight())
        return y, self.log_s.sum().expand(x.shape[0])

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        # x = U⁻¹ L⁻¹ Pᵀ y, with two triangular solves instead of a general inverse.
        lower, upper = self._factors()
        h = torch.linalg.solve_triangular(lower, self.P.T @ y.T, upper=False, unitriangular=True)
        return torch.linalg.solve_triangular(upper, h, upper=True).T


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


class AdditiveCoupling(nn.Module):
    """``y₁ = x₁,  y₂ = x₂ + t(x₁)`` (NICE; the BERT-flow choice). A shear: logdet = 0.

    ``x₁`` is the first ⌈dim/2⌉ channels, so odd dimensions work.
    """

    def __init__(self, dim: int, width: int = 32):
        super().__init__()
        if dim < 2:
            raise ValueError(f"a coupling layer needs at least 2 channels, got {dim}")
        self.split = (dim + 1) // 2
        self.net = CouplingNet(self.split, dim - self.split, width)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x1, x2 = x[:, : self.split], x[:, self.split :]
        y = torch.cat([x1, x2 + self.net(x1)], dim=1)
        return y, x.new_zeros(x.shape[0])

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        y1, y2 = y[:, : self.split], y[:, self.split :]
        return torch.cat([y1, y2 - self.net(y1)], dim=1)


class AffineCoupling(nn.Module):
    """``y₁ = x₁,  y₂ = (x₂ + shift(x₁)) · σ(raw(x₁) + 2)`` (Glow's affine coupling).

    The sigmoid keeps the scale in (0, 1) and starts it near σ(2) ≈ 0.88, which is far more stable
    than ``exp``. The Jacobian is triangular, so logdet = Σ log σ(raw + 2) over the second half.
    The network's outputs are interleaved: even columns are shifts, odd columns raw scales.
    """

    def __init__(self, dim: int, width: int = 32):
        super().__init__()
        if dim < 2:
            raise ValueError(f"a coupling layer needs at least 2 channels, got {dim}")
        self.split = (dim + 1) // 2
        self.net = CouplingNet(self.split, 2 * (dim - self.split), width)

    def _shift_and_log_scale(self, x1: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.net(x1)
        return h[:, 0::2], F.logsigmoid(h[:, 1::2] + 2.0)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x1, x2 = x[:, : self.split], x[:, self.split :]
        shift, log_scale = self._shift_and_log_scale(x1)
        y2 = (x2 + shift) * torch.exp(log_scale)
        return torch.cat([x1, y2], dim=1), log_scale.sum(dim=1)

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        y1, y2 = y[:, : self.split], y[:, self.split :]
        shift, log_scale = self._shift_and_log_scale(y1)
        return torch.cat([y1, y2 * torch.exp(-log_scale) - shift], dim=1)


# ---------------------------------------------------------------------------------------------
# 4. One step of flow, and the multi-scale Glow
# ---------------------------------------------------------------------------------------------
_PERMUTATIONS = {"reverse": Reverse, "lu": InvertibleLinear}
_COUPLINGS = {"additive": AdditiveCoupling, "affine": AffineCoupling}


class FlowStep(nn.Module):
    """ActNorm → permutation → coupling; logdet is the sum of the three blocks' logdets."""

    def __init__(self, dim: int, width: int = 32, coupling: str = "additive", permutation: str = "reverse"):
        super().__init__()
        if coupling not in _COUPLINGS:
            raise ValueError(f"coupling must be one of {sorted(_COUPLINGS)}, got {coupling!r}")
        if permutation not in _PERMUTATIONS:
            raise ValueError(f"permutation must be one of {sorted(_PERMUTATIONS)}, got {permutation!r}")
        self.actnorm = ActNorm(dim)
        self.permute = _PERMUTATIONS[permutation](dim)
        self.coupling = _COUPLINGS[coupling](dim, width)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, logdet_norm = self.actnorm(x)
        x, logdet_perm = self.permute(x)
        x, logdet_coup = self.coupling(x)
        return x, logdet_norm + logdet_perm + logdet_coup  # log|det| of a composition adds up

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        return self.actnorm.inverse(self.permute.inverse(self.coupling.inverse(y)))


class Glow(nn.Module):
    """Multi-scale Glow for vectors: ``levels`` × (``depth`` FlowSteps, then factor out half).

    After each level but the last, the second half of the channels is *factored out*: it is final,
    is modelled directly as N(0, I), and skips the remaining levels (cheaper, and gives the model
    a coarse-to-fine structure). ``forward`` returns the full latent ``z`` — the final latent in
    the first channels, each factored-out part in the channels it left from — so ``z`` has the
    same shape as ``x`` and ``log N(z; 0, I)`` covers every part at once. BERT-flow uses this whole
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
    ):
        super().__init__()
        if levels < 1 or depth < 1:
            raise ValueError(f"levels and depth must be >= 1, got levels={levels}, depth={depth}")
        # Channels each level works on: every split keeps the first ⌈d/2⌉.
        self.dims = [dim]
        for _ in range(levels - 1):
            self.dims.append((self.dims[-1] + 1) // 2)
        if self.dims[-1] < 2:
            raise ValueError(
                f"dim={dim} is too small for levels={levels}: the last level would have "
                f"{self.dims[-1]} channel(s), a coupling needs 2 (level sizes {self.dims})"
            )
        self.dim = dim
        self.levels = nn.ModuleList(
            nn.ModuleList(FlowStep(d, width, coupling, permutation) for _ in range(depth)) for d in self.dims
        )

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logdet = x.new_zeros(x.shape[0])
        factored = []  # the parts taken out after each level, outermost first
        h = x
        for level, steps in enumerate(self.levels):
            for step in steps:
                h, step_logdet = step(h)
                logdet = logdet + step_logdet  # ← the only place the flow's logdet grows
            if level < len(self.levels) - 1:
                keep = self.dims[level + 1]
                h, z_out = h[:, :keep], h[:, keep:]  # a split is a relabelling: logdet += 0
                factored.append(z_out)
        z = torch.cat([h, *reversed(factored)], dim=1)  # each part back in its own channels
        return z, logdet

    def inverse(self, z: torch.Tensor) -> torch.Tensor:
        h = z[:, : self.dims[-1]]
        for level in reversed(range(len(self.levels))):
            if level < len(self.levels) - 1:
                h = torch.cat([h, z[:, self.dims[level + 1] : self.dims[level]]], dim=1)
            for step in reversed(self.levels[level]):
                h = step.inverse(h)
        return h

    def log_prob(self, x: torch.Tensor) -> torch.Tensor:
        """Exact ``log p(x) = log N(z; 0, I) + log|det ∂z/∂x|`` per sample, in nats."""
        z, logdet = self(x)
        log_pz = -0.5 * (z.pow(2).sum(dim=1) + self.dim * LOG_2PI)
        return log_pz + logdet

    def bits_per_dim(self, x: torch.Tensor) -> torch.Tensor:
        """Negative log-likelihood per sample in bits per dimension: ``-log₂ p(x) / dim``.

        This is the training loss. For continuous data it can be negative: ``p`` is a *density*,
        and a density concentrated on a small region exceeds 1 (a Gaussian with σ = 0.01 has
        peak density ≈ 40). Its expectation is a differential entropy, which is not a code length;
        it becomes one (and non-negative) only once the data are discretised into bins, which is
        why image flows add dequantisation noise and BERT-flow's numbers are not comparable to them.
        """
        return -self.log_prob(x) / (self.dim * math.log(2.0))


# ---------------------------------------------------------------------------------------------
# 5. Training: maximum likelihood with the official optimiser settings
# ---------------------------------------------------------------------------------------------
@dataclass
class FitResult:
    """A fitted flow (in eval mode) and its training loss, in bits/dim, one value per step."""

    flow: Glow
    losses: list[float] = field(default_factory=list)


def _as_tensor(embeddings: np.ndarray | torch.Tensor, name: str) -> torch.Tensor:
    if isinstance(embeddings, torch.Tensor):
        check_tensor(embeddings, name)
        return embeddings.detach().float()
    return torch.from_numpy(np.ascontiguousarray(check_matrix(embeddings, name), dtype=np.float32))


def fit_flow(
    embeddings: np.ndarray | torch.Tensor,
    *,
    levels: int = 3,
    depth: int = 3,
    width: int = 32,
    coupling: str = "additive",
    permutation: str = "reverse",
    epochs: int = 1,
    batch_size: int = 32,
    lr: float = 1e-3,
    weight_decay: float = 0.01,
    clip_norm: float = 1.0,
    init_size: int | None = None,
    seed: int = 0,
    device: str | torch.device | None = None,
    progress: bool = True,
) -> FitResult:
    """Fit a :class:`Glow` to ``embeddings`` (n, d) by maximum likelihood; defaults = BERT-flow's.

    Data-dependent ActNorm init sees the first shuffled training batch (``init_size=None``, the
    official behaviour). With ``init_size=m`` it sees the first ``m`` shuffled rows instead, in one
    extra no-grad pass, for steadier init statistics than 32 rows give. The default stays official:
    on all-MiniLM-L6-v2 / STS-B, ``init_size`` of None, 1000 or every row changed the test Spearman
    by less than the seed-to-seed spread (±0.2).

    The model is built and shuffled from ``seed`` only, so equal seeds give equal losses (on CPU).
    Raises ``ValueError`` for bad input and ``RuntimeError`` as soon as the loss is NaN or infinite.
    """
    x_all = _as_tensor(embeddings, "embeddings")
    n, dim = x_all.shape
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(device)

    with torch.random.fork_rng(devices=[]):  # seed the init without touching the caller's RNG
        torch.manual_seed(seed)
        flow = Glow(dim, levels, depth, width, coupling, permutation)
    flow.to(device).train()
    x_all = x_all.to(device)
    generator = torch.Generator().manual_seed(seed)

    # Decoupled weight decay (AdamW): the official code uses BERT's AdamWeightDecayOptimizer,
    # which is exactly this (the decay is not fed through Adam's moments), applied to every flow
    # variable. Its eps is 1e-6. One difference: BERT's optimiser has no bias correction, torch's has.
    optimizer = torch.optim.AdamW(flow.parameters(), lr=lr, weight_decay=weight_decay, eps=1e-6, foreach=True)

    bar = tqdm(total=epochs * math.ceil(n / batch_size), disable=not progress, desc="fitting flow", unit="step")
    losses: list[float] = []
    with torch_threads(1 if device.type == "cpu" else None):  # tiny matrices: see _threads
        for epoch in range(epochs):
            order = torch.randperm(n, generator=generator).to(device)
            if epoch == 0 and init_size is not None:
                with torch.no_grad():
                    flow(x_all[order[:init_size]])  # triggers every ActNorm's data-dependent init
            for start in range(0, n, batch_size):
                loss = flow.bits_per_dim(x_all[order[start : start + batch_size]]).mean()
                value = loss.item()
                if not math.isfinite(value):
                    bar.close()
                    raise RuntimeError(
                        f"flow loss became {value} at step {len(losses)} (epoch {epoch}); "
                        f"the fit diverged - try a smaller lr (now {lr}) or check the embeddings"
                    )
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(flow.parameters(), clip_norm, foreach=True)
                optimizer.step()
                losses.append(value)
                bar.update(1)
                if len(losses) % 20 == 0:
                    bar.set_postfix(bits_per_dim=f"{np.mean(losses[-20:]):.3f}", refresh=False)
    bar.close()
    return FitResult(flow=flow.eval(), losses=losses)


# ---------------------------------------------------------------------------------------------
# 6. The post-processor interface shared with whitening.py
# ---------------------------------------------------------------------------------------------
class FlowTransform:
    """``FlowTransform(**fit_flow_kwargs).fit(X).transform(X)``: numpy in, latent ``z`` out.

    Every keyword goes to :func:`fit_flow` (``batch_size`` is the *training* batch); ``transform``
    runs in eval mode without gradients, ``rows_per_chunk`` rows at a time.
    """

    rows_per_chunk = 4096

    def __init__(self, **fit_kwargs):
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
        self.flow.eval()
        out = np.empty(x.shape, dtype=x.dtype)
        with torch_threads(1 if device.type == "cpu" else None):  # tiny matrices: see _threads
            for start in range(0, len(x), self.rows_per_chunk):
                chunk = np.ascontiguousarray(x[start : start + self.rows_per_chunk], dtype=np.float32)
                z, _ = self.flow(torch.from_numpy(chunk).to(device))
                out[start : start + self.rows_per_chunk] = z.cpu().numpy()
        return out
