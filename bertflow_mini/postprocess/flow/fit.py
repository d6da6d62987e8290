"""Fitting a flow by maximum likelihood with the official optimiser (AdamW without bias
correction), and the post-processor interface shared with whitening:
``FlowTransform().fit(X).transform(X)``."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.optim.optimizer import ParamsT

from bertflow_mini._checks import check_matrix, check_tensor
from bertflow_mini._device import default_device
from bertflow_mini._progress import tqdm
from bertflow_mini._threads import torch_threads
from bertflow_mini._training import gradient_step
from bertflow_mini.postprocess.flow.glow import Glow

# ---------------------------------------------------------------------------------------------
# The optimiser the official BERT-flow code trains with: AdamW without bias correction
# ---------------------------------------------------------------------------------------------


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
        params: ParamsT,
        lr: float = 1e-3,
        weight_decay: float = 0.01,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-6,
    ):
        super().__init__(
            params, {"lr": lr, "weight_decay": weight_decay, "betas": betas, "eps": eps}
        )

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> None:  # type: ignore[override]
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


# ---------------------------------------------------------------------------------------------
# Training: maximum likelihood with the official optimiser settings
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FlowConfig:
    """Everything a flow fit depends on; the defaults are the official BERT-flow code's, except
    ``dead_tol`` and ``bias_correction`` (see :class:`ActNorm` and :class:`BertAdamW`)."""

    levels: int = 3  # the code's config_l3_d3_w32 (the paper's Table 7 says 2)
    depth: int = 3
    width: int = 32
    coupling: str = "additive"
    # the code's fixed reversal ("shuffle": the paper's text)
    permutation: str = "reverse"
    # 0: the official ActNorm init, which scales constant channels by 1e6
    dead_tol: float = 1e-4
    epochs: int = 1
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.01
    clip_norm: float = 1.0
    # False: BERT's AdamWeightDecayOptimizer, as the official code
    bias_correction: bool = True
    # rows for ActNorm's data-dependent init (None: the first batch)
    init_size: int | None = None
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
    def official(cls, **overrides: Any) -> FlowConfig:
        """The authors' code exactly where a switch exists: official ActNorm init, no bias correction."""
        return cls(**{"dead_tol": 0.0, "bias_correction": False, **overrides})


def build_flow(dim: int, config: FlowConfig) -> Glow:
    """A fresh :class:`Glow` for ``config``, its random parts drawn from ``config.seed`` only."""
    # seed the init without touching the caller's RNG
    with torch.random.fork_rng(devices=[]):
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
        yield from order.split(config.batch_size)  # type: ignore[no-untyped-call]  # unannotated in torch


def train_step(
    flow: Glow, optimizer: torch.optim.Optimizer, batch: torch.Tensor, clip_norm: float
) -> float:
    """One gradient step on the mean bits/dim of ``batch``; returns that loss (before the step)."""
    loss = flow.bits_per_dim(batch).mean()
    value = loss.item()
    if not math.isfinite(value):
        return value  # the caller stops before a NaN reaches the parameters
    gradient_step(
        loss, optimizer, clip_norm=clip_norm, parameters=flow.parameters(), foreach=True
    )
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


def resolve_config(config: FlowConfig | None, overrides: dict[str, Any]) -> FlowConfig:
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
    **overrides: Any,
) -> FitResult:
    """Fit a :class:`Glow` to ``embeddings`` (n, d) by maximum likelihood.

    ``config`` (default :class:`FlowConfig`, the official settings) can be changed by keyword,
    e.g. ``fit_flow(x, lr=3e-3, epochs=2)``. Equal seeds give equal losses (on CPU). Raises
    ``ValueError`` for bad input and ``RuntimeError`` as soon as the loss is NaN or infinite.
    """
    config = resolve_config(config, overrides)
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
            # every ActNorm's data-dependent init sees `init_size` rows
            with torch.no_grad():
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


# ---------------------------------------------------------------------------------------------
# The post-processor interface shared with whitening: ``FlowTransform().fit(X).transform(X)``
# ---------------------------------------------------------------------------------------------


class FlowTransform:
    """``FlowTransform(**settings).fit(X).transform(X)``: numpy in, latent ``z`` out.

    Keywords are :class:`FlowConfig` fields (``batch_size`` is the *training* batch) plus
    ``config``, ``device`` and ``progress`` of :func:`fit_flow`; ``transform`` runs in eval mode
    without gradients, ``rows_per_chunk`` rows at a time.
    """

    rows_per_chunk = 4096

    def __init__(self, **fit_kwargs: Any) -> None:
        resolve_config(
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
        # tiny matrices: see _threads
        with torch_threads(1 if device.type == "cpu" else None):
            for start in range(0, len(x), self.rows_per_chunk):
                chunk = np.ascontiguousarray(
                    x[start : start + self.rows_per_chunk], dtype=np.float32
                )
                z, _ = self.flow.eval()(torch.from_numpy(chunk).to(device))
                out[start : start + self.rows_per_chunk] = z.cpu().numpy()
        return out
