"""A rare token (Gao et al., ICLR 2019, Theorem 3): the target at a small share of the contexts.

A token that is the target at a fraction ``share`` of the contexts and a non-target at the rest has
a finite optimal output vector, but one whose norm grows as ``share`` shrinks.
:func:`rare_token_optimum` finds it (Newton on the exact loss); :func:`rare_token_norm_bound` is the
lower bound on its norm that Chapter 4 states. The unseen token (``share = 0``), whose loss has no
minimiser at all, is :mod:`bertflow_mini.geometry.degeneration`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.optimize
import scipy.special

from bertflow_mini._checks import check_matrix
from bertflow_mini.geometry.degeneration import min_norm_point, origin_in_convex_hull


def _rare_token_loss(
    H: np.ndarray, c: np.ndarray, share: float
) -> Callable[[np.ndarray], tuple[float, np.ndarray, np.ndarray]]:
    """Loss, gradient and Hessian of a token that is the target at a fraction ``share`` of contexts."""

    def parts(w: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        z = H @ w - c
        p = scipy.special.expit(z)  # the probability the softmax gives the token
        loss = (
            (1 - share) * np.logaddexp(0.0, z) + share * np.logaddexp(0.0, -z)
        ).mean()
        grad = H.T @ (p - share) / len(H)  # push (p) minus pull (share), per context
        hess = (H * (p * (1 - p))[:, None]).T @ H / len(H)
        return float(loss), grad, hess

    return parts


def _rare_token_problem(
    H: np.ndarray, W_seen: np.ndarray, share: float
) -> tuple[np.ndarray, np.ndarray]:
    H = check_matrix(H, "H").astype(np.float64)
    W_seen = check_matrix(W_seen, "W_seen", dim=H.shape[1]).astype(np.float64)
    if not 0.0 < share < 1.0:
        raise ValueError(f"share must lie strictly between 0 and 1, got {share}")
    if np.linalg.matrix_rank(H) < H.shape[1]:
        raise ValueError(
            "the hidden states must span their space (rank d), else the loss can be flat "
            "along a direction and have no unique minimiser"
        )
    return H, scipy.special.logsumexp(H @ W_seen.T, axis=1)


def rare_token_optimum(
    H: np.ndarray,
    W_seen: np.ndarray,
    share: float,
    *,
    tol: float = 1e-12,
    max_iter: int = 500,
) -> np.ndarray:
    """The optimal embedding ``w*`` of a token that is the target at a fraction ``share`` of the contexts.

    With the other tokens' embeddings ``W_seen`` fixed and ``c_i = log Σ_j exp(w_jᵀh_i)``, the token's
    loss is ``mean_i [(1 − ε) log(1 + e^{wᵀh_i − c_i}) + ε log(1 + e^{c_i − wᵀh_i})]`` (ε = ``share``):
    it is the target with probability ε in every context. Its gradient is
    ``mean_i (p_i − ε) h_i``, the push of the probability ``p_i`` the model gives it minus the pull of
    its share. Strictly convex when the rows of ``H`` span ℝᵈ, so Newton's method with a backtracking
    line search finds the one minimiser. Gao et al.'s Theorem 3 (see :func:`rare_token_norm_bound`):
    when the origin is outside the hull of ``H``, ``‖w*‖`` grows without bound as ε → 0.
    """
    H, c = _rare_token_problem(H, W_seen, share)
    parts = _rare_token_loss(H, c, share)
    w = np.zeros(H.shape[1])
    loss, grad, hess = parts(w)
    for _ in range(max_iter):
        if np.linalg.norm(grad) <= tol:
            return w
        step = np.linalg.solve(hess + 1e-300 * np.eye(len(w)), -grad)
        t = 1.0
        while True:
            new = w + t * step
            new_loss, new_grad, new_hess = parts(new)
            if new_loss <= loss + 1e-4 * t * (grad @ step) or t < 1e-12:
                break
            t /= 2
        if new_loss >= loss and np.allclose(new, w, rtol=0.0, atol=1e-15):
            return w  # no further progress is representable
        w, loss, grad, hess = new, new_loss, new_grad, new_hess
    raise RuntimeError(f"Newton's method did not converge in {max_iter} iterations")


def rare_token_norm_bound(H: np.ndarray, W_seen: np.ndarray, share: float) -> float:
    """A lower bound on ``‖w*‖`` of :func:`rare_token_optimum` — our short version of Gao et al.'s
    Theorem 3 (rare tokens), valid when the origin is outside the hull of the rows of ``H``.

    With margin γ, ``M = max_i ‖h_i‖`` and ε = ``share``: along ``w = k u*`` with ``k = log(1/ε)/γ`` the
    loss is at most ``U = ε[(1 − ε)e^{−min c} + log 2 + max(max c, 0) + (M/γ) log(1/ε)]``, while any
    ``w`` has loss at least ``(1 − ε) · ½ e^{−‖w‖M − max c}`` (when that exponent is ≤ 0). So
    ``‖w*‖ ≥ [log((1 − ε)/(2U)) − max c] / M`` as soon as ``2U < 1 − ε``, which grows like
    ``log(1/ε)/M`` as ε → 0. Where the argument does not apply yet (larger ε), or the bound is
    negative, it returns 0 (``‖w*‖ ≥ 0``).
    """
    H, c = _rare_token_problem(H, W_seen, share)
    if origin_in_convex_hull(H):
        raise ValueError(
            "the origin is inside the convex hull of H: the bound needs a margin γ > 0"
        )
    gamma = float(np.linalg.norm(min_norm_point(H)))
    M = float(np.linalg.norm(H, axis=1).max())
    log_inv = np.log(1.0 / share)
    upper = share * (
        (1 - share) * np.exp(-c.min())
        + np.log(2.0)
        + max(c.max(), 0.0)
        + M / gamma * log_inv
    )
    if 2 * upper >= 1 - share:  # ε not yet small enough for the argument: only ‖w*‖ ≥ 0
        return 0.0
    return max(0.0, float((np.log((1 - share) / (2 * upper)) - c.max()) / M))
