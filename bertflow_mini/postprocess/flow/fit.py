"""Fitting a flow: maximum likelihood with the official optimiser settings."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import torch
from torch import nn

from bertflow_mini._checks import check_matrix, check_tensor
from bertflow_mini._device import default_device
from bertflow_mini._progress import tqdm
from bertflow_mini._threads import torch_threads
from bertflow_mini._training import gradient_step
from bertflow_mini.postprocess.flow.glow import Glow
from bertflow_mini.postprocess.flow.optim import BertAdamW


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
