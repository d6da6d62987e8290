"""How isotropic is a set of embeddings? The numbers the chapters print before and after each transform.

Raw BERT sentence embeddings occupy a narrow cone: any two of them have a high cosine, and a few
directions carry most of the variance. Each measure below looks at that from one side:

* ``mean_random_cosine`` — the average cosine between two *unrelated* sentences (0 if isotropic);
* ``isotropy_score`` — Mu & Viswanath's partition-function ratio I(W) (1 if isotropic, → 0 in a cone);
* ``explained_variance_top`` — the share of variance in the top principal components (k/d if isotropic);
* ``norm_stats`` — the spread of vector lengths.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from ._checks import check_matrix


def _row_norms(x: np.ndarray, name: str) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1)
    if (norms == 0).any():
        raise ValueError(f"{name} has {int((norms == 0).sum())} all-zero row(s): their cosine is undefined")
    return norms


def random_pair_cosines(X: np.ndarray, n_pairs: int = 10_000, seed: int = 0) -> np.ndarray:
    """Cosine similarities of ``n_pairs`` random pairs of distinct rows (their histogram is the picture)."""
    x = check_matrix(X, "X", min_rows=2).astype(np.float64)
    if n_pairs < 1:
        raise ValueError(f"n_pairs must be >= 1, got {n_pairs}")
    norms = _row_norms(x, "X")
    rng = np.random.default_rng(seed)
    i = rng.integers(0, len(x), size=n_pairs)
    j = rng.integers(0, len(x) - 1, size=n_pairs)
    j = j + (j >= i)  # uniform over the n − 1 rows other than i
    return np.einsum("pd,pd->p", x[i], x[j]) / (norms[i] * norms[j])


def mean_random_cosine(X: np.ndarray, n_pairs: int | None = 10_000, seed: int = 0) -> float:
    """Mean cosine similarity of ``n_pairs`` random pairs of distinct rows (:func:`random_pair_cosines`).

    ``n_pairs=None`` gives the exact mean over *all* pairs i ≠ j, in O(n·d) instead of O(n²·d):
    with unit rows uᵢ, Σᵢ≠ⱼ uᵢ·uⱼ = ‖Σᵢ uᵢ‖² − n, so the mean is (‖Σᵢ uᵢ‖² − n) / (n(n − 1)).
    """
    if n_pairs is not None:
        return float(random_pair_cosines(X, n_pairs, seed).mean())
    x = check_matrix(X, "X", min_rows=2).astype(np.float64)
    n = len(x)
    total = (x / _row_norms(x, "X")[:, None]).sum(axis=0)
    return float((total @ total - n) / (n * (n - 1)))


def isotropy_score(X: np.ndarray) -> float:
    """Partition-function isotropy I(W) = min_c Z(c) / max_c Z(c), with Z(c) = Σ_w exp(cᵀw).

    ``c`` runs over the d eigenvectors of XᵀX (Mu & Viswanath 2018, after Arora et al. 2016), taken
    with both signs so the answer does not depend on the sign an eigen-solver happens to return.
    For isotropic data Z(c) is the same in every direction and I ≈ 1; in a cone the direction of
    the common mean makes Z huge and I → 0. Computed in log space (log-sum-exp): exp(cᵀw) overflows
    float64 as soon as cᵀw > 709, which raw embeddings reach easily.
    """
    x = check_matrix(X, "X").astype(np.float64)
    _, eigenvectors = np.linalg.eigh(x.T @ x)
    log_z = []
    for start in range(0, x.shape[1], 64):  # 64 directions at a time keeps memory at n × 64
        projections = x @ eigenvectors[:, start : start + 64]  # cᵀw for each w (rows) and c (columns)
        log_z += [logsumexp(projections, axis=0), logsumexp(-projections, axis=0)]
    log_z = np.concatenate(log_z)
    return float(np.exp(log_z.min() - log_z.max()))


def explained_variance_top(X: np.ndarray, k: int = 1) -> float:
    """Share of the total variance carried by the top-``k`` principal components (k/d if isotropic)."""
    x = check_matrix(X, "X", min_rows=2).astype(np.float64)
    if not 1 <= k <= x.shape[1]:
        raise ValueError(f"k must be between 1 and {x.shape[1]}, got {k}")
    eigenvalues = np.linalg.eigvalsh(np.cov(x, rowvar=False))[::-1]
    return float(eigenvalues[:k].sum() / eigenvalues.sum())


def norm_stats(X: np.ndarray) -> dict[str, float]:
    """Mean, standard deviation, minimum and maximum of the rows' ℓ2 norms."""
    norms = np.linalg.norm(check_matrix(X, "X").astype(np.float64), axis=1)
    return {"mean": float(norms.mean()), "std": float(norms.std()), "min": float(norms.min()), "max": float(norms.max())}


def isotropy_report(X: np.ndarray, seed: int = 0) -> dict[str, float]:
    """All measures at once: mean_cos, isotropy, top1_var, top10_var, norm_mean, norm_std."""
    x = check_matrix(X, "X", min_rows=2)
    norms = norm_stats(x)
    return {
        "mean_cos": mean_random_cosine(x, seed=seed),
        "isotropy": isotropy_score(x),
        "top1_var": explained_variance_top(x, 1),
        "top10_var": explained_variance_top(x, min(10, x.shape[1])),
        "norm_mean": norms["mean"],
        "norm_std": norms["std"],
    }


def compare(named: dict[str, np.ndarray], seed: int = 0) -> pd.DataFrame:
    """One row of :func:`isotropy_report` per named embedding matrix: the "before / after" table."""
    if not named:
        raise ValueError("compare needs at least one named embedding matrix")
    return pd.DataFrame({name: isotropy_report(x, seed=seed) for name, x in named.items()}).T
