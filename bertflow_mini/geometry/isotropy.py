"""How isotropic is a set of embeddings? The numbers the chapters print before and after each transform.

Raw BERT sentence embeddings occupy a narrow cone: any two of them have a high cosine, and a few
directions carry most of the variance. Each measure below looks at that from one side:

* ``mean_random_cosine`` — the average cosine between two *unrelated* sentences (0 if isotropic);
* ``isotropy_score`` — Mu & Viswanath's partition-function ratio I(W) (1 if isotropic, → 0 in a cone);
  it is *not* scale-invariant (an isotropic cloud scaled up scores → 0), so ``normalise=True``
  first divides the rows by their root-mean-square norm;
* ``iso_score`` — IsoScore of Rudman et al. (2022), from the covariance spectrum only (1 if
  isotropic, 0 if one direction carries all variance); blind to a common mean by construction;
* ``explained_variance_top`` — the share of variance in the top principal components (k/d if isotropic);
* ``norm_stats`` — the spread of vector lengths.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from bertflow_mini._checks import check_matrix
from bertflow_mini.evaluation.vectors import cosine_scores, row_norms, unit_rows


def random_pair_cosines(
    X: np.ndarray, n_pairs: int = 10_000, seed: int = 0
) -> np.ndarray:
    """Cosine similarities of ``n_pairs`` random pairs of distinct rows (their histogram is the picture)."""
    x = check_matrix(X, "X", min_rows=2).astype(np.float64)
    if n_pairs < 1:
        raise ValueError(f"n_pairs must be >= 1, got {n_pairs}")
    # every row, not only the sampled ones: a zero row is an error wherever it sits
    row_norms(x, "X")
    rng = np.random.default_rng(seed)
    i = rng.integers(0, len(x), size=n_pairs)
    j = rng.integers(0, len(x) - 1, size=n_pairs)
    j = j + (j >= i)  # uniform over the n − 1 rows other than i
    return cosine_scores(x[i], x[j])


def mean_random_cosine(
    X: np.ndarray, n_pairs: int | None = 10_000, seed: int = 0
) -> float:
    """Mean cosine similarity of ``n_pairs`` random pairs of distinct rows (:func:`random_pair_cosines`).

    ``n_pairs=None`` gives the exact mean over *all* pairs i ≠ j, in O(n·d) instead of O(n²·d):
    with unit rows uᵢ, Σᵢ≠ⱼ uᵢ·uⱼ = ‖Σᵢ uᵢ‖² − n, so the mean is (‖Σᵢ uᵢ‖² − n) / (n(n − 1)).
    """
    if n_pairs is not None:
        return float(random_pair_cosines(X, n_pairs, seed).mean())
    x = check_matrix(X, "X", min_rows=2)
    n = len(x)
    total = unit_rows(x, "X").sum(axis=0)
    return float((total @ total - n) / (n * (n - 1)))


def rms_norm(X: np.ndarray) -> float:
    """Root-mean-square row norm √(mean ‖x‖²): the one number that sets the scale of a cloud."""
    x = check_matrix(X, "X").astype(np.float64)
    value = float(np.sqrt((x * x).sum(axis=1).mean()))
    if value == 0:
        raise ValueError("X is all zeros: it has no scale to normalise")
    return value


def isotropy_score(X: np.ndarray, normalise: bool = False) -> float:
    """Partition-function isotropy I(W) = min_c Z(c) / max_c Z(c), with Z(c) = Σ_w exp(cᵀw).

    ``c`` runs over the d eigenvectors of XᵀX (Mu & Viswanath 2018, after Arora et al. 2016), taken
    with both signs so the answer does not depend on the sign an eigen-solver happens to return.
    For isotropic data Z(c) is the same in every direction and I ≈ 1; in a cone the direction of
    the common mean makes Z huge and I → 0. Computed in log space (log-sum-exp): exp(cᵀw) overflows
    float64 as soon as cᵀw > 709, which raw embeddings reach easily.

    I(W) depends on the scale of W: for N(0, s²I) every log Z(c) is a log-sum-exp of n Gaussians of
    sd s, dominated by their extremes as s grows, so I falls by orders of magnitude when an isotropic
    cloud is merely scaled up (Chapter 2 prints it). ``normalise=True`` computes I(W / rms_norm(W)) instead: a global
    rescaling no longer changes it, and an isotropic cloud of any scale scores ≈ 1 (our choice, not
    Mu & Viswanath's, who used the raw vectors).
    """
    x = check_matrix(X, "X").astype(np.float64)
    if normalise:
        x = x / rms_norm(x)
    _, eigenvectors = np.linalg.eigh(x.T @ x)
    parts = []
    # 64 directions at a time keeps memory at n × 64
    for start in range(0, x.shape[1], 64):
        # cᵀw for each w (rows) and c (columns)
        projections = x @ eigenvectors[:, start : start + 64]
        parts += [logsumexp(projections, axis=0), logsumexp(-projections, axis=0)]
    log_z = np.concatenate(parts)
    return float(np.exp(log_z.min() - log_z.max()))


def iso_score(X: np.ndarray) -> float:
    """IsoScore (Rudman et al. 2022): how evenly the variance is spread over the d principal directions.

    With λ the eigenvalues of the covariance, normalised to λ̂ = √d · λ / ‖λ‖, the isotropy defect is
    δ = ‖λ̂ − 1‖ / √(2(d − √d)) ∈ [0, 1], and the score is ((d − δ²(d − √d))² − d) / (d(d − 1)):
    1 when every direction has the same variance, 0 when one direction has it all. It is
    scale-invariant and, since the covariance subtracts the mean, blind to a common offset.
    Same formula as the ``IsoScore`` package (2.0.1), in NumPy.
    """
    x = check_matrix(X, "X", min_rows=2).astype(np.float64)
    d = x.shape[1]
    if d < 2:
        raise ValueError("IsoScore needs at least 2 dimensions")
    lam = np.clip(
        np.linalg.eigvalsh(np.cov(x, rowvar=False, ddof=1).reshape(d, d)), 0.0, None
    )
    if lam.sum() == 0:
        raise ValueError("X has zero variance: IsoScore is undefined")
    lam_hat = np.sqrt(d) * lam / np.linalg.norm(lam)
    defect = np.linalg.norm(lam_hat - 1.0) / np.sqrt(2 * (d - np.sqrt(d)))
    return float(((d - defect**2 * (d - np.sqrt(d))) ** 2 - d) / (d * (d - 1)))


def isotropy_measures(X: np.ndarray, seed: int = 0) -> dict[str, float]:
    """The three numbers the book puts side by side for one cloud (see the module docstring).

    ``mean cos`` (0 if isotropic), ``log10 I(W)`` on the raw rows (0 if isotropic, depends on
    scale), ``I(W) normalised`` and ``IsoScore`` (both 1 if isotropic, both scale-free).
    """
    x = check_matrix(X, "X", min_rows=2)
    return {
        "mean cos": mean_random_cosine(x, seed=seed),
        "log10 I(W)": float(np.log10(max(isotropy_score(x), 1e-300))),
        "I(W) normalised": isotropy_score(x, normalise=True),
        "IsoScore": iso_score(x),
    }


def isotropy_table(named: dict[str, np.ndarray], seed: int = 0) -> pd.DataFrame:
    """One row of :func:`isotropy_measures` per named cloud."""
    if not named:
        raise ValueError("isotropy_table needs at least one named embedding matrix")
    return pd.DataFrame(
        {name: isotropy_measures(x, seed=seed) for name, x in named.items()}
    ).T


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
    return {
        "mean": float(norms.mean()),
        "std": float(norms.std()),
        "min": float(norms.min()),
        "max": float(norms.max()),
    }


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
    return pd.DataFrame(
        {name: isotropy_report(x, seed=seed) for name, x in named.items()}
    ).T


# ----------------------------------------------------------------------------- synthetic clouds
def power_spectrum(d: int, beta: float) -> np.ndarray:
    """Variances λ_i ∝ i^−β, i = 1..d, scaled to sum to d (β = 0: the identity's spectrum)."""
    if d < 1:
        raise ValueError(f"d must be positive, got {d}")
    lam = np.arange(1.0, d + 1) ** -float(beta)
    result: np.ndarray = lam * d / lam.sum()
    return result


def gaussian_cloud(
    n: int,
    d: int,
    mean_ratio: float = 0.0,
    beta: float = 0.0,
    scale: float = 1.0,
    seed: int = 0,
) -> np.ndarray:
    """``n`` draws of ``scale`` · N(μ, Σ) in R^d, with Σ = diag(:func:`power_spectrum`) and
    ‖μ‖ = mean_ratio · √d along a random direction (so ‖μ‖² / tr Σ = mean_ratio²)."""
    if n < 1 or scale <= 0:
        raise ValueError(f"need n >= 1 and scale > 0, got n={n}, scale={scale}")
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=d)
    direction /= np.linalg.norm(direction)
    lam = power_spectrum(d, beta)
    result: np.ndarray = scale * (
        mean_ratio * np.sqrt(d) * direction + rng.normal(size=(n, d)) * np.sqrt(lam)
    )
    return result


def predicted_cosine(
    d: int, mean_ratio: float = 0.0, beta: float = 0.0
) -> tuple[float, float]:
    """First-order mean and sd of the cosine of two independent draws of :func:`gaussian_cloud`.

    With D = ‖μ‖² + tr Σ and m = ‖μ‖² / D: mean ≈ m and
    sd ≈ √(tr Σ² (1 + m²) + 2 μᵀΣμ (1 − m)²) / D (the terms linear in the draws' deviations, their
    product and the fluctuations of their squared norms), taking μᵀΣμ ≈ ‖μ‖² (a random direction
    sees the average variance, tr Σ / d = 1).
    """
    lam = power_spectrum(d, beta)
    mu2 = mean_ratio**2 * d
    total = mu2 + lam.sum()
    m = mu2 / total
    sd = np.sqrt((lam**2).sum() * (1 + m**2) + 2 * mu2 * (1 - m) ** 2) / total
    return float(m), float(sd)


def singular_projection(
    X: np.ndarray, k: int = 2, fit_rows: int = 4000, seed: int = 0
) -> np.ndarray:
    """Coordinates of every row on the top-``k`` right singular vectors of the *uncentred* ``X``
    (the picture of Gao et al. 2019: a common offset shows up as a cloud far from the origin).

    The singular vectors are fitted on at most ``fit_rows`` random rows; each sign is fixed so the
    mean coordinate is ≥ 0 (an SVD's signs are arbitrary).
    """
    x = check_matrix(X, "X", min_rows=2).astype(np.float64)
    if not 1 <= k <= x.shape[1]:
        raise ValueError(f"k must be between 1 and {x.shape[1]}, got {k}")
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(x), size=min(len(x), fit_rows), replace=False)
    _, _, vt = np.linalg.svd(x[rows], full_matrices=False)
    P = x @ vt[:k].T
    result: np.ndarray = P * np.where(P.mean(axis=0) < 0, -1.0, 1.0)
    return result


def offset_share(X: np.ndarray) -> float:
    """‖μ‖² / mean ‖x‖²: the share of the cloud's energy in its common mean (0 when centred)."""
    x = check_matrix(X, "X").astype(np.float64)
    mu = x.mean(axis=0)
    return float(mu @ mu / (x * x).sum(axis=1).mean())
