"""Input checks shared by every module: bad numbers fail loudly, early, with a clear message."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch


def check_matrix(
    x: npt.ArrayLike | torch.Tensor,
    name: str = "x",
    dim: int | None = None,
    min_rows: int = 1,
) -> np.ndarray:
    """Return ``x`` as a 2-D float array, or raise ``ValueError``.

    Rejects wrong rank, a wrong number of columns (when ``dim`` is given), too few rows,
    and any NaN or infinity — the three ways an embedding matrix silently goes wrong.
    """
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    x = np.asarray(x)
    if x.dtype.kind not in "fiu":
        raise ValueError(f"{name} must be numeric, got dtype {x.dtype}")
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-D (n, d) matrix, got shape {x.shape}")
    if dim is not None and x.shape[1] != dim:
        raise ValueError(f"{name} must have {dim} columns, got shape {x.shape}")
    if x.shape[0] < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} rows, got {x.shape[0]}")
    if not np.isfinite(x).all():
        bad = np.flatnonzero((~np.isfinite(x)).any(axis=1))
        raise ValueError(
            f"{name} contains NaN or infinity in {len(bad)} row(s), the first row {bad[0]}"
        )
    return x if x.dtype.kind == "f" else x.astype(np.float64)


def check_tensor(
    x: torch.Tensor, name: str = "x", dim: int | None = None
) -> torch.Tensor:
    """Torch twin of :func:`check_matrix` for code that stays on the GPU: shape and finiteness."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D (n, d) tensor, got shape {tuple(x.shape)}"
        )
    if dim is not None and x.shape[1] != dim:
        raise ValueError(f"{name} must have {dim} columns, got shape {tuple(x.shape)}")
    if not torch.isfinite(x).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return x
