"""Linear post-processors for sentence embeddings: whitening (Su et al. 2021) and all-but-the-top.

Both share one small interface, also used by :class:`bertflow_mini.postprocess.flow.FlowTransform`:
``.fit(X) -> self`` and ``.transform(X) -> np.ndarray``.

* **Whitening** maps the embeddings to zero mean and identity covariance with one matrix:
  ``x ↦ (x − μ) W``, ``W = U Λ^{-1/2}`` where ``Σ = U Λ Uᵀ``. It is the linear, closed-form
  cousin of BERT-flow: a flow learns *some* map to N(0, I); whitening is the exact linear one.
  Keeping only the first ``k`` columns of ``W`` ("whitening-256") also reduces the dimension.
* **All-but-the-top** (Mu & Viswanath 2018) only removes the mean and the few dominant
  directions that every embedding shares, leaving the rest untouched.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from bertflow_mini._checks import check_matrix


def _whitening_matrix(
    cov: np.ndarray, k: int | None, eps: float
) -> tuple[np.ndarray, int]:
    """``W = U[:, :k] · diag(λ[:k])^{-1/2}`` from the SVD of the covariance ``Σ = U Λ Uᵀ``, and how
    many eigenvalues were raised to the floor.

    Eigenvalues below ``eps × λ_max`` are raised to that floor: they belong to directions with
    (numerically) no variance — e.g. fewer samples than dimensions — and dividing by their square
    root would blow rounding noise up into unit-variance features.
    """
    dim = cov.shape[0]
    if k is not None and not 1 <= k <= dim:
        raise ValueError(
            f"k must be between 1 and the embedding dimension {dim}, got {k}"
        )
    # for a symmetric PSD matrix, SVD = eigendecomposition
    u, lam, _ = np.linalg.svd(cov, hermitian=True)
    if not lam[0] > 0:
        raise ValueError(
            "the data have no variance (every row the same): there is nothing to whiten"
        )
    floor = eps * lam[0]
    n_floored = int((lam < floor).sum())
    w = u / np.sqrt(np.maximum(lam, floor))
    return (w if k is None else w[:, :k]), n_floored


class Whitening:
    """``x ↦ (x − μ) W``: zero mean, identity covariance on the fitting data (optionally top-``k`` only)."""

    def __init__(self, k: int | None = None, eps: float = 1e-6):
        self.k = k
        self.eps = eps
        self.mean: np.ndarray | None = None
        self.W: np.ndarray | None = None
        # directions of (numerically) no variance, left near zero instead of rescaled
        self.n_floored: int | None = None

    def fit(self, X: np.ndarray) -> Whitening:
        x = check_matrix(X, "X", min_rows=2).astype(np.float64)
        self.mean = x.mean(axis=0)
        # np.cov of one column is a scalar
        cov = np.cov(x, rowvar=False).reshape(x.shape[1], x.shape[1])
        self.W, self.n_floored = _whitening_matrix(cov, self.k, self.eps)
        return self

    def fit_stream(self, batches: Iterable[np.ndarray]) -> Whitening:
        """Fit from an iterable of (n_i, d) batches, seen once each (see :class:`StreamingWhitening`)."""
        stream: StreamingWhitening | None = None
        for batch in batches:
            if stream is None:
                stream = StreamingWhitening(np.shape(batch)[-1])
            stream.partial_fit(batch)
        if stream is None:
            raise ValueError("fit_stream got no batches")
        fitted = stream.finalize(self.k, self.eps)
        self.mean, self.W, self.n_floored = fitted.mean, fitted.W, fitted.n_floored
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        if self.W is None or self.mean is None:
            raise RuntimeError("Whitening.transform called before fit")
        x = check_matrix(X, "X", dim=len(self.mean))
        out: np.ndarray = (x.astype(np.float64) - self.mean) @ self.W
        return out.astype(x.dtype, copy=False)

    def log_prob(self, X: np.ndarray) -> np.ndarray:
        """Each row's log-density (nats) under the fitted Gaussian, read as a linear flow:
        ``log N(z; 0, I) + log|det W|``. Floored directions keep the density finite where
        the covariance is singular (a LayerNorm hyperplane), at the price of a constant
        that depends on the floor."""
        if self.W is None or self.mean is None:
            raise RuntimeError("Whitening.log_prob called before fit")
        if self.k is not None:
            raise ValueError("log_prob needs the full-width whitening (k=None)")
        z: np.ndarray = (
            check_matrix(X, "X", dim=len(self.mean)).astype(np.float64) - self.mean
        ) @ self.W
        d = z.shape[1]
        log_prob: np.ndarray = (
            -0.5 * (z**2).sum(axis=1)
            - 0.5 * d * np.log(2 * np.pi)
            + np.linalg.slogdet(self.W)[1]
        )
        return log_prob


class StreamingWhitening:
    """Accumulate the statistics whitening needs from batches seen once, then :meth:`finalize`.

    Keeps ``n``, ``Σ(x − c)`` and ``Σ(x − c)(x − c)ᵀ`` in float64, with ``c`` the first batch's
    mean: the same sums of ``x`` and ``xxᵀ`` as the textbook formula, but shifted, so that the
    subtraction ``E[xxᵀ] − μμᵀ`` does not cancel catastrophically when the mean is large (it is,
    for raw BERT embeddings). Memory is O(d²) whatever the number of rows.
    """

    def __init__(self, dim: int):
        self.dim = dim
        self.n = 0
        self.shift: np.ndarray | None = None
        self.sum = np.zeros(dim)
        self.sum_outer = np.zeros((dim, dim))

    def partial_fit(self, batch: np.ndarray) -> StreamingWhitening:
        x = check_matrix(batch, "batch", dim=self.dim).astype(np.float64)
        if self.shift is None:
            self.shift = x.mean(axis=0)
        x = x - self.shift
        self.n += len(x)
        self.sum += x.sum(axis=0)
        self.sum_outer += x.T @ x
        return self

    def finalize(self, k: int | None = None, eps: float = 1e-6) -> Whitening:
        if self.n < 2 or self.shift is None:
            raise ValueError(
                f"need at least 2 rows to estimate a covariance, got {self.n}"
            )
        centred_mean = self.sum / self.n
        # Unbiased covariance, the same normalisation as np.cov in Whitening.fit.
        cov = (self.sum_outer - self.n * np.outer(centred_mean, centred_mean)) / (
            self.n - 1
        )
        whitening = Whitening(k, eps)
        whitening.mean = self.shift + centred_mean
        whitening.W, whitening.n_floored = _whitening_matrix(cov, k, eps)
        return whitening


class AllButTheTop:
    """Subtract the mean, then remove the projections on the top-``D`` principal directions.

    ``D`` defaults to ``dim // 100`` (at least 1), the rule of thumb of Mu & Viswanath (2018).
    """

    def __init__(self, n_components: int | None = None):
        self.n_components = n_components
        self.mean: np.ndarray | None = None
        self.directions: np.ndarray | None = None  # (dim, D), orthonormal columns

    def fit(self, X: np.ndarray) -> AllButTheTop:
        x = check_matrix(X, "X", min_rows=2).astype(np.float64)
        dim = x.shape[1]
        d = self.n_components if self.n_components is not None else max(1, dim // 100)
        if not 0 <= d < dim:
            raise ValueError(
                f"n_components must be between 0 and dim - 1 = {dim - 1}, got {d}"
            )
        self.mean = x.mean(axis=0)
        # The principal directions are the top eigenvectors of the covariance.
        u, _, _ = np.linalg.svd(np.cov(x, rowvar=False), hermitian=True)
        self.directions = u[:, :d]
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        if self.directions is None or self.mean is None:
            raise RuntimeError("AllButTheTop.transform called before fit")
        x = check_matrix(X, "X", dim=len(self.mean))
        centred = x.astype(np.float64) - self.mean
        out: np.ndarray = centred - (centred @ self.directions) @ self.directions.T
        return out.astype(x.dtype, copy=False)
