"""Chapter 1, made executable: a softmax model's logits approximate PMI plus log-frequency.

Li et al. (2020) start from the fact that a model trained with a softmax over tokens, such as BERT's
masked-LM head, learns ``p(x|c) = exp(h_cᵀw_x) / Σ_x' exp(h_cᵀw_x')``. At the optimum the logits match
the log-probabilities up to a per-context constant ``λ_c`` (the log of the partition function), so::

    h_cᵀw_x ≈ log p(x|c) + λ_c = PMI(x, c) + log p(x) + λ_c

with ``PMI(x, c) = log p(x, c) / (p(x) p(c))``. The ``log p(x)`` term is why word frequency leaks into
the geometry of ``w_x``. Here we check the identity on a joint distribution we know exactly
(:func:`make_joint`), then on word co-occurrences from real sentences
(:mod:`bertflow_mini.chapters.cooccurrence`),
always judged on counts the model did not train on (:func:`fit_report`, :func:`cross_entropy`):
a training-set fit rewards memorising the sample. :func:`regress_logits_on_terms` fits PMI and
``log p(x)`` with a slope each; :func:`split_half_ceiling` says how high an ``R²`` against a noisy
empirical ``log p(x|c)`` can go at all, and :func:`split_half_reliability` how noisy any two-half
estimate is (the model's side of that regression, for one). The real MLM head is probed in
:mod:`bertflow_mini.chapters.mlm_probe`.

Convention throughout: matrices are ``(n_contexts, n_tokens)``; row ``c`` is a context, column ``x`` a token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.special
import scipy.stats
import torch

from bertflow_mini._checks import check_matrix
from bertflow_mini._progress import tqdm
from bertflow_mini._training import gradient_step

# ----------------------------------------------------------------------------- a distribution we know


def make_joint(
    n_contexts: int,
    n_tokens: int,
    rank: int,
    seed: int = 0,
    noise: float = 0.3,
    zipf_s: float = 1.0,
) -> np.ndarray:
    """A known joint distribution ``p(c, x)`` (rows contexts, columns tokens, summing to 1).

    Built as ``log p(c, x) = a_cᵀb_x + ε_cx − s·log(rank of x) + const``: a rank-``rank`` Gaussian
    interaction (``a, b ~ N(0, 1/√rank)`` per entry, so the interaction has unit variance), plus
    i.i.d. noise ``ε ~ N(0, noise²)`` that makes the log-joint full rank, plus a Zipf-like term so tokens
    have very different marginal frequencies, as words do.
    """
    if min(n_contexts, n_tokens, rank) < 1 or noise < 0:
        raise ValueError(
            "n_contexts, n_tokens and rank must be positive, noise non-negative"
        )
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n_contexts, rank)) / rank**0.25
    B = rng.normal(size=(n_tokens, rank)) / rank**0.25
    logits = A @ B.T + noise * rng.normal(size=(n_contexts, n_tokens))
    logits -= zipf_s * np.log(np.arange(1, n_tokens + 1))[None, :]
    result: np.ndarray = scipy.special.softmax(logits.ravel()).reshape(
        n_contexts, n_tokens
    )
    return result


def sample_corpus(
    joint: np.ndarray, n: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``n`` i.i.d. (context, token) pairs from ``joint``; returns ``(context_ids, token_ids)``."""
    joint = check_matrix(joint, "joint")
    if (joint < 0).any() or not np.isclose(joint.sum(), 1.0):
        raise ValueError("joint must be non-negative and sum to 1")
    flat = np.random.default_rng(seed).choice(
        joint.size, size=n, p=joint.ravel() / joint.sum()
    )
    return flat // joint.shape[1], flat % joint.shape[1]


