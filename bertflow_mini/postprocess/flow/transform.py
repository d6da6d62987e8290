"""The post-processor interface shared with whitening: ``FlowTransform().fit(X).transform(X)``."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from bertflow_mini._checks import check_matrix
from bertflow_mini._threads import torch_threads
from bertflow_mini.postprocess.flow import fit as fitting
from bertflow_mini.postprocess.flow.glow import Glow


class FlowTransform:
    """``FlowTransform(**settings).fit(X).transform(X)``: numpy in, latent ``z`` out.

    Keywords are :class:`FlowConfig` fields (``batch_size`` is the *training* batch) plus
    ``config``, ``device`` and ``progress`` of :func:`fit_flow`; ``transform`` runs in eval mode
    without gradients, ``rows_per_chunk`` rows at a time.
    """

    rows_per_chunk = 4096

    def __init__(self, **fit_kwargs: Any) -> None:
        fitting.resolve_config(
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
        result = fitting.fit_flow(X, **self.fit_kwargs)
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
