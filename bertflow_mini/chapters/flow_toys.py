"""The flow's workbench for chapter 5: 2-D toy data, block checks against autograd, and pictures.

Defined here rather than in the chapter so the tests use the same ``randomize`` and ``check_block``
the chapter shows (``tests/chapters/test_flow_toys.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
import torch
from scipy import stats
from torch.autograd.functional import jacobian

from bertflow_mini.postprocess.flow import ActNorm, Coupling, Glow

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def make_cone(n: int, seed: int = 0) -> np.ndarray:
    """2-D points whose directions stay within a few degrees of 60°, with log-normal lengths."""
    rng = np.random.default_rng(seed)
    angle = np.pi / 3 + 0.12 * rng.standard_normal(n)
    radius = 3.0 * np.exp(0.35 * rng.standard_normal(n))
    return np.column_stack([radius * np.cos(angle), radius * np.sin(angle)]).astype(
        np.float32
    )


def make_moons(n: int, noise: float = 0.08, seed: int = 0) -> np.ndarray:
    """Two interleaving half circles with Gaussian noise (scikit-learn's ``make_moons``, in NumPy)."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(0.0, np.pi, n)
    upper = rng.random(n) < 0.5
    x = np.where(upper, np.cos(t), 1.0 - np.cos(t))
    y = np.where(upper, np.sin(t), 0.5 - np.sin(t))
    return (np.column_stack([x, y]) + noise * rng.standard_normal((n, 2))).astype(
        np.float32
    )


def _device(module: torch.nn.Module) -> torch.device:
    """Where ``module``'s parameters live (the CPU for a module without any)."""
    return next(module.parameters(), torch.empty(0)).device


def randomize(
    module: torch.nn.Module, scale: float = 0.3, seed: int = 0
) -> torch.nn.Module:
    """Add seeded noise to every parameter, so a block that starts as the identity does something.

    The noise is drawn on the CPU (the same numbers on any device), then moved to the parameter's.
    Its ActNorms are marked initialised, so no data-dependent init overwrites the noise.
    """
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(
                scale * torch.randn(p.shape, generator=g, dtype=p.dtype).to(p.device)
            )
    for m in module.modules():
        if isinstance(m, ActNorm):
            m.initialized.fill_(True)
            m._ready = True
    return module


def check_block(block: torch.nn.Module, x: torch.Tensor) -> dict[str, float]:
    """In float64: the largest inverse error, the largest |reported log-det − log|det J||
    (J by autograd, one sample at a time), and the largest |forward + inverse log-det|."""
    block = block.double().eval()
    x = x.double().to(_device(block))
    with torch.no_grad():
        y, logdet = block(x)
        back, inverse_logdet = block.inverse(y)  # type: ignore[operator]
    brute = torch.stack(
        [
            torch.linalg.slogdet(jacobian(lambda v: block(v[None])[0][0], v))[1]  # type: ignore[no-untyped-call]  # unannotated in torch
            for v in x
        ]
    )
    return {
        "inverse error": (back - x).abs().max().item(),
        "log-det error": (logdet - brute).abs().max().item(),
        "log-dets cancel to": (logdet + inverse_logdet).abs().max().item(),
    }


def excite_coupling(
    coupling: Coupling, x: np.ndarray, std: float = 0.3, seed: int = 0
) -> Coupling:
    """A coupling that does something visible: initialise its network's ActNorms on ``x``, then
    give the zero-initialised output layer random weights (a fresh coupling is the identity).

    The network's hidden weights and its shift ``t`` are drawn from ``seed`` alone, so an additive and
    an affine coupling excited with the same seed on the same ``x`` shift by the same ``t(x₁)``; the
    affine one's log-scale outputs get a second, independent draw."""
    # drawn on the CPU, on any device
    net, generator = (
        coupling.net,
        torch.Generator().manual_seed(seed),
    )
    with torch.no_grad():
        for fc in (net.fc1, net.fc2):  # CouplingNet's own initialiser
            fc.weight.copy_(
                torch.empty(fc.weight.shape, dtype=fc.weight.dtype).normal_(
                    0.0, 0.05, generator=generator
                )
            )
    weight = net.out.linear.weight
    coupling.train()(torch.as_tensor(x, dtype=weight.dtype, device=weight.device))
    per_channel = coupling.outputs_per_channel
    with torch.no_grad():
        shift = torch.empty(weight.shape[0] // per_channel, weight.shape[1]).normal_(
            0.0, std, generator=generator
        )
        weight[0::per_channel] = shift.to(weight.device)
        if per_channel == 2:
            weight[1::2] = (
                torch.empty_like(shift)
                .normal_(0.0, std, generator=generator)
                .to(weight.device)
            )
    return coupling


def steps_per_coordinate(glow: Glow) -> np.ndarray:
    """How many flow steps each latent coordinate passes through before it is factored out."""
    depth = len(glow.levels[0])  # type: ignore[arg-type]
    steps = np.zeros(glow.dim, dtype=int)
    for level, d in enumerate(glow.dims):
        leaves_at = glow.dims[level + 1] if level + 1 < len(glow.dims) else 0
        steps[leaves_at:d] = depth * (level + 1)
    return steps


def density_grid(
    flow: Glow, x: np.ndarray, n: int = 150
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """``log p`` of a fitted 2-D flow on an ``n × n`` grid around ``x``: (xs, ys, log p, cell area)."""
    lo, hi = x.min(0) - 0.5, x.max(0) + 0.5
    xs, ys = np.meshgrid(np.linspace(lo[0], hi[0], n), np.linspace(lo[1], hi[1], n))
    param = next(flow.parameters())
    grid = torch.tensor(
        np.column_stack([xs.ravel(), ys.ravel()]),
        dtype=param.dtype,
        device=param.device,
    )
    with torch.no_grad():
        logp = flow.log_prob(grid).cpu().numpy().astype(np.float64).reshape(xs.shape)
    cell = (hi[0] - lo[0]) / (n - 1) * (hi[1] - lo[1]) / (n - 1)
    return xs, ys, logp, float(cell)


def latent(flow: torch.nn.Module, x: np.ndarray) -> np.ndarray:
    """``f(x)`` of a fitted flow, on whatever device the flow lives on, back as a NumPy array."""
    param = next(flow.parameters())
    with torch.no_grad():
        result: np.ndarray = (
            flow.eval()(torch.as_tensor(x, dtype=param.dtype, device=param.device))[0]
            .cpu()
            .numpy()
        )
        return result


def sample(flow: Glow, n: int, seed: int = 0) -> np.ndarray:
    """``n`` draws ``f⁻¹(z)`` of a fitted flow, ``z`` seeded on the CPU (the same on any device)."""
    return flow.sample(n, generator=torch.Generator().manual_seed(seed)).cpu().numpy()


def plot_before_after(block: torch.nn.Module, x: np.ndarray, title: str) -> Figure:
    """Scatter a 2-D cloud before and after ``block``; colour follows each point so you can track it."""
    block = block.float().eval()
    with torch.no_grad():
        y = (
            block(torch.as_tensor(x, dtype=torch.float32, device=_device(block)))[0]
            .cpu()
            .numpy()
        )
    colour = stats.rankdata(x[:, 0] + x[:, 1])
    both = np.concatenate([x, y])
    lo, hi = both.min() - 0.3, both.max() + 0.3
    fig, axes = plt.subplots(1, 2, figsize=(8.8, 3.8), layout="constrained")
    for ax, pts, when in zip(axes, (x, y), ("before", "after")):
        points = ax.scatter(pts[:, 0], pts[:, 1], c=colour, cmap="viridis", s=4)
        ax.set(
            title=f"{title}: {when}",
            xlabel="coordinate 1",
            ylabel="coordinate 2",
            xlim=(lo, hi),
            ylim=(lo, hi),
        )
        ax.set_aspect("equal")
    fig.colorbar(
        points,
        ax=axes.tolist(),
        label="rank of $x_1 + x_2$ before the block",
        shrink=0.85,
    )
    return fig