def counts_matrix(
    contexts: np.ndarray, tokens: np.ndarray, n_contexts: int, n_tokens: int
) -> np.ndarray:
    """Co-occurrence counts ``N[c, x]`` of the pairs ``(contexts[i], tokens[i])``."""
    contexts, tokens = np.asarray(contexts), np.asarray(tokens)
    if contexts.shape != tokens.shape or contexts.ndim != 1:
        raise ValueError("contexts and tokens must be 1-D arrays of the same length")
    if len(contexts) and (
        contexts.min() < 0
        or contexts.max() >= n_contexts
        or tokens.min() < 0
        or tokens.max() >= n_tokens
    ):
        raise ValueError("context or token id out of range")
    return np.bincount(
        contexts * n_tokens + tokens, minlength=n_contexts * n_tokens
    ).reshape(n_contexts, n_tokens)


# ----------------------------------------------------------------------------- PMI


def _probabilities(counts_or_joint: np.ndarray, smoothing: float) -> np.ndarray:
    P = check_matrix(counts_or_joint, "counts_or_joint").astype(np.float64)
    if (P < 0).any() or smoothing < 0:
        raise ValueError("counts and smoothing must be non-negative")
    P = P + smoothing
    if P.sum() <= 0:
        raise ValueError("all counts are zero")
    result: np.ndarray = P / P.sum()
    return result


def log_marginal(
    counts_or_joint: np.ndarray, axis: int = 0, smoothing: float = 0.0
) -> np.ndarray:
    """``log p(x)`` (``axis=0``, summing over contexts) or ``log p(c)`` (``axis=1``), after add-``smoothing``."""
    with np.errstate(divide="ignore"):
        result: np.ndarray = np.log(
            _probabilities(counts_or_joint, smoothing).sum(axis=axis)
        )
        return result


def pmi_matrix(counts_or_joint: np.ndarray, smoothing: float = 0.0) -> np.ndarray:
    """``PMI[c, x] = log p(c, x) − log p(c) − log p(x)`` from counts or from a joint distribution.

    ``smoothing`` is added to every cell first (add-k / Laplace). Without it a pair never seen gets
    ``−inf``, which is the honest empirical answer; :func:`regress_logits_on_pmi` leaves such cells out.
    """
    P = _probabilities(counts_or_joint, smoothing)
    with np.errstate(divide="ignore", invalid="ignore"):
        result: np.ndarray = (
            np.log(P)
            - np.log(P.sum(axis=1, keepdims=True))
            - np.log(P.sum(axis=0, keepdims=True))
        )
        return result


# ----------------------------------------------------------------------------- the softmax model


@dataclass
class SoftmaxModel:
    """A trained ``p(x|c) = softmax_x(h_cᵀw_x + b_x)``."""

    H: np.ndarray  # (n_contexts, dim) context vectors h_c
    W: np.ndarray  # (n_tokens, dim) token vectors w_x
    b: np.ndarray | None  # (n_tokens,) token biases, or None
    losses: np.ndarray  # cross-entropy (nats per pair) at each step

    def logits(self) -> np.ndarray:
        """``h_cᵀw_x (+ b_x)`` for every context and token."""
        out = self.H @ self.W.T
        result: np.ndarray = out if self.b is None else out + self.b[None, :]
        return result


def train_softmax_on_counts(
    counts: np.ndarray,
    dim: int,
    steps: int = 500,
    lr: float = 0.05,
    seed: int = 0,
    bias: bool = False,
    progress: bool = False,
) -> SoftmaxModel:
    """Fit ``h_c``, ``w_x`` (and ``b_x``) by minimising the cross-entropy ``−Σ N[c,x] log p(x|c) / Σ N``.

    This is exactly the corpus loss summed pair by pair, computed once per step on the count matrix (full
    batch, Adam). Without a bias the logits must carry ``log p(x)`` themselves; with ``bias=True`` that
    frequency term can move into ``b_x``, and ``h_cᵀw_x`` alone is left closer to PMI + ``λ_c``.
    """
    N = check_matrix(counts, "counts")
    if (N < 0).any() or N.sum() <= 0:
        raise ValueError("counts must be non-negative and not all zero")
    if dim < 1 or steps < 1 or lr <= 0:
        raise ValueError("dim and steps must be positive, lr > 0")
    gen = torch.Generator().manual_seed(seed)
    n_c, n_x = N.shape
    H = torch.nn.Parameter(
        torch.randn(n_c, dim, generator=gen, dtype=torch.float64) * 0.1
    )
    W = torch.nn.Parameter(
        torch.randn(n_x, dim, generator=gen, dtype=torch.float64) * 0.1
    )
    b = torch.nn.Parameter(torch.zeros(n_x, dtype=torch.float64)) if bias else None
    Nt = torch.as_tensor(N, dtype=torch.float64)
    opt = torch.optim.Adam([p for p in (H, W, b) if p is not None], lr=lr)
    losses = np.empty(steps)
    for step in tqdm(range(steps), disable=not progress, desc="softmax model"):
        logits = H @ W.T if b is None else H @ W.T + b
        loss = -(Nt * torch.log_softmax(logits, dim=1)).sum() / Nt.sum()
        losses[step] = gradient_step(loss, opt)
    return SoftmaxModel(
        H=H.detach().numpy(),
        W=W.detach().numpy(),
        b=None if b is None else b.detach().numpy(),
        losses=losses,
    )


