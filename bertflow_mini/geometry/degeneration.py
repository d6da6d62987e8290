"""Representation degeneration (Gao et al., ICLR 2019): the theorem's pieces, small enough to check.

Gao et al. explain why word embeddings trained through a softmax with tied weights end up in a narrow
cone. The cross-entropy of one position with softmax input ``h`` and target ``y`` is::

    −log softmax(W h + b)_y = −(w_yᵀh + b_y) + log Σ_j exp(w_jᵀh + b_j)

A token ``x`` that is never a target only ever appears inside the log-sum-exp, so descent pushes
``w_x`` away from every hidden state at once (and, in BERT, its output bias ``b_x`` down). Their
Theorem 1: the uniformly negative directions ``{u : uᵀh_i < 0 for all i}`` form a convex set (A), and
when there is one, the unseen token's loss has no finite minimiser: it falls to its infimum along any
such direction (B). Which direction gradient descent takes — the max-margin one, ``−p/‖p‖`` for the
hull's point ``p`` nearest the origin — is Soudry et al. (2018)'s result for logistic losses on
separable data, which this loss is.

Pieces, in the order of Chapter 4 (``book/04-representation-degeneration.ipynb``):

(a) the convex hull and one unseen token, with or without an output bias
    (:func:`origin_in_convex_hull`, :func:`min_norm_point`, :func:`optimal_direction`,
    :func:`make_hidden_states`, :func:`unseen_token_dynamics`);
(b) the hyperplane every LayerNorm output lies on, and the margin it guarantees
    (:func:`layernorm_separator`);
(c) Gao et al.'s remedy, a penalty on the mean pairwise cosine (:func:`cosine_regularizer`), and a
    Zipf-distributed softmax toy to try it on in seconds (:func:`train_zipf_softmax`).
(d) a rare token, the target at a small share of the contexts, is :mod:`.rare_tokens`.

The measurements on the book's pretrained checkpoints live in :mod:`bertflow_mini.geometry.token_geometry`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.optimize
import scipy.special
import torch
import torch.nn.functional as F

from bertflow_mini._checks import check_matrix, check_tensor
from bertflow_mini._progress import tqdm
from bertflow_mini._threads import torch_threads
from bertflow_mini._training import gradient_step

# ============================================================================ (a) convex hull, unseen token


def origin_in_convex_hull(H: np.ndarray) -> bool:
    """Is the origin a convex combination of the rows of ``H``?

    A feasibility linear programme: find ``λ ≥ 0`` with ``Σλ = 1`` and ``Hᵀλ = 0``. If there is none, the
    separating-hyperplane theorem gives a ``u`` with ``uᵀh_i < 0`` for every row — the situation in which
    an unseen token's embedding runs off to infinity.
    """
    H = check_matrix(H, "H")
    n, d = H.shape
    A_eq = np.vstack([H.T, np.ones((1, n))])
    b_eq = np.concatenate([np.zeros(d), [1.0]])
    res = scipy.optimize.linprog(
        np.zeros(n), A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs"
    )
    if res.status == 0:
        return True
    if res.status == 2:
        return False
    raise RuntimeError(f"linprog failed: {res.message}")


def min_norm_point(H: np.ndarray) -> np.ndarray:
    """The point of the convex hull of the rows of ``H`` closest to the origin (zero if the origin is inside).

    The quadratic programme ``min ‖Hᵀλ‖²`` over the simplex (λ ≥ 0, Σλ = 1), solved as non-negative
    least squares (Lawson–Hanson): ``min ‖[Hᵀ; w·1ᵀ] λ − [0; w]‖`` with λ ≥ 0, where the heavily
    weighted last row enforces Σλ = 1. Exact in a finite number of steps, and fast for hundreds of points.
    """
    H = check_matrix(H, "H").astype(np.float64)
    w = 1e4 * (1.0 + np.abs(H).max())
    A = np.vstack([H.T, np.full((1, H.shape[0]), w)])
    b = np.concatenate([np.zeros(H.shape[1]), [w]])
    lam, _ = scipy.optimize.nnls(A, b, maxiter=50 * A.shape[1])
    if lam.sum() <= 0:
        raise RuntimeError(
            "min-norm point: the non-negative least-squares solve returned λ = 0"
        )
    result: np.ndarray = H.T @ (lam / lam.sum())
    return result


def optimal_direction(H: np.ndarray) -> np.ndarray:
    """The unit ``u`` minimising ``max_i uᵀh_i``: the direction an unseen token's embedding heads to.

    By minimax duality it is ``−p/‖p‖`` for the min-norm point ``p`` of the hull, and then
    ``max_i uᵀh_i = −‖p‖`` (the margin equals the distance). Gradient descent on the unseen token's loss
    — a logistic loss on separable data — converges in direction to exactly this max-margin ``u``
    (Soudry et al., 2018), though only logarithmically fast. Raises if the origin is in the hull.
    """
    p = min_norm_point(H)
    norm = np.linalg.norm(p)
    if norm < 1e-8 * max(1.0, np.abs(H).max()):
        raise ValueError(
            "the origin is inside the convex hull of H: no direction has u·h < 0 for all h"
        )
    result: np.ndarray = -p / norm
    return result


def make_hidden_states(
    n: int, d: int, origin_inside: bool, seed: int = 0, margin: float = 0.5
) -> np.ndarray:
    """``n`` hidden states in ``d`` dimensions, with the origin inside their convex hull or not.

    Outside: Gaussian points whose component along a random unit ``u`` is replaced by ``−(|z| + margin)``,
    so ``uᵀh ≤ −margin`` for every point (a guaranteed separation). Inside: plain Gaussian points
    (``n > d`` needed), redrawn in the rare case the LP says the origin escaped their hull.
    """
    if n < 1 or d < 1:
        raise ValueError(f"n and d must be positive, got n={n}, d={d}")
    rng = np.random.default_rng(seed)
    if not origin_inside:
        u = rng.normal(size=d)
        u /= np.linalg.norm(u)
        g = rng.normal(size=(n, d))
        z = g @ u
        return g - np.outer(z + np.abs(z) + margin, u)
    if n <= d:
        raise ValueError(
            f"the origin can be inside the hull of n points in d dims only if n > d (n={n}, d={d})"
        )
    for _ in range(100):
        H = rng.normal(size=(n, d))
        if origin_in_convex_hull(H):
            return H
    raise RuntimeError(
        f"could not draw {n} points around the origin in {d} dims; use more points"
    )


@dataclass
class UnseenTokenRun:
    """Trajectory of an unseen token under gradient descent (index = step, 0 = init).

    With ``bias=True`` the parameter is ``(w, b)``: the embedding and the token's output bias.
    """

    norms: np.ndarray  # ‖w_t‖ (the embedding only, never the bias)
    # mean_i log(1 + exp(w_tᵀh_i + b_t − c_i)): the part of the loss that moves
    loss: np.ndarray
    # cosine with the max-margin direction; NaN when there is none
    cos_to_optimal: np.ndarray
    w: np.ndarray  # final embedding
    # max-margin direction of the parameter (length d, or d + 1 with a bias)
    u: np.ndarray | None
    biases: np.ndarray | None = None  # b_t, when the token has a bias


def with_bias_column(H: np.ndarray) -> np.ndarray:
    """``[H, 1]``: a bias ``b`` is the weight of a constant feature, ``wᵀh + b = (w, b)ᵀ(h, 1)``."""
    H = check_matrix(H, "H")
    return np.hstack([H, np.ones((len(H), 1))])


def step_size_limit(X: np.ndarray) -> float:
    """The largest step for which Soudry et al. (2018)'s theorem covers gradient descent on
    ``mean_i log(1 + exp(wᵀx_i − c_i))`` over the rows ``x_i`` of ``X``: ``η < 2/β``.

    ``β`` is the loss's smoothness, the largest eigenvalue its Hessian
    ``mean_i σ'(·) x_i x_iᵀ`` can reach; ``σ' ≤ 1/4`` (an equality where ``wᵀx_i = c_i``), so
    ``β = σ_max(X)² / (4n)`` and the limit is ``8n / σ_max(X)²``. Their theorem writes the loss as a
    sum, whose ``β`` is ``n`` times larger; :func:`unseen_token_dynamics` descends on the mean.
    """
    x = check_matrix(X, "X")
    return float(8 * len(x) / np.linalg.norm(x, 2) ** 2)


def unseen_token_dynamics(
    H: np.ndarray,
    W_seen: np.ndarray,
    steps: int = 5000,
    lr: float = 1.0,
    seed: int = 0,
    init_scale: float = 0.1,
    *,
    bias: bool = False,
) -> UnseenTokenRun:
    """Gradient descent on the embedding ``w`` (and with ``bias=True`` the bias ``b``, from 0) of a
    token that is never a target.

    The hidden states ``H`` (n×d) and the seen tokens' embeddings ``W_seen`` (V×d) stay fixed. With
    ``c_i = log Σ_j exp(w_jᵀh_i)`` over the seen tokens, the cross-entropy of context ``i`` is
    ``−w_{y_i}ᵀh_i + c_i + log(1 + exp(wᵀh_i + b − c_i))`` — only the last term involves ``(w, b)``,
    and it does not depend on which seen token was the target. Its gradient is
    ``mean_i σ(wᵀh_i + b − c_i) (h_i, 1)``: with a bias, descent runs on the points ``(h_i, 1)``.
    """
    H = check_matrix(H, "H")
    W_seen = check_matrix(W_seen, "W_seen", dim=H.shape[1])
    if steps < 1 or lr <= 0:
        raise ValueError(f"need steps >= 1 and lr > 0, got steps={steps}, lr={lr}")
    c = scipy.special.logsumexp(H @ W_seen.T, axis=1)
    X = with_bias_column(H) if bias else H
    w = np.asarray(np.random.default_rng(seed).normal(size=H.shape[1])) * init_scale
    w = np.append(w, 0.0) if bias else w
    ws = np.empty((steps + 1, X.shape[1]))
    loss = np.empty(steps + 1)
    for t in range(steps + 1):
        z = X @ w - c
        ws[t], loss[t] = w, np.logaddexp(0.0, z).mean()
        if t < steps:
            w = w - lr * (X.T @ scipy.special.expit(z)) / len(X)
    full = np.linalg.norm(ws, axis=1)
    unit = ws / np.maximum(full[:, None], 1e-300)
    u = None if origin_in_convex_hull(X) else optimal_direction(X)
    d = H.shape[1]
    return UnseenTokenRun(
        norms=np.linalg.norm(ws[:, :d], axis=1),
        loss=loss,
        cos_to_optimal=np.full(steps + 1, np.nan) if u is None else unit @ u,
        w=w[:d],
        u=u,
        biases=ws[:, d].copy() if bias else None,
    )


# ============================================================================ (b) LayerNorm's hyperplane


def layernorm_separator(
    gain: np.ndarray, shift: np.ndarray
) -> tuple[np.ndarray, float]:
    """A unit ``u`` and a margin ``m ≥ 0`` with ``uᵀh = −m`` for *every* output ``h`` of a LayerNorm.

    ``LN(a) = g ⊙ z + β`` with ``1ᵀz = 0`` for every input, so with ``v = 1 ⊘ g`` every output has
    ``vᵀh = vᵀβ``: one affine hyperplane. ``u = −sign(vᵀβ) v/‖v‖`` gives ``m = |vᵀβ|/‖v‖``: a margin
    that holds for all inputs at once, hence a lower bound on the margin of any particular set of
    outputs (:func:`min_norm_point` computes that one). ``m = 0`` when ``vᵀβ = 0``: no guarantee.
    """
    g = np.asarray(gain, dtype=np.float64)
    beta = np.asarray(shift, dtype=np.float64)
    if g.ndim != 1 or g.shape != beta.shape:
        raise ValueError(
            f"gain {g.shape} and shift {beta.shape} must be 1-D of equal length"
        )
    if not (np.isfinite(g).all() and np.isfinite(beta).all()) or (g == 0).any():
        raise ValueError("gain and shift must be finite, and no gain may be 0")
    v = 1.0 / g
    s = v @ beta
    u = -(np.sign(s) or 1.0) * v / np.linalg.norm(v)
    return u, float(abs(s) / np.linalg.norm(v))


# ============================================================================ (c) the cosine regulariser


def cosine_regularizer(E: torch.Tensor) -> torch.Tensor:
    """Mean pairwise cosine similarity of the rows of ``E``, in O(n·d) instead of O(n²·d).

    With unit rows ``ê_i`` and ``s = Σ_i ê_i``: ``‖s‖² = Σ_i Σ_j ê_iᵀê_j = n + Σ_{i≠j} cos(e_i, e_j)``, so
    the mean over the ``n(n−1)`` ordered pairs is ``(‖s‖² − n) / (n(n−1))``. (We subtract ``Σ‖ê_i‖²``,
    which is ``n`` unless a row is exactly zero.) Adding ``γ ×`` this to the loss is Gao et al.'s
    remedy: it pays the embeddings to spread out in direction. Differentiable.
    """
    E = check_tensor(E, "E")
    n = E.shape[0]
    if n < 2:
        raise ValueError(f"need at least 2 rows for pairwise cosines, got {n}")
    U = F.normalize(E, dim=1)
    s = U.sum(dim=0)
    return (s @ s - (U * U).sum()) / (n * (n - 1))


# ============================================================================ (c) a Zipf vocabulary


@dataclass
class ZipfRun:
    """A trained softmax toy: token embeddings, how often each token was a target, and the loss curve."""

    W: np.ndarray  # (vocab_size, dim) token embeddings
    H: np.ndarray  # (n_contexts, dim) context vectors
    counts: np.ndarray  # times each token occurred as a target in the training corpus
    zipf_p: np.ndarray  # the Zipf marginal the corpus was drawn from
    history: pd.DataFrame  # step, loss (cross-entropy, nats), mean_cosine of W


def train_zipf_softmax(
    vocab_size: int = 1000,
    dim: int = 16,
    n_contexts: int = 200,
    steps: int = 400,
    zipf_s: float = 1.0,
    seed: int = 0,
    *,
    n_samples: int = 20_000,
    rank: int = 8,
    lr: float = 0.03,
    cosine_reg: float = 0.0,
    track_every: int = 50,
    threads: int | None = 1,
    progress: bool = False,
) -> ZipfRun:
    """Train context vectors ``H`` and token embeddings ``W`` (logits ``H Wᵀ``) on a Zipf-distributed corpus.

    The data: token ``x`` has marginal weight ``π_x ∝ (x + 1)^(−zipf_s)``; context ``c`` prefers tokens by
    a rank-``rank`` random affinity, ``p(x|c) ∝ π_x exp(a_cᵀb_x)``. We draw ``n_samples`` (context, token)
    pairs — a *finite* corpus, so the tail tokens occur a handful of times or never, which is what starves
    them of "pull" gradients — and minimise the corpus cross-entropy (full batch on the count matrix)
    with Adam, plus ``cosine_reg ×`` :func:`cosine_regularizer` of ``W``. Adam, as in real language-model
    training, moves a parameter at a similar pace whatever the size of its gradient, so the rare tokens'
    small but one-sided push shows within a few hundred steps. ``threads``: torch CPU threads
    during training (``None`` keeps torch's setting).

    What to look at afterwards: against frequency (``counts``), the norm of each row of ``W``, its
    k-NN distance (:func:`bertflow_mini.geometry.neighbours.knn`) and its projection on the mean context vector
    ``mean(H)``: rare tokens end up far out, sparse, and on the side facing away from the contexts.
    """
    if min(vocab_size, dim, n_contexts, steps, n_samples, rank) < 1:
        raise ValueError(
            "vocab_size, dim, n_contexts, steps, n_samples and rank must be positive"
        )
    rng = np.random.default_rng(seed)
    zipf_p = np.arange(1, vocab_size + 1) ** -float(zipf_s)
    zipf_p /= zipf_p.sum()
    A = rng.normal(size=(n_contexts, rank)) / np.sqrt(rank)
    B = rng.normal(size=(vocab_size, rank))
    cond = scipy.special.softmax(np.log(zipf_p)[None, :] + A @ B.T, axis=1)
    joint = (cond / n_contexts).ravel()
    pairs = rng.choice(joint.size, size=n_samples, p=joint / joint.sum())
    counts_cx = np.bincount(pairs, minlength=joint.size).reshape(n_contexts, vocab_size)

    with torch_threads(threads):
        gen = torch.Generator().manual_seed(seed)
        Hp = torch.nn.Parameter(
            torch.randn(n_contexts, dim, generator=gen) / np.sqrt(dim)
        )
        Wp = torch.nn.Parameter(
            torch.randn(vocab_size, dim, generator=gen) / np.sqrt(dim)
        )
        N = torch.as_tensor(counts_cx, dtype=torch.float32)
        opt = torch.optim.Adam([Hp, Wp], lr=lr)
        rows = []
        for step in tqdm(range(steps + 1), disable=not progress, desc="zipf softmax"):
            ce = -(N * torch.log_softmax(Hp @ Wp.T, dim=1)).sum() / N.sum()
            reg = cosine_regularizer(Wp)
            if step % track_every == 0 or step == steps:
                rows.append(
                    {"step": step, "loss": ce.item(), "mean_cosine": reg.item()}
                )
            if step == steps:
                break
            gradient_step(ce + cosine_reg * reg, opt)
    return ZipfRun(
        W=Wp.detach().numpy().copy(),
        H=Hp.detach().numpy().copy(),
        counts=counts_cx.sum(axis=0),
        zipf_p=zipf_p,
        history=pd.DataFrame(rows),
    )