def train_softmax_model(
    contexts: np.ndarray,
    tokens: np.ndarray,
    n_contexts: int,
    n_tokens: int,
    dim: int,
    steps: int = 500,
    lr: float = 0.05,
    seed: int = 0,
    progress: bool = False,
    bias: bool = False,
) -> SoftmaxModel:
    """Train ``p(x|c) = softmax(h_cᵀw_x [+ b_x])`` on a corpus of (context, token) pairs.

    The loss is the mean cross-entropy over the pairs; since it only depends on how often each pair
    occurs, we count them once and train on the counts (:func:`train_softmax_on_counts`).
    """
    N = counts_matrix(contexts, tokens, n_contexts, n_tokens)
    return train_softmax_on_counts(
        N, dim, steps=steps, lr=lr, seed=seed, bias=bias, progress=progress
    )


# ----------------------------------------------------------------------------- logits vs PMI


def regress_logits_on_pmi(
    logits: np.ndarray, pmi: np.ndarray, log_px: np.ndarray
) -> dict[str, Any]:
    """Fit ``logits[c, x] ≈ a · (PMI[c, x] + log p(x)) + λ_c`` and report how well it holds.

    Softmax is shift-invariant: adding ``λ_c`` to every logit of context ``c`` leaves ``p(·|c)`` unchanged,
    so only differences *within* a context are determined. We therefore centre both sides per context
    (subtract each row's mean over its usable cells), which removes every ``λ_c`` at once, and fit the
    single slope ``a`` through the origin on the pooled centred values. ``r2`` is the fraction of the
    within-context variance of the logits explained. Cells where PMI is not finite (pairs never seen)
    are left out. Returns ``slope``, ``r2``, ``pearson``, ``spearman``, ``lambda_c`` (one per context,
    NaN for a context with no usable cell) and ``n_cells``.
    """
    L = check_matrix(logits, "logits")
    pmi = np.asarray(pmi, dtype=np.float64)
    log_px = np.asarray(log_px, dtype=np.float64)
    if pmi.shape != L.shape or log_px.shape != (L.shape[1],):
        raise ValueError(
            f"need pmi of shape {L.shape} and log_px of shape ({L.shape[1]},), "
            f"got {pmi.shape} and {log_px.shape}"
        )
    y = pmi + log_px[None, :]  # = log p(x|c)
    ok = np.isfinite(y)
    if ok.sum() < 3:
        raise ValueError("fewer than 3 cells with a finite PMI")
    rows = ok.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_l = np.where(ok, L, 0.0).sum(axis=1) / rows
        mean_y = np.where(ok, y, 0.0).sum(axis=1) / rows
    lc, yc = (L - mean_l[:, None])[ok], (y - mean_y[:, None])[ok]
    slope = float(lc @ yc / (yc @ yc))
    resid = lc - slope * yc
    return {
        "slope": slope,
        "r2": float(1.0 - resid @ resid / (lc @ lc)),
        "pearson": float(scipy.stats.pearsonr(yc, lc).statistic),
        "spearman": float(scipy.stats.spearmanr(yc, lc).statistic),
        "lambda_c": mean_l - slope * mean_y,
        "n_cells": int(ok.sum()),
    }


# ----------------------------------------------------------------------------- held-out fit


def cross_entropy(logits: np.ndarray, counts: np.ndarray) -> float:
    """Mean cross-entropy (nats per pair) of ``p(x|c) = softmax_x(logits[c])`` on the pairs ``counts``.

    On counts the model was *not* trained on, this is the held-out loss: it can only go down by learning
    the distribution, not the sample. Its floor is the true conditional entropy ``H(x|c)``.
    """
    L = check_matrix(logits, "logits")
    N = check_matrix(counts, "counts", dim=L.shape[1])
    if N.shape != L.shape or (N < 0).any() or N.sum() <= 0:
        raise ValueError(
            f"counts must be non-negative, not all zero, of shape {L.shape}; got {N.shape}"
        )
    return float(-(N * scipy.special.log_softmax(L, axis=1)).sum() / N.sum())


def conditional_entropy(joint: np.ndarray) -> float:
    """``H(x|c) = −Σ p(c, x) log p(x|c)`` in nats: the best cross-entropy any model can reach."""
    P = _probabilities(joint, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = P * (np.log(P) - np.log(P.sum(axis=1, keepdims=True)))
    return float(-np.nansum(terms))


def fit_report(
    model: SoftmaxModel, train: np.ndarray, held_out: np.ndarray
) -> dict[str, float]:
    """Training fit against held-out fit of one model: ``R²`` of its logits on each sample's empirical
    ``log p(x|c)`` (:func:`regress_logits_on_pmi`) and its cross-entropy on each sample."""
    L = model.logits()
    fits = {
        name: regress_logits_on_pmi(L, pmi_matrix(N), log_marginal(N))
        for name, N in (("train", train), ("held-out", held_out))
    }
    return {
        "R² train": fits["train"]["r2"],
        "R² held-out": fits["held-out"]["r2"],
        "loss train": cross_entropy(L, train),
        "loss held-out": cross_entropy(L, held_out),
    }


def regress_logits_on_terms(
    logits: np.ndarray, terms: dict[str, np.ndarray]
) -> dict[str, Any]:
    """Fit ``logits[c, x] ≈ Σ_k a_k · terms[k][c, x] + λ_c``: one slope per term, a free constant
    per context (removed, as in :func:`regress_logits_on_pmi`, by centring each context's row over
    the cells where every term is finite). Returns ``slopes`` (a dict), ``r2`` and ``n_cells``.

    With ``terms = {"PMI": pmi, "log p(x)": log_px}`` this asks how much of the logits is the
    context-specific part and how much is frequency, instead of forcing the two slopes to be equal.
    """
    L = check_matrix(logits, "logits")
    if not terms:
        raise ValueError("need at least one term")
    T = {
        k: np.broadcast_to(np.asarray(v, dtype=np.float64), L.shape)
        for k, v in terms.items()
    }
    ok = np.logical_and.reduce([np.isfinite(v) for v in T.values()])
    if ok.sum() <= len(T) + 1:
        raise ValueError("too few cells where every term is finite")

    def centred(M: np.ndarray) -> np.ndarray:
        M = np.where(ok, M, 0.0)
        result: np.ndarray = (
            M
            - M.sum(axis=1, keepdims=True)
            / np.maximum(ok.sum(axis=1, keepdims=True), 1)
        )[ok]
        return result

    y = centred(L)
    X = np.column_stack([centred(v) for v in T.values()])
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ coef
    return {
        "slopes": dict(zip(T, coef.tolist())),
        "r2": float(1 - resid @ resid / (y @ y)),
        "n_cells": int(ok.sum()),
    }


# ----------------------------------------------------------------------------- noise ceiling


def split_half_ceiling(
    half_a: np.ndarray,
    half_b: np.ndarray,
    cells: np.ndarray | None = None,
    offset: np.ndarray | None = None,
) -> dict[str, Any]:
    """The highest ``R²`` any predictor can reach against an empirical ``log p(x|c)``.

    ``half_a`` and ``half_b`` count the same (context, token) cells in two disjoint
    halves of a corpus (say, its even and its odd sentences). On the cells of ``cells``
    (default: all) that both halves saw, each half's ``log p(x|c)``, centred per context
    as :func:`regress_logits_on_pmi` centres it, is correlated with the other's: the
    split-half correlation ``r``. A half carries twice the sampling noise of the whole
    corpus, so the whole corpus' estimate has reliability ``2r / (1 + r)``
    (Spearman–Brown): the share of its within-context variance that is not sampling
    noise. An ``R²`` against a noisy target is the ``R²`` against the truth times that
    share, so even the true ``log p(x|c)`` would reach only that ``ceiling``. Cells one
    half never saw are left out: they are the noisiest, so the ceiling errs high.

    ``offset`` (one per token) is subtracted from both halves first: with the corpus's
    ``log p(x)`` (nearly noise-free), ``ceiling`` is PMI's reliability (same noise).
    Returns ``r``, ``ceiling`` and ``n_cells``.
    """
    A, B = check_matrix(half_a, "half_a"), check_matrix(half_b, "half_b")
    if A.shape != B.shape or (A < 0).any() or (B < 0).any():
        raise ValueError(
            f"half_a {A.shape} and half_b {B.shape} must be non-negative counts "
            "of one shape"
        )
    shift = np.zeros(A.shape[1])
    if offset is not None:
        shift = np.asarray(offset, dtype=float).reshape(-1)
        if shift.shape != (A.shape[1],) or not np.isfinite(shift).all():
            raise ValueError(f"offset needs one finite value per token ({A.shape[1]})")
    with np.errstate(divide="ignore", invalid="ignore"):
        log_a, log_b = (
            np.log(N) - np.log(N.sum(axis=1, keepdims=True)) - shift for N in (A, B)
        )
    # a cell one half never saw is log 0 = -inf: split_half_reliability leaves it out
    out = split_half_reliability(log_a, log_b, cells=cells)
    return {"r": out["r"], "ceiling": out["reliability"], "n_cells": out["n_cells"]}


def split_half_reliability(
    half_a: np.ndarray, half_b: np.ndarray, cells: np.ndarray | None = None
) -> dict[str, Any]:
    """Spearman–Brown reliability of a per-cell estimate made from two disjoint halves.

    ``half_a`` and ``half_b`` hold the same ``(n_contexts, n_tokens)`` quantity (say, a
    model's log-probabilities averaged over the even and over the odd occurrences of each
    context), estimated from two halves of the data. On the cells of ``cells`` (default:
    all) where both are finite, each is centred per context (as
    :func:`regress_logits_on_pmi` centres) and the two are correlated: ``r``. The
    estimate from both halves together has reliability ``2r / (1 + r)``, the share of its
    within-context variance that is not sampling noise. Two noisy sides of a regression
    attenuate its ``R²`` by the product of their reliabilities (Spearman's correction).
    :func:`split_half_ceiling` is this with each half's empirical ``log p(x|c)``.
    Returns ``r``, ``reliability`` and ``n_cells``.
    """
    A, B = (np.asarray(h, dtype=np.float64) for h in (half_a, half_b))
    if A.ndim != 2 or A.shape != B.shape:
        raise ValueError(f"half_a {A.shape} and half_b {B.shape} must be one 2-D shape")
    ok = np.isfinite(A) & np.isfinite(B)  # -inf: a cell one half never saw
    if cells is not None:
        cells = np.asarray(cells, dtype=bool)
        if cells.shape != A.shape:
            raise ValueError(
                f"cells {cells.shape} must have the halves' shape {A.shape}"
            )
        ok &= cells
    fit = regress_logits_on_terms(
        np.where(ok, A, 0.0), {"half b": np.where(ok, B, -np.inf)}
    )
    r = float(np.sign(fit["slopes"]["half b"]) * np.sqrt(max(fit["r2"], 0.0)))
    return {"r": r, "reliability": max(2 * r / (1 + r), 0.0), "n_cells": fit["n_cells"]}
